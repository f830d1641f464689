"""The headless sweep's progress lines: one line per meaningful change.

Why: sweeps take hours on a real box and are often started from scripts, CI or a tmux pane
that nobody watches; what the console shows as panes, a headless run prints as lines (phase,
load stage, level, notice) a person or a log collector reads later. The words come from
``present``, like the console's.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import TextIO

from specconsole.core.logs.events import LoadStage
from specconsole.core.machine import events as ev
from specconsole.core.machine.state import (
    ControllerState,
    LevelSummary,
    Notice,
    Phase,
    TrialRecord,
)
from specconsole.core.measure.stats import half_width
from specconsole.core.plans.plan import SweepPlan
from specconsole.core.search.draftcost import draft_cost
from specconsole.present.box import probe_lines
from specconsole.present.figures.bestlaunch import launch_block
from specconsole.present.figures.draftcost import draft_cost_text
from specconsole.present.figures.gpu import brief as gpu_brief
from specconsole.present.figures.progress import state_glance
from specconsole.present.formats import format_int, format_rate_ci, format_ratio
from specconsole.present.labels import (
    load_stage_label,
    notice_text,
    record_label,
)
from specconsole.present.runlog import deploy_lines, level_line
from specconsole.present.status import record_status


class ProgressPrinter:
    """Prints one line per meaningful change (phase, load stage, level, notice)."""

    def __init__(self, out: TextIO, plan: SweepPlan | None, *, prefix: str = "") -> None:
        self.out = out
        self.plan = plan
        self.prefix = prefix
        """Put before every line (a pool's box name: ``[gpu-a] ``)."""
        self._last: tuple[object, ...] = ()
        self._notice: Notice | None = None
        self._crash_reported: tuple[int, float] | None = None
        self._levels_printed: set[tuple[int, int, int]] = set()
        """(trial index, concurrency, run) of the level lines already printed."""
        self._stages: dict[int, LoadStage] = {}
        """The furthest load stage printed for each trial."""

    def _print(self, text: str) -> None:
        stamp = time.strftime("%H:%M:%S")
        print(f"[{stamp}] {self.prefix}{text}", file=self.out, flush=True)

    def _label(self, record: TrialRecord) -> str:
        return record_label(record, self.plan.base if self.plan else None)

    def __call__(self, state: ControllerState, event: ev.Event) -> None:
        trial = state.trial
        # A trial's result comes before anything about the next one (the machine records a
        # trial and begins the next in one step, so both arrive in this snapshot).
        if isinstance(event, ev.TrialRecorded) and state.trials:
            self._summarise(state.trials[-1], state.trials)
            self._glance(state)
        elif isinstance(event, ev.StartSweep):
            self._glance(state)
        key = (state.phase, state.load_stage, trial.index if trial else None)
        if key != self._last and self._forward(state):
            self._last = key
            if trial is not None and state.phase is not Phase.RECORDING:
                stage = f" ({load_stage_label(state.load_stage)})" if state.load_stage else ""
                self._print(
                    f"trial {trial.index + 1}/{state.trial_total} {self._label(trial)}: "
                    f"{state.phase.value}{stage}"
                )
        if state.notice is not None and state.notice is not self._notice:
            self._notice = state.notice
            base = self.plan.base if self.plan else None
            if not isinstance(event, ev.BoxProbed):  # the probe's own lines say it, once
                self._print(f"{state.notice.level}: {notice_text(state.notice, base)}")
        if trial is not None:
            self._print_levels(trial.index, event)
        if isinstance(event, ev.DeployPreviewed):
            self._print_diff(event.diff)
        if isinstance(event, ev.BoxProbed):
            for line in probe_lines(event.probe):
                self._print(line)
        if (
            state.phase is Phase.CRASHED
            and trial is not None
            and trial.crash is not None
            and self._crash_reported != (trial.index, trial.started_at)
        ):
            self._crash_reported = (trial.index, trial.started_at)
            crash = trial.crash
            self._print(f"CRASH detected in {crash.phase.value}: {crash.cause}: {crash.message}")
            for fix in crash.fixes[:4]:
                self._print(f"  fix: {fix}")
        if isinstance(event, ev.ConnectionChanged):
            self._print(f"connection {event.state.value} {event.detail}".rstrip())

    def _forward(self, state: ControllerState) -> bool:
        """Load stages only move forward in the output: every TP rank logs its own weights
        and KV-cache lines, so the parsed stage can step back and forth; a stage at or
        before the furthest one printed for this trial is not printed again."""
        trial, stage = state.trial, state.load_stage
        if state.phase is not Phase.LOADING or trial is None or stage is None:
            return True
        order = list(LoadStage)
        seen = self._stages.get(trial.index)
        if seen is not None and order.index(stage) <= order.index(seen):
            return False
        self._stages[trial.index] = stage
        return True

    def _print_diff(self, diff: str) -> None:
        """The change the deploy makes on the box, flag by flag, before it is made (never a
        prompt); the unified diff is in the trial's record and the console's diff pane."""
        for line in deploy_lines(diff):
            self._print(f"  {line}")

    def _print_levels(self, trial: int, event: ev.Event) -> None:
        """A level's line as soon as it finishes (each run's, with ``[bench] repeats``); the
        ladder's result adds any not seen and, for repeated runs, each level's mean ± 95 %
        CI over them."""
        if isinstance(event, ev.BenchLevelFinished):
            lv, repeat = event.level, event.repeat
            if (trial, lv.concurrency, repeat) not in self._levels_printed:
                self._levels_printed.add((trial, lv.concurrency, repeat))
                run = f"run {repeat + 1} " if repeat else ""
                self._print(f"  {run}{self._level_line(lv)}")
        elif isinstance(event, ev.BenchFinished):
            for lv in event.levels:
                if lv.repeats > 1:
                    self._print(f"  mean of {lv.repeats} runs: {self._level_line(lv)}")
                elif (trial, lv.concurrency, 0) not in self._levels_printed:
                    self._levels_printed.add((trial, lv.concurrency, 0))
                    self._print(f"  {self._level_line(lv)}")

    @staticmethod
    def _level_line(lv: LevelSummary) -> str:
        return level_line(lv)

    def _glance(self, state: ControllerState) -> None:
        """Elapsed, the sweep's ETA and the current best (present.figures.progress), after each
        trial and as the sweep starts."""
        seen = state_glance(state, time.time())
        if seen is not None:
            self._print(f"  {seen.line}")

    def _summarise(self, record: TrialRecord, trials: tuple[TrialRecord, ...] = ()) -> None:
        parts = [f"trial {record.index + 1} {self._label(record)}: {record_status(record)}"]
        if record.capacity is not None:
            cost = draft_cost_text(draft_cost(record, trials), source=False)
            parts.append(f"capacity {format_int(record.capacity)}" + (f" ({cost})" if cost else ""))
        if record.single_request_tok_s is not None:
            ci = half_width(record.single_request_spread)
            parts.append(f"single {format_rate_ci(record.single_request_tok_s, ci, 1)} tok/s")
        if record.peak_aggregate_tok_s is not None:
            ci = half_width(record.peak_aggregate_spread)
            text = format_rate_ci(record.peak_aggregate_tok_s, ci, 1)
            parts.append(f"peak {text} tok/s (c={record.peak_concurrency})")
        if record.repeats > 1:
            parts.append(f"mean ± 95% CI over {record.repeats} runs")
        if record.accept_length is not None:
            parts.append(f"accept {format_ratio(record.accept_length)}")
        if record.speculation_off:
            parts.append(f"speculation off: {record.speculation_off}")
        if record.predicted is not None and not record.predicted.feasible:
            parts.append("predicted infeasible")
        if gpus := gpu_brief(record):
            parts.append(gpus)
        if record.errors:
            parts.append("; ".join(record.errors))
        self._print(", ".join(parts))


def launch_lines(
    plan: SweepPlan, trials: Sequence[TrialRecord], session: object, printer: ProgressPrinter
) -> None:
    """The best trial's exact launch at the end of a sweep, unprefixed so it can be copied
    (``present.figures.bestlaunch.launch_block``; secrets as references to their
    EnvironmentFile)."""
    block = launch_block(plan, trials, session)
    if block is not None:
        printer._print(block[0])
        printer.out.write(block[1])
        printer.out.flush()
