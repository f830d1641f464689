"""From the controller's state snapshot to the panes' view models, as pure functions.

``ControllerState`` (``specconsole.core.machine.state``) is the single source of truth; each
function
here selects and formats one pane's slice of it. They take the clock reading as an argument
(``now``) so the header's elapsed time is deterministic in tests and snapshots, and they never
import Textual, so they are unit-tested directly.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from specconsole.core.engine.schedule import Role
from specconsole.core.engine.vocabulary import capacity_word
from specconsole.core.machine.state import (
    BUSY_PHASES,
    ControllerState,
    LevelProgress,
    LevelSummary,
    Phase,
    TrialRecord,
)
from specconsole.core.measure.stats import half_width
from specconsole.core.plans.modes import StrategyKind
from specconsole.core.plans.objective import DEFAULT_GOAL, Goal, progress
from specconsole.core.search.answer import answer_marks
from specconsole.core.search.draftcost import draft_cost
from specconsole.core.search.levels import LevelTable, level_table, role_of
from specconsole.present.box import connection_word
from specconsole.present.charts.series import (
    Series,
    aggregate_series,
    axis_title,
    crashed_at,
    single_series,
    swept_axis,
)
from specconsole.present.charts.symbols import TRIAL_MARKS
from specconsole.present.columns import cells, console_columns
from specconsole.present.figures.acceptance import chunk_per_step, level_acceptance
from specconsole.present.figures.draftcost import draft_cost_text
from specconsole.present.figures.gpu import trial_gpu_lines
from specconsole.present.figures.levels import (
    compact_lines,
    compact_rows,
    level_series,
    level_verdicts,
    result_short,
)
from specconsole.present.figures.progress import Glance, state_glance, trial_count
from specconsole.present.formats import format_elapsed, format_rate, format_rate_ci
from specconsole.present.labels import config_summary, load_stage_label, trial_label
from specconsole.present.probes import probe_text, rate_answer
from specconsole.present.status import status_detail
from specconsole.ui.viewmodels import (
    BenchView,
    ChartView,
    HeaderView,
    LevelsView,
    LevelView,
    Tone,
    TrialDetails,
    TrialRow,
    summarise_levels,
)

if TYPE_CHECKING:
    from specconsole.core.config.model import ServerConfig

_UNTIMED_PHASES = frozenset({Phase.IDLE, Phase.DONE})


def phase_label(state: ControllerState) -> str:
    """The header's phase word, with the loading sub-phase or the running ladder level."""
    if state.phase is Phase.AWAITING_DECISION:
        crashed = state.pending is not None and state.pending.crash is not None
        return "CRASHED · r resumes" if crashed else "STOPPED · r resumes"
    if state.phase is Phase.PAUSED or (state.phase is Phase.CANCELLED and state.sweep_active):
        return f"{state.phase.value.upper()} · r resumes"
    label = state.phase.value.replace("_", " ").upper()
    if state.phase is Phase.LOADING and state.load_stage is not None:
        return f"{label} · {load_stage_label(state.load_stage)}"
    if state.phase is Phase.BENCHMARKING:
        running = [lv for lv in state.bench if not lv.done]
        if running:
            level = running[0]
            run = (
                f" · run {level.repeat + 1}/{level.repeat_count}" if level.repeat_count > 1 else ""
            )
            return f"{label} · c={level.concurrency}{run}"
    return label


def _header_config(state: ControllerState) -> str:
    """The configuration being tried or deployed; before anything is, the plan's base."""
    if state.current_config is not None:
        return config_summary(state.current_config)
    if state.plan is not None:
        return f"plan base: {config_summary(state.plan.base)}"
    return config_summary(None)


def trial_forms(state: ControllerState, seen: Glance | None) -> tuple[str, ...]:
    """Trial *i of n* (``present.figures.progress.trial_count``: the *n* the strategy's own
    count, planned + bisection when it runs more than planned), or the trials so far."""
    number = state.trial_number
    if number is not None:
        plan = state.plan
        after = seen.trials_after if seen is not None else None
        added = "bisection" if plan and plan.strategy is StrategyKind.BOUNDARY else "added"
        return trial_count(number, after, plan.estimated_trials if plan else None, added)
    if state.trials:
        return (f"{len(state.trials)} trials",)
    return ("",)


