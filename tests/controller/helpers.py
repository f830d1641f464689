"""Shared test helpers for the controller tests: a small plan and a machine driver.

The driver feeds ``step()`` the events a real runtime would send for a trial that goes well,
so tests can put the machine in any phase with real transitions instead of hand-built state.
"""

from __future__ import annotations

from dataclasses import replace

from specconsole.core.logs.events import LoadStage
from specconsole.core.machine import effects as fx
from specconsole.core.machine import events as ev
from specconsole.core.machine.state import ControllerState, LevelSummary, Phase
from specconsole.core.machine.table import step
from specconsole.core.plans.parse import loads_plan
from specconsole.core.plans.plan import SweepPlan

PLAN_TEXT = """
name = "unit"

[server]
model_path = "Qwen/Qwen3.5-122B-A10B"
speculative_algorithm = "EAGLE3"
speculative_draft_model_path = "draft"
speculative_eagle_topk = 1
max_running_requests = 64

[sweep]
strategy = "boundary"
on_crash = "pause"
load_timeout = 120

[sweep.axes]
speculative_num_steps = [1, 2, 3, 10]

[bench]
ladder = [1, 4]
requests_per_level = 4
input_len = 64
output_len = 16
"""


def plan(**overrides: object) -> SweepPlan:
    return replace(loads_plan(PLAN_TEXT), **overrides)  # type: ignore[arg-type]


class Driver:
    """Feeds events to the machine, keeping the state, the last effects and a clock."""

    def __init__(self, state: ControllerState | None = None) -> None:
        self.state = state or ControllerState()
        self.effects: tuple[fx.Effect, ...] = ()
        self.now = 1000.0

    def send(self, event: ev.Event) -> tuple[fx.Effect, ...]:
        self.now += 1.0
        if isinstance(event, ev.Outcome):
            event = replace(event, epoch=self.state.epoch, at=self.now)
        else:
            event = replace(event, at=self.now)
        self.state, self.effects = step(self.state, event)
        return self.effects

    def effect_types(self) -> list[type[fx.Effect]]:
        return [type(e) for e in self.effects]

    def find(self, kind: type[fx.Effect]) -> fx.Effect:
        for e in self.effects:
            if isinstance(e, kind):
                return e
        raise AssertionError(f"no {kind.__name__} in {self.effects}")

    # -- canned happy path ------------------------------------------------------------------

    def start(self, p: SweepPlan | None = None) -> None:
        self.send(ev.StartSweep(plan=p or plan()))

    def validated(self) -> None:
        cfg = self.find_config()
        steps = cfg.speculative_num_steps or 0
        normalized = replace(cfg, speculative_num_draft_tokens=steps + 1)
        self.send(ev.ConfigValidated(config=normalized, argv=("python3", "-m", "sglang")))

    def find_config(self):  # type: ignore[no-untyped-def]
        assert self.state.trial is not None
        return self.state.trial.config

    def to_phase(self, phase: Phase, capacity: int = 400_000) -> None:
        """Drive the current (or a new) trial forward until ``phase``."""
        if self.state.phase in (Phase.IDLE, Phase.DONE):
            self.start()
        order = [
            Phase.VALIDATING,
            Phase.DEPLOYING,
            Phase.RESTARTING,
            Phase.LOADING,
            Phase.READY,
            Phase.FLUSHING,
            Phase.BENCHMARKING,
            Phase.RECORDING,
        ]
        for _ in range(20):
            if self.state.phase is phase:
                return
            current = self.state.phase
            assert current in order, f"cannot drive from {current} to {phase}"
            if current is Phase.VALIDATING:
                self.validated()
            elif current is Phase.DEPLOYING:
                self.send(ev.DeployDone(artifact_hash="h" + str(self.state.epoch)))
            elif current is Phase.RESTARTING:
                self.send(ev.Restarted())
            elif current is Phase.LOADING:
                self.send(ev.LoadStageSeen(stage=LoadStage.WEIGHTS))
                self.send(ev.CapacitySeen(max_total_num_tokens=capacity, max_running_requests=64))
                self.send(ev.ServerReady())
            elif current is Phase.READY:
                self.send(ev.ServerInfoFetched(items=(("tp_size", "4"),)))
            elif current is Phase.FLUSHING:
                self.send(ev.CacheFlushed())
            elif current is Phase.BENCHMARKING:
                self.send(ev.BenchFinished(levels=levels(), accept_length=2.5))
        raise AssertionError(f"did not reach {phase}; at {self.state.phase}")

    def finish_trial(self, capacity: int = 400_000) -> None:
        self.to_phase(Phase.RECORDING, capacity)
        self.send(ev.TrialRecorded(index=self.state.trial.index if self.state.trial else 0))


def levels(single: float = 100.0, agg: float = 1000.0) -> tuple[LevelSummary, ...]:
    return (
        LevelSummary(concurrency=1, output_tok_s=single, per_request_tok_s=single, completed=4),
        LevelSummary(concurrency=4, output_tok_s=agg, per_request_tok_s=agg / 4, completed=4),
    )
