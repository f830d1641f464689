"""The runtime against a faithful fake of a GPU box: a service backend that replays real
SGLang log captures (tests/data/logs, journalctl formats included) and records every call.

Why a fake here: these captures come from real GPUs (CUDA-graph OOM, KV-cache sizing failure
on a systemd box), which cannot run on this machine. The fake reproduces the one race that
matters: the service manager reports the exit (SGLang kills its own process tree, signal 9)
while the last log lines are still on their way. The controller must still classify the crash
from the fatal line, not as a bare "exited".
"""

from __future__ import annotations

import asyncio
import hashlib
import itertools
import json
from collections.abc import AsyncIterator, Callable
from dataclasses import replace
from pathlib import Path

from specconsole.controller.runtime import Controller
from specconsole.core.config.model import ServerConfig
from specconsole.core.logs.events import LoadStage
from specconsole.core.machine import events as ev
from specconsole.core.machine.state import ControllerState, Phase, TrialStatus
from specconsole.core.measure.metrics import RequestTimeline, compute_level_metrics
from specconsole.core.measure.result import BenchResult
from specconsole.core.ports import (
    BenchProgress,
    BenchSpec,
    Deployment,
    DeployPreview,
    LogRecord,
    PortForward,
    ServiceState,
    ServiceStatus,
)
from specconsole.session.recorder import SessionRecorder
from specconsole.session.store import Session
from tests.controller.helpers import plan
from tests.fixtures.sshd import free_port

LOGS = Path(__file__).resolve().parent.parent / "data" / "logs"


class ReplayTransport:
    """Only what the runtime asks of a transport when the backend is faked."""

    description = "replay"

    def __init__(self) -> None:
        self.port = free_port()  # nothing listens: HTTP calls fail fast, as to a dead box

    async def forward_local_port(
        self, remote_port: int, remote_host: str = "127.0.0.1"
    ) -> PortForward:
        return PortForward(self.port, remote_host, remote_port)

    async def close(self) -> None:
        return None


class ReplayBackend:
    """A service backend whose server 'prints' a recorded log, then serves or dies."""

    description = "replay backend"

    def __init__(self, log_file: str, *, dies: bool, exit_early_lines: int = 6) -> None:
        self.lines = (LOGS / log_file).read_text().splitlines()
        self.dies = dies
        self.exit_early_lines = exit_early_lines
        self.calls: list[str] = []
        self._state = ServiceState.INACTIVE
        self._hash: str | None = None
        self._started_hash: str | None = None

    async def preview(self, config: ServerConfig) -> DeployPreview:
        artifact = repr(config)
        return DeployPreview(artifact, hashlib.sha256(artifact.encode()).hexdigest(), None, "")

    async def deploy(self, config: ServerConfig) -> Deployment:
        self.calls.append("deploy")
        self._hash = (await self.preview(config)).artifact_hash
        return Deployment(self._hash, None, "replay")

    async def start(self) -> None:
        self.calls.append("start")
        self._state = ServiceState.RUNNING
        self._started_hash = self._hash  # a run keeps the artifact it was started from

    async def stop(self) -> None:
        self.calls.append("stop")
        if self._state is ServiceState.RUNNING:
            self._state = ServiceState.INACTIVE

    async def status(self) -> ServiceStatus:
        if self._state is ServiceState.FAILED:
            return ServiceStatus(ServiceState.FAILED, signal=9, result="signal")
        return ServiceStatus(self._state)

    async def logs(self, *, after: str | None = None) -> AsyncIterator[LogRecord]:
        for i, line in enumerate(self.lines):
            if self.dies and i == len(self.lines) - self.exit_early_lines:
                self._state = ServiceState.FAILED  # the manager knows before the log is read
                await asyncio.sleep(0.6)  # > one status poll: the exit is seen first
            await asyncio.sleep(0.002)
            yield LogRecord(line, cursor=str(i))
        if not self.dies:
            await asyncio.Event().wait()  # a serving server's log never ends

    async def rollback(self) -> Deployment | None:
        return None

    async def deployed_hash(self) -> str | None:
        return self._hash

    async def running_hash(self) -> str | None:
        return self._started_hash if self._state is ServiceState.RUNNING else None