def header_view(state: ControllerState, now: float) -> HeaderView:
    """The header for ``state`` at wall-clock time ``now``."""
    extra = dict(state.labels)
    title = " · ".join(
        part
        for part in (
            extra.get("host", ""),
            extra.get("engine", ""),
            extra.get("service", ""),
        )
        if part
    )
    if state.phase in (Phase.CRASHED, Phase.AWAITING_DECISION):
        tone = Tone.BAD
    elif state.phase in BUSY_PHASES:
        tone = Tone.BUSY
    elif state.phase is Phase.DONE:
        tone = Tone.GOOD
    elif state.phase in (Phase.PAUSED, Phase.CANCELLED):
        tone = Tone.WARN
    else:
        tone = Tone.IDLE
    if state.phase is Phase.LOADING and state.load_stage_since is not None:
        stage = format_elapsed(state.load_elapsed(now))
        elapsed = f"{format_elapsed(state.elapsed(now))} ({stage} in stage)"
    elif state.phase in _UNTIMED_PHASES:
        elapsed = ""
    else:
        elapsed = format_elapsed(state.elapsed(now))
    seen = state_glance(state, now)
    trial = trial_forms(state, seen)
    if state.sweep_active and state.pause_requested:
        sweep = "sweep: pausing"
    elif state.sweep_active and state.phase in (Phase.PAUSED, Phase.CANCELLED):
        sweep = "sweep: paused"
    elif state.sweep_active:
        sweep = "sweep: on"
    else:
        sweep = ""
    connection = connection_word(state)
    return HeaderView(
        title=title or "specconsole",
        phase=phase_label(state),
        elapsed=elapsed,
        trial=trial[0],
        trial_forms=trial,
        connection=connection,
        config_summary=_header_config(state),
        tone=tone,
        sweep=sweep,
        eta=seen.eta_short if seen is not None else "",
        best=seen.best_forms if seen is not None else (),
        ran=seen.ran if seen is not None else "",
    )


def _level_from_progress(progress: LevelProgress, duration_s: float | None) -> LevelView:
    result = progress.result
    if result is not None and progress.done:
        return _level_from_summary(result)
    started = bool(progress.completed or progress.failed or progress.running)
    if progress.done:
        state = "done"
    elif started:
        state = "running"
    else:
        state = "pending"
    fraction: float | None = None
    if progress.total <= 0:  # duration mode: the runner cannot know the count up front
        if progress.done:
            fraction = 1.0
        elif progress.planned_duration_s:
            fraction = progress.fraction  # the measured time spent
        elif duration_s:
            fraction = progress.elapsed_s / duration_s if started else 0.0
    return LevelView(
        concurrency=progress.concurrency,
        completed=progress.completed,
        total=max(0, progress.total),
        failed=progress.failed,
        tok_s=progress.current_tok_s if started or progress.done else None,
        ttft_p50_ms=None,
        state=state,
        fraction=fraction,
    )


def _level_from_summary(summary: LevelSummary) -> LevelView:
    total = summary.completed + summary.failed
    return LevelView(
        concurrency=summary.concurrency,
        completed=total,
        total=total,
        failed=summary.failed,
        tok_s=summary.output_tok_s,
        ttft_p50_ms=summary.ttft_p50_ms,
        state="failed" if summary.failed and not summary.completed else "done",
        tok_s_ci=half_width(summary.output_tok_s_spread),
        runs=summary.repeats,
    )


def _latest_benchmarked(state: ControllerState) -> TrialRecord | None:
    for record in reversed(state.trials):
        if record.levels:
            return record
    return None


