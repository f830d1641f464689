"""A recording controller and realistic state snapshots for the console's tests.

The console only needs ``state``, ``subscribe`` and ``send`` from a controller. This double
records every intent it receives and publishes whatever real ``ControllerState`` snapshots
(and real events, such as ``LogLines``) the test hands it, exactly as the runtime does. The
snapshot builders use the core's own dataclasses with the seed sweep's numbers, so tests
render what a user would see.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from specconsole.core.config.model import ServerConfig
from specconsole.core.logs.events import LoadStage
from specconsole.core.machine.events import Event, Intent, LogLines
from specconsole.core.machine.results import combine_runs
from specconsole.core.machine.state import (
    BoxLane,
    CapacityPrediction,
    ConnectionState,
    ControllerState,
    CrashInfo,
    Deployed,
    LevelProgress,
    LevelSummary,
    PendingDecision,
    Phase,
    PoolView,
    ResumeChoice,
    TrialRecord,
    TrialStatus,
)
from specconsole.core.plans.plan import SweepPlan
from specconsole.engines.sglang.keys import SpecAlgorithm

Subscriber = Callable[[ControllerState, Event | None], None]

NOW = 1_780_000_000.0
"""The fixed wall clock snapshot tests render at."""


class RecordingController:
    """Publishes test-supplied snapshots; records intents."""

    def __init__(self, state: ControllerState | None = None) -> None:
        self._state = state or ControllerState()
        self._subscribers: list[Subscriber] = []
        self.intents: list[Intent] = []

    @property
    def state(self) -> ControllerState:
        return self._state

    def subscribe(self, callback: Subscriber) -> Callable[[], None]:
        self._subscribers.append(callback)
        return lambda: self._subscribers.remove(callback)

    def send(self, intent: Event) -> None:
        assert isinstance(intent, Intent), f"the UI sent a non-intent {intent!r}"
        self.intents.append(intent)

    def publish(self, state: ControllerState, event: Event | None = None) -> None:
        self._state = state
        for callback in list(self._subscribers):
            callback(state, event)

    def log(self, *lines: str) -> None:
        """Publish log lines the way the runtime does (a ``LogLines`` outcome)."""
        self.publish(self._state, LogLines(lines=tuple(lines), at=NOW))


BASE = ServerConfig(
    model_path="Qwen/Qwen3.5-122B-A10B",
    speculative_algorithm=SpecAlgorithm.EAGLE3,
    speculative_draft_model_path="lmsys/Qwen3.5-122B-A10B-EAGLE3",
    speculative_num_steps=1,
    speculative_eagle_topk=1,
    speculative_num_draft_tokens=2,
    mem_fraction_static=0.85,
    cuda_graph_max_bs=64,
    max_running_requests=64,
    tp_size=4,
)

LABELS = (("host", "gpu-box"), ("engine", "sglang"), ("service", "systemd sglang.service"))

LADDER = (1, 4, 16, 32, 64)

# Seed-shaped numbers: single-request rises with steps, aggregate peaks at steps=3.
_SINGLE = {1: 118.0, 2: 141.0, 3: 156.0, 4: 163.0, 5: 166.0}
_PEAK = {1: 2380.0, 2: 2610.0, 3: 2720.0, 4: 2650.0, 5: 2540.0}
_CAPACITY = {1: 412_000, 2: 398_000, 3: 384_000, 4: 370_000, 5: 356_000}


def steps_config(steps: int) -> ServerConfig:
    return dataclasses.replace(
        BASE, speculative_num_steps=steps, speculative_num_draft_tokens=steps + 1
    )


def levels_for(steps: int) -> tuple[LevelSummary, ...]:
    single, peak = _SINGLE[steps], _PEAK[steps]
    out = []
    for c in LADDER:
        if c < 32:
            agg = min(peak, single * c * (0.97 ** (c - 1)))
        else:
            agg = peak * (1.0 if c == 32 else 0.96)
        out.append(
            LevelSummary(
                concurrency=c,
                output_tok_s=round(agg, 1),
                per_request_tok_s=round(agg / c, 1),
                completed=max(8, 4 * c),
                ttft_p50_ms=40.0 + 3 * c,
                accept_length=1.0 + 0.55 * steps,
            )
        )
    return tuple(out)


def finished_trial(steps: int) -> TrialRecord:
    index = steps - 1
    return TrialRecord(
        index=index,
        config=steps_config(steps),
        status=TrialStatus.OK,
        started_at=NOW - 1000 + 150 * index,
        finished_at=NOW - 1000 + 150 * index + 140,
        capacity=_CAPACITY[steps],
        levels=levels_for(steps),
        accept_length=round(1.0 + 0.55 * steps, 2),
    )


def idle_state() -> ControllerState:
    return ControllerState(
        phase=Phase.IDLE,
        phase_since=NOW - 5,
        connection=ConnectionState.CONNECTED,
        deployed=Deployed(config=steps_config(3), artifact_hash="ab12", at=NOW - 600, serving=True),
        labels=LABELS,
    )


def _sweeping(done: int) -> tuple[TrialRecord, ...]:
    return tuple(finished_trial(s) for s in range(1, done + 1))


def loading_state() -> ControllerState:
    trial = TrialRecord(index=3, config=steps_config(4), started_at=NOW - 75)
    return ControllerState(
        phase=Phase.LOADING,
        phase_since=NOW - 72,
        load_stage=LoadStage.KV_CACHE,
        load_stage_since=NOW - 9,
        trial=trial,
        trials=_sweeping(3),
        connection=ConnectionState.CONNECTED,
        deployed=Deployed(config=steps_config(4), artifact_hash="cd34", at=NOW - 74),
        sweep_active=True,
        labels=LABELS,
    )


def benchmarking_state() -> ControllerState:
    trial = TrialRecord(index=3, config=steps_config(4), started_at=NOW - 160, capacity=370_000)
    results = levels_for(4)
    bench = (
        LevelProgress(concurrency=1, total=8, completed=8, done=True, result=results[0]),
        LevelProgress(concurrency=4, total=16, completed=16, done=True, result=results[1]),
        LevelProgress(
            concurrency=16, total=64, completed=23, running=16, current_tok_s=1843.0, elapsed_s=12.0
        ),
        LevelProgress(concurrency=32, total=128),
        LevelProgress(concurrency=64, total=256),
    )
    return ControllerState(
        phase=Phase.BENCHMARKING,
        phase_since=NOW - 41,
        trial=trial,
        trials=_sweeping(3),
        bench=bench,
        connection=ConnectionState.CONNECTED,
        deployed=Deployed(config=steps_config(4), artifact_hash="cd34", at=NOW - 160, serving=True),
        sweep_active=True,
        labels=LABELS,
    )


def repeated_bench_state() -> ControllerState:
    """``[bench] repeats = 3``, run 2 at c=16: c=1 and c=4 combine two runs (mean ± 95 %
    CI), c=16 runs again with its run-1 figure kept, c=32 and c=64 have run 1's."""
    state = benchmarking_state()
    first = levels_for(4)
    second = tuple(
        dataclasses.replace(
            lv, output_tok_s=lv.output_tok_s * 1.02, per_request_tok_s=lv.per_request_tok_s * 1.02
        )
        for lv in first
    )
    bench = []
    for i, lv in enumerate(first):
        runs = (lv, second[i]) if i < 2 else (lv,)
        bench.append(
            LevelProgress(
                concurrency=lv.concurrency,
                total=lv.completed,
                completed=lv.completed if i != 2 else 23,
                running=16 if i == 2 else 0,
                current_tok_s=1843.0 if i == 2 else 0.0,
                done=i != 2,
                result=combine_runs(runs),
                runs=runs,
                repeat=1 if i <= 2 else 0,
                repeat_count=3,
            )
        )
    assert state.trial is not None
    trial = dataclasses.replace(
        state.trial, levels=tuple(p.result for p in bench if p.result is not None)
    )
    return dataclasses.replace(state, bench=tuple(bench), trial=trial)