class FakeRunner:
    """Returns a measured-looking result computed by core.measure.metrics from fixed timelines,
    reporting progress and each finished level's metrics as the real runners do."""

    async def run(
        self,
        spec: BenchSpec,
        base_url: str,
        *,
        on_progress: Callable[[BenchProgress], None] | None = None,
    ) -> BenchResult:
        levels = []
        for i, c in enumerate(spec.ladder):
            await asyncio.sleep(0.01)  # the level runs; the controller handles its events
            if on_progress is not None:
                on_progress(BenchProgress(i, c, c, 0, c, 0, 32 * c, 100.0 * c, 0.3))
            reqs = [
                RequestTimeline(
                    start=0.01 * r,
                    latency=0.3,
                    prompt_len=64,
                    output_len=32,
                    chunk_times=tuple(0.05 + 0.008 * k for k in range(32)),
                    chunk_tokens=(1,) * 32,
                )
                for r in range(c)
            ]
            levels.append(
                compute_level_metrics(
                    reqs, duration=0.3 + 0.01 * c, max_concurrency=c, accept_length=2.5
                )
            )
            if on_progress is not None:
                tick = BenchProgress(i, c, c, 0, c, 0, 32 * c, 100.0 * c, 0.31)
                on_progress(replace(tick, level_result=levels[-1]))
        return BenchResult(levels=tuple(levels), planned_levels=spec.ladder)


async def _run(
    backend: ReplayBackend,
    until: Callable[[ControllerState], bool],
    *,
    recorder: SessionRecorder | None = None,
) -> tuple[Controller, list[ev.Event]]:
    p = plan()
    controller = Controller(
        transport=ReplayTransport(),  # type: ignore[arg-type]
        backend=backend,
        runner=FakeRunner(),
        state=ControllerState(plan=p, policy=p.on_crash),
        recorder=recorder,
        http_timeout_s=1.0,
    )
    events: list[ev.Event] = []
    done = asyncio.Event()

    def on(state: ControllerState, event: ev.Event) -> None:
        events.append(event)
        if until(state):
            done.set()

    controller.subscribe(on)
    task = asyncio.ensure_future(controller.run())
    controller.send(ev.StartSweep())
    try:
        await asyncio.wait_for(done.wait(), 30)
    finally:
        controller.send(ev.Quit())
        await asyncio.wait_for(task, 10)
    return controller, events


async def test_replayed_startup_loads_and_benchmarks() -> None:
    backend = ReplayBackend("sglang_latest_eagle3_startup.log", dies=False)
    controller, events = await _run(backend, lambda s: len(s.trials) == 1)
    record = controller.state.trials[0]
    assert record.status is TrialStatus.OK, record
    assert record.capacity == 423846 and record.max_running_requests == 64
    stages = [e.stage for e in events if isinstance(e, ev.LoadStageSeen)]
    assert stages == [LoadStage.WEIGHTS, LoadStage.KV_CACHE, LoadStage.CUDA_GRAPH, LoadStage.WARMUP]
    assert any(isinstance(e, ev.ServerReady) and e.via == "log" for e in events)
    # /server_info and /flush_cache are unreachable: warnings, not failures
    assert [lv.concurrency for lv in record.levels] == [1, 4]
    assert record.accept_length == 2.5
    assert backend.calls[:2] == ["deploy", "start"]
    logged = [line for e in events if isinstance(e, ev.LogLines) for line in e.lines]
    assert logged == backend.lines[: len(logged)]
    assert "The server is fired up and ready to roll!" in logged[-1] or any(
        "ready to roll" in line for line in logged
    )


async def test_exit_reported_before_the_fatal_line_is_read() -> None:
    backend = ReplayBackend("journal_kv_fatal.short.log", dies=True)
    controller, _events = await _run(backend, lambda s: s.phase is Phase.AWAITING_DECISION)
    record = controller.state.trials[0]
    assert record.status is TrialStatus.CRASHED
    assert record.crash is not None
    assert record.crash.cause == "kv_cache_no_memory", record.crash
    assert "Not enough memory" in record.crash.message
    assert record.crash.fixes and record.crash.excerpt
    assert record.crash.signal == 9  # the exit status is kept too
    assert "stop" in backend.calls  # no restart loop


async def test_cuda_graph_capture_failure_in_the_journal() -> None:
    backend = ReplayBackend("journal_cuda_graph_fatal.short.log", dies=True, exit_early_lines=2)
    controller, _events = await _run(backend, lambda s: s.phase is Phase.AWAITING_DECISION)
    crash = controller.state.trials[0].crash
    assert crash is not None and crash.cause == "cuda_graph_capture_failed", crash
    assert crash.load_stage is LoadStage.CUDA_GRAPH
    assert any("cuda-graph" in fix or "cuda_graph" in fix for fix in crash.fixes), crash.fixes