def bench_view(state: ControllerState) -> BenchView:
    """The live ladder of the current trial, else the last benchmarked trial's results.
    With ``[bench] repeats`` a finished level shows the mean of its runs so far with the 95 %
    CI's half-width, and the headlines their spread."""
    if state.bench:
        duration = state.plan.bench.duration_s if state.plan is not None else None
        levels = tuple(_level_from_progress(p, duration) for p in state.bench)
        finished = [p.result for p in state.bench if p.result is not None]
        single = next((r for r in finished if r.concurrency == 1), None)
        # the peak once every level has a figure (in a repeated ladder's later runs: the runs
        # finished so far, combined)
        measured = all(p.result is not None for p in state.bench)
        peak = max(finished, key=lambda r: r.output_tok_s) if measured else None
        status = summarise_levels(levels)
        runs = max(p.repeat_count for p in state.bench)
        if runs > 1:
            current = max(p.repeat for p in state.bench) + 1
            status = f"run {current}/{runs} · {status}"
        return BenchView(
            levels=levels,
            single_tok_s=None if single is None else single.per_request_tok_s,
            peak_tok_s=None if peak is None else peak.output_tok_s,
            peak_concurrency=None if peak is None else peak.concurrency,
            accept_length=None,
            status=status,
            single_spread=None if single is None else single.per_request_tok_s_spread,
            peak_spread=None if peak is None else peak.output_tok_s_spread,
        )
    record = _latest_benchmarked(state)
    if record is None:
        return BenchView()
    levels = tuple(_level_from_summary(lv) for lv in record.levels)
    runs = f" · {record.repeats} runs" if record.repeats > 1 else ""
    return BenchView(
        levels=levels,
        single_tok_s=record.single_request_tok_s,
        peak_tok_s=record.peak_aggregate_tok_s,
        peak_concurrency=record.peak_concurrency,
        accept_length=record.accept_length,
        status=f"trial {record.index + 1} · done{runs}",
        single_spread=record.single_request_spread,
        peak_spread=record.peak_aggregate_spread,
    )


def _label_base(state: ControllerState, records: Sequence[TrialRecord]) -> ServerConfig | None:
    """What trial labels are relative to: the plan's base, else the first trial's config."""
    if state.plan is not None:
        return state.plan.base
    return records[0].config if records else None


def all_trials(state: ControllerState) -> tuple[TrialRecord, ...]:
    """Finished trials plus the one in progress, oldest first."""
    if state.trial is not None and all(t.index != state.trial.index for t in state.trials):
        return (*state.trials, state.trial)
    return state.trials


def chart_view(state: ControllerState) -> ChartView:
    """Series for the throughput charts: one aggregate-vs-concurrency line per trial that has
    numbers (the running trial's finished levels included, so it grows live), single-request
    tok/s against the swept axis (or the trial number), and the crashed trials' positions."""
    records = all_trials(state)
    base = _label_base(state, records)
    running: dict[int, Sequence[LevelSummary]] = {}
    if state.trial is not None and state.bench:
        running[state.trial.index] = [p.result for p in state.bench if p.result is not None]
    axis = swept_axis(state.plan, records)
    if state.plan is not None and state.plan.strategy is StrategyKind.OPTIMIZE:
        return _objective_chart(state, records, aggregate_series(records, base, running))
    table = _levels(state)
    return ChartView(
        aggregate=aggregate_series(records, base, running),
        single=single_series(records, axis),
        axis_name=axis_title(axis, state.plan.base.engine if state.plan is not None else None),
        crashed=crashed_at(records, axis),
        levels=() if table is None else level_series(table, base),
    )


def _levels(state: ControllerState) -> LevelTable | None:
    """The per-level table when the session asks a per-level question (a schedule plan, a
    baseline, or a trial that is one: ``core.search.levels``); None otherwise."""
    plan = state.plan
    asked = plan is not None and (plan.strategy is StrategyKind.PER_LEVEL or plan.wants_baseline)
    if not asked and all(role_of(t) is Role.STATIC for t in state.trials):
        return None
    table = level_table(state.trials, _goal(state), plan.noise_pct if plan else 1.0)
    return table if table.rows else None


def levels_view(state: ControllerState) -> LevelsView | None:
    """The trials pane's per-level box (None: hidden)."""
    table = _levels(state)
    if table is None:
        return None
    base = _label_base(state, state.trials)
    noise = state.plan.noise_pct if state.plan is not None else 1.0
    return LevelsView(
        tuple(compact_lines(table)),
        tuple(level_verdicts(table, base, noise)),
        compact_rows(table),
        result_short(table),
    )


