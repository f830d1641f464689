"""End-to-end sweeps over the real test sshd, with the plain-process backend and the simulator.

Nothing is faked here: the controller reaches "the box" (this machine) through a real OpenSSH
server (tests/fixtures/sshd.py), the process backend starts ``python -m specconsole.sim`` as a
detached process, logs are followed with ``tail -F`` over SSH, HTTP and the benchmark go through
an SSH port forward. Load time is compressed to half a second and outputs are short.

* ``test_seed_sweep_headless``: the seed plan (steps 1, 2, 3, 4, 5, 10 at topk 1) runs to
  completion; the crash at 10 is detected within 2 s of the simulator writing its fatal line
  (measured against a poller of the run's log file); the boundary strategy then finds the
  largest value that loads; the report has the seed table's shape.
* ``test_kill_and_resume``: the headless CLI is SIGKILLed mid-benchmark; ``specconsole resume``
  finishes the sweep, keeps every recorded trial and reattaches to the server that is still up.
"""

from __future__ import annotations

import asyncio
import io
import json
import os
import signal
import subprocess
import sys
import threading
import time
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest

from specconsole.core.machine.state import Phase, TrialKind, TrialStatus
from specconsole.core.plans.parse import loads_plan
from specconsole.core.plans.placeholders import resolve_placeholders
from specconsole.core.plans.profile import ServiceProfile
from specconsole.core.search.strategy import boundary_result
from specconsole.headless.sweep import run_headless
from specconsole.session.reports.report import render
from specconsole.session.store import Session
from specconsole.sim.forecast import predict
from tests.fixtures.plans import sim_plan_text, ssh_host
from tests.fixtures.sshd import SshdServer, free_port

pytestmark = [pytest.mark.ssh, pytest.mark.slow]

OUTPUT_LEN = 48
"""The seed sweep's output length (tokens per request)."""

FATAL_TEXT = "Not enough memory"


def plan_text(
    sshd: SshdServer,
    run_dir: Path,
    *,
    steps: list[int],
    ladder: list[int],
    requests: int,
    output_len: int = 32,
    warmup: int = 0,
    on_crash: str = "auto",
    strategy: str = "boundary",
) -> str:
    host = ssh_host(sshd)
    sweep = f"""[sweep]
strategy = "{strategy}"
on_crash = "{on_crash}"
load_timeout = 60
max_trials = 12

[sweep.axes]
speculative_num_steps = {steps}
"""
    bench = f"""[bench]
ladder = {ladder}
input_len = 128
output_len = {output_len}
requests_per_level = {requests}
warmup_requests = {warmup}
"""
    return sim_plan_text(
        run_dir,
        host=host,
        port=free_port(),  # "auto" is for the local transport; over SSH the port is given
        extra_args=["--sim-load-seconds", "0.5"],
        sweep=sweep,
        bench=bench,
        name="e2e",
    )


class FatalLinePoller:
    """Notes when the simulator's fatal line lands in a run log (polls every 10 ms)."""

    def __init__(self, run_dir: Path) -> None:
        self.run_dir = run_dir
        self.seen_at: float | None = None
        self._stop = threading.Event()
        self._offsets: dict[Path, int] = {}
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def __enter__(self) -> FatalLinePoller:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(5)

    def _loop(self) -> None:
        deadline = time.monotonic() + 280
        while not self._stop.is_set() and self.seen_at is None and time.monotonic() < deadline:
            for log in self.run_dir.glob("**/log"):
                try:
                    with open(log, "rb") as fh:
                        fh.seek(self._offsets.get(log, 0))
                        data = fh.read()
                except OSError:
                    continue
                cut = data.rfind(b"\n") + 1
                self._offsets[log] = self._offsets.get(log, 0) + cut
                if FATAL_TEXT.encode() in data[:cut]:
                    self.seen_at = time.time()
                    return
            time.sleep(0.01)


async def _stop_server(run_dir: Path) -> None:
    """Stop whatever simulator the sweep left serving (by the backend's PID file)."""
    from specconsole.remote.process import ProcessBackend
    from specconsole.remote.transport.local import LocalTransport

    backend = ProcessBackend(LocalTransport(), ServiceProfile(run_dir=str(run_dir), stop_timeout=5))
    await backend.stop()


