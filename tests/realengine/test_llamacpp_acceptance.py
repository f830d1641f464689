"""Acceptance per level from a real llama-server's own counters, exactly.

The load generator runs a ladder against the real server with a client that keeps every
``/metrics`` answer it got; the test then recomputes each level's figures from those raw
answers with its own parser — first answer of the level before, last after — and requires
the recorded figures to be those, to the token: drafts, draft tokens, accepted, accepted per
position, the acceptance length (1 + accepted / drafts) and rate, and the output tokens, which
must also be the load generator's own count of the tokens it received. The same plan through
the remote runner (the bundled stdlib script, as on a box without specconsole) records the
same figures.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections import defaultdict

import pytest

from specconsole.bench.ladder import StreamClient
from specconsole.bench.ladder_run import LadderRun
from specconsole.bench.loadgen import plan_for
from specconsole.bench.remote_runner import build_script
from specconsole.bench.wire.rawhttp import RawStreamClient
from specconsole.core.engine.registry import get_engine
from specconsole.core.ports import BenchApi, BenchSpec
from tests.fixtures.llamacpp import LlamaCppBuild, ServerFactory

pytestmark = [pytest.mark.llamacpp, pytest.mark.slow]

COUNTERS = get_engine("llamacpp").endpoints.spec_counters
SAMPLE = re.compile(r'^(llamacpp:[a-z_]+)(?:\{position="(\d+)"\})? ([0-9.e+-]+)$', re.MULTILINE)


def read(text: str) -> dict[tuple[str, str], float]:
    """The test's own reading of a Prometheus answer: (name, position) -> value."""
    return {(name, pos): float(value) for name, pos, value in SAMPLE.findall(text)}


def spec(api: BenchApi) -> BenchSpec:
    return BenchSpec(
        ladder=(1, 2),
        requests_per_level=3,
        warmup_requests=1,
        input_len=32,
        output_len=16,
        api=api,
        spec_counters=COUNTERS,
    )


@pytest.mark.timeout(300)
@pytest.mark.parametrize("api", [BenchApi.CHAT, BenchApi.COMPLETIONS])
async def test_recorded_acceptance_is_the_counters_deltas_exactly(
    llama_server: ServerFactory, llamacpp_build: LlamaCppBuild, api: BenchApi
) -> None:
    draft = str(llamacpp_build.draft("req_Q4_0"))
    server = llama_server(
        "-md", draft, "--spec-type", "draft-simple", "--spec-draft-n-max", "4",
        "--parallel", "2", name=f"acceptance-{api.value}",
    )  # fmt: skip
    answers: dict[int, list[str]] = defaultdict(list)
    plan = plan_for(spec(api))

    class Keeping(RawStreamClient):
        """The stdlib client, keeping every text answer of its level."""

        async def get_text(self, path: str) -> str:
            text = await super().get_text(path)
            answers[self.level].append(text)
            return text

    def factory(concurrency: int) -> StreamClient:
        client = Keeping(server.url, concurrency, timeout_s=plan.request_timeout_s)
        client.level = concurrency
        return client

    result = await LadderRun(plan, factory).run()
    assert result.error is None and len(result.levels) == 2
    for level in result.levels:
        got = level.counters
        assert got is not None, level
        texts = answers[level.max_concurrency]
        before, after = read(texts[0]), read(texts[-1])

        def delta(name: str, position: str = "", a: dict = after, b: dict = before) -> int:
            return round(a.get((name, position), 0.0) - b.get((name, position), 0.0))

        assert got.drafts == delta(COUNTERS.drafts) > 0
        assert got.draft_tokens == delta(COUNTERS.draft_tokens)
        assert got.accepted == delta(COUNTERS.accepted)
        positions = sorted({int(p) for (n, p) in after if n == COUNTERS.per_position and p})
        assert got.per_position == tuple(
            delta(COUNTERS.per_position, str(k)) for k in range(max(positions) + 1)
        )
        assert sum(got.per_position) == got.accepted
        assert got.acceptance_length == 1 + got.accepted / got.drafts
        assert got.acceptance_rate == got.accepted / got.draft_tokens
        # the tokens counted exactly as the server counts them
        assert got.output_tokens == delta(COUNTERS.output_tokens) == level.total_output_tokens
        assert level.total_output_tokens == level.completed * 16


@pytest.mark.timeout(300)
def test_the_remote_runner_records_the_same_figures(
    llama_server: ServerFactory, llamacpp_build: LlamaCppBuild
) -> None:
    draft = str(llamacpp_build.draft("req_Q4_0"))
    server = llama_server(
        "-md", draft, "--spec-type", "draft-simple", "--parallel", "2", name="remote-runner"
    )
    script = build_script(plan_for(spec(BenchApi.CHAT)), server.url)
    done = subprocess.run(
        [sys.executable, "-I", "-S", "-"], input=script, capture_output=True, text=True,
        timeout=240, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.splitlines()[-1])["result"]
    for level in result["levels"]:
        counters = level["spec_counters"]
        assert counters["drafts"] > 0 and counters["output_tokens"] == level["total_output_tokens"]
        assert sum(counters["per_position"]) == counters["accepted"]


@pytest.mark.timeout(300)
def test_specconsole_bench_engine_reads_the_counters(
    llama_server: ServerFactory, llamacpp_build: LlamaCppBuild
) -> None:
    from tests.realengine.box import cli

    draft = str(llamacpp_build.draft("req_Q4_0"))
    server = llama_server("-md", draft, "--spec-type", "draft-simple", name="bench-cli")
    code, out = cli(
        "bench", server.url, "--engine", "llamacpp", "--ladder", "1", "--requests", "2",
        "--output-len", "16", "--input-len", "32", "--json",
    )  # fmt: skip
    assert code == 0, out
    (record,) = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    assert record["backend"] == "sglang-oai-chat"  # --engine llamacpp: its first API, chat
    counters = record["spec_counters"]
    assert counters["drafts"] > 0 and counters["output_tokens"] == record["total_output_tokens"]