async def test_not_enough_memory_after_the_weights_is_a_kv_cache_crash() -> None:
    """A recorded systemd journal: the weights finished, then sizing the KV pool failed."""
    backend = ReplayBackend("journal_kv_fatal.short.log", dies=True)
    controller, events = await _run(backend, lambda s: s.phase is Phase.AWAITING_DECISION)
    crash = controller.state.trials[0].crash
    assert crash is not None and crash.cause == "kv_cache_no_memory", crash
    assert crash.phase is Phase.LOADING
    assert crash.load_stage is LoadStage.KV_CACHE, crash
    stages = [e.stage for e in events if isinstance(e, ev.LoadStageSeen)]
    assert stages == [LoadStage.WEIGHTS, LoadStage.KV_CACHE]


async def test_simulator_steps_10_crash_reads_as_the_kv_cache_stage() -> None:
    """The demo's crash, with the simulator's own log text: target and draft weights load,
    then ``Not enough memory`` while sizing the KV cache."""
    from tests.fixtures.sim import async_running_simulator

    async with async_running_simulator(
        "--speculative-num-steps",
        "10",
        "--speculative-num-draft-tokens",
        "11",
        load_seconds=0.2,
        wait_ready=False,
    ) as sim:
        await asyncio.to_thread(sim.wait_exit, 20.0)
        text = sim.log_text()
    assert "Not enough memory" in text and text.count("Load weight end") >= 2
    backend = ReplayBackend("journal_kv_fatal.short.log", dies=True)
    backend.lines = text.splitlines()
    controller, events = await _run(backend, lambda s: s.phase is Phase.AWAITING_DECISION)
    crash = controller.state.trials[0].crash
    assert crash is not None and crash.cause == "kv_cache_no_memory", crash
    assert crash.load_stage is LoadStage.KV_CACHE, crash
    stages = [e.stage for e in events if isinstance(e, ev.LoadStageSeen)]
    # target weights, (their end), draft weights, (their end): the KV stage comes last
    assert stages == [
        LoadStage.WEIGHTS,
        LoadStage.KV_CACHE,
        LoadStage.WEIGHTS,
        LoadStage.KV_CACHE,
    ], stages
    phases = controller.state.trials[0].phases
    assert [p.detail for p in phases if p.phase is Phase.LOADING][-1] == "kv_cache"


async def test_recorded_phases_are_complete_ordered_and_non_negative(tmp_path: Path) -> None:
    """trials.jsonl: every phase (``recording`` included) has an end, no duration is
    negative, and each phase starts where the previous one ended."""
    session = Session.create(tmp_path, plan())
    for log_file, dies in (
        ("sglang_latest_eagle3_startup.log", False),  # loads and is benchmarked
        ("journal_kv_fatal.short.log", True),  # crashes while loading
    ):
        recorder = SessionRecorder(session)
        await _run(ReplayBackend(log_file, dies=dies), lambda s: bool(s.trials), recorder=recorder)
        recorder.close()
    lines = (session.path / "trials.jsonl").read_text().splitlines()
    assert len(lines) == 2
    for line in lines:
        record = json.loads(line)
        phases = record["phases"]
        assert [p["phase"] for p in phases][-1] == "recording"
        for p in phases:
            assert p["ended_at"] is not None, (record["status"], p)
            assert p["ended_at"] - p["started_at"] >= 0, (record["status"], p)
        for before, after in itertools.pairwise(phases):
            assert after["started_at"] >= before["ended_at"], (before, after)
        assert phases[0]["started_at"] >= record["started_at"]
        assert phases[-1]["started_at"] == record["finished_at"]


async def test_each_level_reaches_the_state_before_the_ladder_ends() -> None:
    """The runner's level ticks become BenchLevelFinished: the trial holds level c=1 while
    c=4 still runs, and the ladder's result agrees with what was shown live."""
    shown: list[tuple[int, ...]] = []

    def until(state: ControllerState) -> bool:
        if state.phase is Phase.BENCHMARKING and state.trial is not None:
            shown.append(tuple(lv.concurrency for lv in state.trial.levels))
        return bool(state.trials)

    backend = ReplayBackend("sglang_latest_eagle3_startup.log", dies=False)
    controller, events = await _run(backend, until)
    live = [e for e in events if isinstance(e, ev.BenchLevelFinished)]
    assert [(e.level_index, e.level.concurrency) for e in live] == [(0, 1), (1, 4)]
    kinds = [type(e) for e in events]
    assert kinds.index(ev.BenchLevelFinished) < kinds.index(ev.BenchFinished)
    assert (1,) in shown, shown  # c=1's figures, with c=4 not done yet
    record = controller.state.trials[0]
    assert tuple(e.level for e in live) == record.levels
    assert record.levels[0].ttft_p50_ms is not None