@pytest.fixture
def run_dir(tmp_path: Path) -> Iterator[Path]:
    path = tmp_path / "run"
    yield path
    asyncio.run(_stop_server(path))


async def test_seed_sweep_headless(sshd: SshdServer, tmp_path: Path, run_dir: Path) -> None:
    # 48-token outputs: at 32 the last decode step's rounding favours steps 4 (the model
    # predicts 4 ahead of 3 by 1.5 % since the profile's recalibration, bfb1e33); at 48 the
    # seed table's shape holds at this ladder too (steps 3 ahead of 4 by 6 %; checked below).
    # One warm-up request per slot opens the level's 16 keep-alive connections before it is
    # measured: without it the measured wave's requests reach the box over 65-120 ms of new
    # connections through the SSH forward (more on a loaded machine), the server prefills
    # them in 2-4 batches as they come (as SGLang does) and the wave ends up to 15 % later than
    # the model's, by an amount that differs from trial to trial.
    text = plan_text(
        sshd,
        run_dir,
        steps=[1, 2, 3, 4, 5, 10],
        ladder=[1, 16],
        requests=16,
        output_len=OUTPUT_LEN,
        warmup=1,
    )
    plan = resolve_placeholders(loads_plan(text), {"python": sys.executable})
    session = Session.create(tmp_path / "sessions", replace_source(plan, text))
    out = io.StringIO()
    detected: list[float] = []

    # observe the controller's transitions through the session recorder's writes: the
    # CRASHED phase is published before anything is recorded, so hook the printer output
    class Tap(io.StringIO):
        def write(self, s: str) -> int:
            if "CRASH detected" in s and not detected:
                detected.append(time.time())
            return super().write(s)

    out = Tap()
    with FatalLinePoller(run_dir) as poller:
        code = await asyncio.wait_for(run_headless(plan, session, out=out), 280)
    log_text = out.getvalue()
    assert code == 0, log_text

    trials = session.load_trials()
    by_steps = {t.config.speculative_num_steps: t for t in trials}
    assert [t.config.speculative_num_steps for t in trials[:6]] == [1, 2, 3, 4, 5, 10]
    for s in (1, 2, 3, 4, 5):
        assert by_steps[s].status is TrialStatus.OK, by_steps[s]
        assert by_steps[s].capacity and by_steps[s].levels and by_steps[s].argv
    crashed = by_steps[10]
    assert crashed.status is TrialStatus.CRASHED
    assert crashed.crash is not None and crashed.crash.cause == "kv_cache_no_memory"
    assert crashed.crash.phase is Phase.LOADING
    assert crashed.crash.fixes
    # the capacity predictor flagged it before the load was spent
    assert crashed.predicted is not None and not crashed.predicted.feasible

    # crash detection latency, measured from the moment the line hit the log file
    assert poller.seen_at is not None and detected, log_text
    latency = detected[0] - poller.seen_at
    print(f"crash detected {latency:.3f} s after the fatal line was written")
    assert latency < 2.0

    # the boundary strategy bisected 5..10
    assert boundary_result(plan, trials) == (9, 10), [
        (t.config.speculative_num_steps, t.status.value) for t in trials
    ]
    assert {7, 8, 9} <= set(by_steps)
    assert "the largest value that loads is 9 (10 fails)" in log_text

    # the report reproduces the seed table's shape
    single = {s: by_steps[s].single_request_tok_s or 0.0 for s in (1, 2, 3, 4, 5)}
    assert single[1] < single[2] < single[3] < single[4], single
    assert max(single, key=lambda s: single[s]) in (4, 5), single
    peak = {
        s: by_steps[s].peak_aggregate_tok_s or 0.0
        for s in by_steps
        if by_steps[s].status is TrialStatus.OK
    }
    print(f"peak aggregate tok/s by steps: { {s: round(v) for s, v in sorted(peak.items())} }")
    # aggregate rises to a peak at steps 3 and falls after it. The simulator's model predicts
    # steps 3 ahead of 4 by 6 % at this ladder (the premise, checked first); on 2 shared cores
    # one 16-request wave moves by a few percent between runs, so allow steps 4 to tie within 3%.
    predicted = {
        s: predict(by_steps[s].config, 16, 128, OUTPUT_LEN).aggregate_tok_s for s in (3, 4, 5)
    }
    assert predicted[3] >= 1.05 * max(predicted[4], predicted[5]), predicted
    assert peak[3] >= 0.97 * max(peak.values()), peak
    assert peak[1] < peak[2] < peak[3], peak
    assert peak[3] > peak[5] > peak[7] > peak[8] > peak[9], peak
    report = render(trials, plan, "md")
    assert "| trial | config | single-request tok/s | peak aggregate tok/s | capacity |" in report
    assert "crashed (kv_cache_no_memory" in report and "```" in report
    csv_lines = render(trials, plan, "csv").splitlines()
    assert len(csv_lines) == 1 + len(trials)
    doc = json.loads(render(trials, plan, "json"))
    assert doc["findings"] == [
        "speculative_num_steps: the largest value that loads is 9 (10 fails)"
    ]

    # the session folder
    meta = tomllib.loads((session.path / "session.toml").read_text())
    assert meta["session"]["status"] == "done" and meta["session"]["trials"] == len(trials)
    assert FATAL_TEXT in (session.path / crashed.log_file).read_text()  # type: ignore[operator]
    raw = [json.loads(line) for line in session.trials_path.read_text().splitlines()]
    assert raw[0]["bench"]["levels"][0]["max_concurrency"] == 1  # bench_serving records kept