CRASH_EXCERPT = (
    "[2026-07-20 12:03:10 TP0] Load weight end. elapsed=41.20 s, type=Qwen3MoeForCausalLM, "
    "avail mem=17.80 GB, mem usage=60.70 GB.",
    "[2026-07-20 12:03:14 TP0] Scheduler hit an exception: Traceback (most recent call last):",
    "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static. "
    "Current value: mem_fraction_static=0.85",
)

CRASH_FIXES = (
    "shrink the tree: speculative_num_steps 3, topk 1, draft tokens 4",
    "lower cuda_graph_max_bs (e.g. 16)",
    "raise mem_fraction_static last, only after the run is stable",
)


def crashed_state() -> ControllerState:
    crash = CrashInfo(
        cause="kv_cache_no_memory",
        message="Not enough memory. Please try to increase --mem-fraction-static.",
        phase=Phase.LOADING,
        load_stage=LoadStage.KV_CACHE,
        excerpt=CRASH_EXCERPT,
        fixes=CRASH_FIXES,
        exit_status=1,
        detected_at=NOW - 3,
    )
    trial = TrialRecord(
        index=5,
        config=dataclasses.replace(BASE, speculative_num_steps=10, speculative_num_draft_tokens=11),
        status=TrialStatus.CRASHED,
        started_at=NOW - 60,
        finished_at=NOW - 3,
        crash=crash,
    )
    return ControllerState(
        phase=Phase.AWAITING_DECISION,
        phase_since=NOW - 3,
        trials=(*_sweeping(5), trial),
        connection=ConnectionState.CONNECTED,
        deployed=Deployed(config=trial.config, artifact_hash="ef56", at=NOW - 60),
        last_good=steps_config(5),
        pending=PendingDecision(
            trial_index=5,
            crash=crash,
            choices=tuple(ResumeChoice),
            next_config=None,
            rollback_config=steps_config(5),
        ),
        sweep_active=True,
        labels=LABELS,
    )