def _goal(state: ControllerState) -> Goal:
    return state.plan.goal if state.plan is not None else DEFAULT_GOAL


def _objective_chart(
    state: ControllerState, records: Sequence[TrialRecord], aggregate: tuple[Series, ...]
) -> ChartView:
    """An optimising search's second chart: its objective at each trial (crashed trials on
    the x axis), labelled with the best so far."""
    goal = _goal(state)
    points = progress(records, goal)
    name = goal.objective.describe
    series = None
    if points:
        series = Series(
            label=f"{name} (best so far {format_rate(points[-1][2])})",
            xs=tuple(float(n) for n, _s, _b in points),
            ys=tuple(s for _n, s, _b in points),
        )
    return ChartView(
        aggregate=aggregate,
        single=series,
        axis_name="trial",
        crashed=crashed_at(records, None),
        single_title=f"{name} vs trial",
    )


def trial_rows(state: ControllerState) -> tuple[TrialRow, ...]:
    """Every trial of the session, with status and headline numbers."""
    records = all_trials(state)
    base = _label_base(state, records)
    noise = state.plan.noise_pct if state.plan is not None else 1.0
    marked = answer_marks(records, _goal(state), noise)
    shown = console_columns(bool(state.lanes))
    columns = tuple(c.id for c in shown)
    rows = []
    for record in records:
        row = cells(shown, record, base)
        mark = TRIAL_MARKS.get(marked.get(record.index, ""), "")
        if mark and row:
            row = (f"{mark} {row[0]}", *row[1:])
        rows.append(TrialRow(key=str(record.index), columns=columns, cells=row))
    return tuple(rows)


def trial_details(state: ControllerState, key: str | None) -> TrialDetails | None:
    """Details of the trial whose row key is ``key`` (None when it is not found)."""
    if key is None:
        return None
    record = next((r for r in all_trials(state) if str(r.index) == key), None)
    if record is None:
        return None
    lines = [
        f"status: {status_detail(record)}",
        f"config: {config_summary(record.effective)}",
    ]
    if record.capacity is not None:
        term = capacity_word(record.effective.engine)
        lines.append(f"capacity: {record.capacity:,} tokens" + (f" ({term})" if term else ""))
        if cost := draft_cost_text(draft_cost(record, all_trials(state))):
            lines.append(f"  {cost}")
    predicted = record.predicted
    if predicted is not None and predicted.predicted_tokens is not None:
        verdict = "" if predicted.feasible else " (predicted not to load)"
        lines.append(f"predicted capacity: {predicted.predicted_tokens:,} tokens{verdict}")
    for level in sorted(record.levels, key=lambda lv: lv.concurrency):
        aggregate = format_rate_ci(level.output_tok_s, half_width(level.output_tok_s_spread))
        per_request = format_rate_ci(
            level.per_request_tok_s, half_width(level.per_request_tok_s_spread)
        )
        lines.append(
            f"c={level.concurrency}: {aggregate} tok/s aggregate, {per_request} tok/s per request"
            + (f", {level.failed} failed" if level.failed else "")
            + (f" (mean ± 95% CI of {level.repeats} runs)" if level.repeats > 1 else "")
        )
    if record.accept_length is not None:
        lines.append(f"accept length: {record.accept_length:.2f}")
    for level in sorted(record.levels, key=lambda lv: lv.concurrency):
        lines.extend(level_acceptance(level, chunk_per_step(record.effective)))
    if record.rate_probes:  # max_rate_under_slo: the answer, then every probe
        lines.append(f"highest rate under the SLOs: {rate_answer(record)}")
        lines.extend(f"  probe {probe_text(p)}" for p in record.rate_probes)
    lines.extend(trial_gpu_lines(record))
    lines.extend(f"warning: {w}" for w in record.warnings)
    lines.extend(f"error: {e}" for e in record.errors)
    excerpt: tuple[str, ...] = ()
    if record.crash is not None:
        excerpt = record.crash.excerpt
    return TrialDetails(title=trial_label(record, None), lines=tuple(lines), log_excerpt=excerpt)