def replace_source(plan, text):  # type: ignore[no-untyped-def]
    from dataclasses import replace

    return replace(plan, source=text)


def _cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "specconsole", *args]


def test_kill_and_resume(sshd: SshdServer, tmp_path: Path, run_dir: Path) -> None:
    plan_path = tmp_path / "plan.toml"
    plan_path.write_text(
        plan_text(sshd, run_dir, steps=[1, 2, 3], ladder=[1, 4], requests=8, strategy="grid")
    )
    sessions = tmp_path / "sessions"
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen(
        _cli("sweep", str(plan_path), "--headless", "--session", str(sessions)),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
    )
    seen: list[str] = []
    try:
        assert proc.stdout is not None
        deadline = time.monotonic() + 120
        killed = False
        while time.monotonic() < deadline:
            line = proc.stdout.readline()
            if not line:
                break
            seen.append(line)
            if "trial 2/3" in line and "benchmarking" in line:
                time.sleep(0.3)  # mid-ladder
                os.kill(proc.pid, signal.SIGKILL)
                killed = True
                break
        assert killed, "".join(seen)
        proc.wait(10)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
    (session_dir,) = list(sessions.iterdir())
    before = session_dir.joinpath("trials.jsonl").read_text().splitlines()
    assert len(before) == 1 and json.loads(before[0])["status"] == "ok"

    resumed = subprocess.run(
        _cli("resume", str(session_dir)),
        capture_output=True,
        text=True,
        timeout=180,
        env=env,
    )
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    after = session_dir.joinpath("trials.jsonl").read_text().splitlines()
    assert after[0] == before[0]  # nothing recorded was lost or rewritten
    trials = Session.open(session_dir).load_trials()
    assert [t.config.speculative_num_steps for t in trials] == [1, 2, 3]
    assert all(t.status is TrialStatus.OK for t in trials)
    # the server with steps=2 was still up: resume reattached instead of restarting it
    assert trials[1].kind is TrialKind.REATTACH, resumed.stdout
    assert "reattached" in resumed.stdout

    report = subprocess.run(
        _cli("report", str(session_dir), "--format", "csv"),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert report.returncode == 0 and len(report.stdout.splitlines()) == 4
    listing = subprocess.run(
        _cli("sessions", "--dir", str(sessions)), capture_output=True, text=True, timeout=60
    )
    assert session_dir.name in listing.stdout and "3 trials" in listing.stdout