FLEET_TAILS = {
    "gpu-a": "[2026-07-20 12:03:05 TP0] Decode batch, #running-req: 16, accept len: 3.18",
    "gpu-b": "[2026-07-20 12:02:21 TP0] Load weight end. elapsed=41.20 s",
}


def pool_state(focus: str = "gpu-a") -> ControllerState:
    """The console on a pool of two boxes, as ``controller.pool.console`` composes it: the
    focused box's snapshot (gpu-a benchmarking steps 4), the pool's trials (each naming its
    box) and one lane per box (gpu-b loading steps 5)."""
    state = benchmarking_state()
    trials = tuple(
        dataclasses.replace(t, box="gpu-a" if t.index % 2 == 0 else "gpu-b") for t in state.trials
    )
    lanes = (
        BoxLane(
            box="gpu-a",
            phase=Phase.BENCHMARKING,
            phase_since=NOW - 41,
            trial_index=3,
            trial_config=steps_config(4),
            tail=FLEET_TAILS["gpu-a"],
        ),
        BoxLane(
            box="gpu-b",
            phase=Phase.LOADING,
            phase_since=NOW - 72,
            trial_index=4,
            trial_config=steps_config(5),
            tail=FLEET_TAILS["gpu-b"],
        ),
    )
    labels = (("box", focus), *LABELS)
    trial = dataclasses.replace(state.trial, box="gpu-a") if state.trial is not None else None
    return dataclasses.replace(
        state, trial=trial, trials=trials, lanes=lanes, pool=PoolView(box=focus), labels=labels
    )


# --------------------------------------------------------------------------------------------
# Issue 34's scenes: a sweep plan on the doubles' base, the crash with its choices' targets,
# the paused sweep, five-digit figures, and trials with the diffs their deploys made.
# --------------------------------------------------------------------------------------------


def sweep_plan() -> SweepPlan:
    """A steps sweep (1-12) on ``BASE``: labels read ``steps=7 draft=8``."""
    from tests.controller.helpers import plan

    return plan(base=BASE, axes=(("speculative_num_steps", tuple(range(1, 13))),))


def crashed_sweep_state() -> ControllerState:
    """The steps=10 crash of a sweep with a plan: the banner can name what r, S, o deploy,
    and the crashed trial carries the controller's capacity prediction."""
    state = crashed_state()
    crashed = dataclasses.replace(
        state.trials[-1],
        predicted=CapacityPrediction(
            predicted_tokens=-22_916,
            feasible=False,
            minimum_tokens=1_536,
            draft_tokens=11,
            reason="predicted -22,916 KV tokens at 11 draft tokens (linear fit) is below the "
            "minimum 1,536: this configuration is not expected to load",
        ),
    )
    return dataclasses.replace(state, plan=sweep_plan(), trials=(*state.trials[:-1], crashed))


def paused_state() -> ControllerState:
    """The sweep paused after trial 4 (``s`` then the trial finished)."""
    return ControllerState(
        phase=Phase.PAUSED,
        phase_since=NOW - 20,
        trials=_sweeping(4),
        connection=ConnectionState.CONNECTED,
        deployed=Deployed(config=steps_config(4), artifact_hash="cd34", at=NOW - 200, serving=True),
        last_good=steps_config(4),
        sweep_active=True,
        plan=sweep_plan(),
        labels=LABELS,
    )


def big_figures_state() -> ControllerState:
    """Five-digit throughputs and seven-digit capacities (an 8-GPU box): at 80×24 the
    trials table must show each number whole or leave its column out."""
    trials = tuple(
        dataclasses.replace(
            t,
            levels=tuple(
                dataclasses.replace(lv, output_tok_s=lv.output_tok_s * 9.3) for lv in t.levels
            ),
            capacity=(t.capacity or 0) * 4,
        )
        for t in _sweeping(5)
    )
    return dataclasses.replace(paused_state(), trials=trials)


UNIT_DIFF = """--- /etc/systemd/system/sglang.service (on the box)
+++ /etc/systemd/system/sglang.service (new)
@@ -9,9 +9,9 @@
 ExecStart=/usr/bin/python3 -m sglang.launch_server \\
     --model-path Qwen/Qwen3.5-122B-A10B \\
     --speculative-algorithm EAGLE3 \\
-    --speculative-num-steps 3 \\
+    --speculative-num-steps 4 \\
     --speculative-eagle-topk 1 \\
-    --speculative-num-draft-tokens 4 \\
+    --speculative-num-draft-tokens 5 \\
     --mem-fraction-static 0.85 \\
"""

PROCESS_DIFF = (
    "--- /root/run/command.sh (on the box)\n+++ /root/run/command.sh (new)\n@@ -1,3 +1,3 @@\n"
    " #!/bin/sh\n"
    "-exec /usr/bin/python3 -m sglang.launch_server --model-path Qwen/Qwen3.5-122B-A10B "
    "--speculative-algorithm EAGLE3 --speculative-num-steps 2 --speculative-eagle-topk 1 "
    "--speculative-num-draft-tokens 3 --mem-fraction-static 0.85 --cuda-graph-max-bs 64 "
    "--max-running-requests 64 --tp-size 4 --host 127.0.0.1 --port 30000\n"
    "+exec /usr/bin/python3 -m sglang.launch_server --model-path Qwen/Qwen3.5-122B-A10B "
    "--speculative-algorithm EAGLE3 --speculative-num-steps 3 --speculative-eagle-topk 1 "
    "--speculative-num-draft-tokens 4 --mem-fraction-static 0.85 --cuda-graph-max-bs 64 "
    "--max-running-requests 64 --tp-size 4 --host 127.0.0.1 --port 30000\n"
)


def diffs_state() -> ControllerState:
    """The paused sweep whose trials kept their deploys' diffs: trial 4's unit diff and
    trial 3's 300-character process command line."""
    state = paused_state()
    trials = list(state.trials)
    trials[2] = dataclasses.replace(trials[2], deploy_diff=PROCESS_DIFF, artifact_hash="ab12")
    trials[3] = dataclasses.replace(trials[3], deploy_diff=UNIT_DIFF, artifact_hash="cd34")
    return dataclasses.replace(state, trials=tuple(trials))
