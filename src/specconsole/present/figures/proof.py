"""The schedule's proof beyond the ladder, in words: its edges, what the server ran, the
acceptance per prompt category and the other workload.

Why here: the reports (every format), the headless summary and the console say the same
sentences about a schedule's proof (``core.search.per_level.rounds``, ``core.search.proof``),
so the words are made once. The per-level table and its verdicts (the adaptive contenders,
the break-even) are :mod:`specconsole.present.figures.levels`'.
"""

from __future__ import annotations

from collections.abc import Sequence

from specconsole.core.config.model import ServerConfig
from specconsole.core.engine.schedule import Role
from specconsole.core.engine.schedule import config_role as role_of_config
from specconsole.core.measure.trials import TrialRecord, TrialStatus
from specconsole.core.plans.plan import StrategyKind, SweepPlan
from specconsole.core.search.levels import role_of
from specconsole.core.search.per_level import rounds, workload_configs
from specconsole.core.search.proof.edges import EdgeCheck, Round
from specconsole.core.search.proof.readback import InForce, in_force
from specconsole.core.search.proof.remeasure import figure_at
from specconsole.present.figures.levels import pct
from specconsole.present.formats import DASH, format_rate
from specconsole.present.labels import config_label, record_label

__all__ = [
    "category_lines",
    "edge_lines",
    "proof_lines",
    "readback_lines",
    "workload_lines",
]


def _rate(value: float | None) -> str:
    return DASH if value is None else format_rate(value, 1)


def _label(config: object, base: ServerConfig | None) -> str:
    return config_label(config, base)  # type: ignore[arg-type]


def _check_text(check: EdgeCheck, base: ServerConfig | None) -> str:
    edge = check.edge
    left = f"c={check.left.concurrency}'s {_label(check.left.config, base)}"
    right = f"c={check.right.concurrency}'s {_label(check.right.config, base)}"
    rungs = "; ".join(
        f"c={r.concurrency} {_rate(r.schedule)} against {_rate(r.left)} and {_rate(r.right)}"
        for r in check.rungs
    )
    head = f"edge {edge.batch - 1}|{edge.batch} ({edge.why}; {left} | {right}): {rungs}"
    cliff = check.cliff
    if cliff is not None:
        short = cliff.shortfall_pct() or 0.0
        return (
            f"{head} — a cliff at c={cliff.concurrency}: {short:.1f} % below both statics "
            f"(band {check.band_pct:g} %)"
        )
    if not check.measured:
        return f"{head} — not measured yet"
    return f"{head} — holds"


def _round_head(found: Round, base: ServerConfig | None, number: int) -> str:
    trial = found.trial
    who = "not run yet" if trial is None else f"#{trial.index + 1} {record_label(trial, base)}"
    return f"edge proof, round {number}: {who}"


def edge_lines(
    done: Sequence[Round], base: ServerConfig | None, trials: Sequence[TrialRecord] = ()
) -> list[str]:
    """Each round of the edge proof: its schedule, each edge's rungs against the statics it
    switches between, a cliff named with its edge, what was merged, how it ended."""
    out: list[str] = []
    for number, found in enumerate(done, start=1):
        out.append(_round_head(found, base, number))
        out += [f"  {_check_text(c, base)}" for c in found.checks]
        if found.trial is not None and found.trial.status is TrialStatus.OK and not found.checks:
            out.append("  no edge within the ladder (one draft length at every batch size)")
        for edge, level, takes in found.merged:
            out.append(
                f"  merged: edge {edge.batch - 1}|{edge.batch} removed — c={level} takes "
                f"c={takes}'s static; the adjusted schedule is proven again (round {number + 1})"
            )
    if done:
        last = done[-1]
        spent = sum(1 for t in trials if t.remeasure is not None and t.remeasure.why == "edge")
        if last.missing:
            out.append(f"edge proof: in progress ({spent} edge trials so far)")
        elif last.cliffs:
            where = ", ".join(f"{c.edge.batch - 1}|{c.edge.batch}" for c in last.cliffs)
            out.append(
                f"edge proof: a cliff remains at {where} after {len(done)} round(s) "
                f"({spent} edge trials): the engine's own limit, or the bound on rounds"
            )
        elif last.trial is not None and last.trial.status is TrialStatus.OK:
            out.append(
                f"edge proof: the schedule holds at every edge ({len(done)} round(s), "
                f"{spent} edge trials)"
            )
    return out


def _in_force_text(rows: Sequence[InForce]) -> str:
    parts = []
    for r in rows:
        ran = DASH if r.ran is None else f"{r.ran:.1f}"
        deployed = "" if r.deployed is None else f" (deployed {r.deployed})"
        parts.append(f"c={r.concurrency} {ran}{deployed}")
    return ", ".join(parts)


def readback_lines(trials: Sequence[TrialRecord], base: ServerConfig | None) -> list[str]:
    """What the server ran per level for each schedule and adaptive trial (and their edge
    trials), and every level of any trial where it ran another length than deployed."""
    out: list[str] = []
    for t in trials:
        rows = in_force(t)
        if not rows or all(r.ran is None for r in rows):
            continue
        wanted = role_of(t) in (Role.SCHEDULE, Role.ADAPTIVE) or (
            t.remeasure is not None and t.remeasure.why == "edge"
        )
        bad = [r for r in rows if r.mismatch]
        if not wanted and not bad:
            continue
        verdict = "as deployed" if not bad else "MISMATCH"
        if all(r.deployed is None for r in rows):
            verdict = "as the engine chose"
        out.append(
            f"in force, #{t.index + 1} {record_label(t, base)}: {_in_force_text(rows)} — {verdict}"
        )
        out += [
            f"  finding: at c={r.concurrency} the configuration deploys draft length "
            f"{r.deployed}, the server ran {r.ran:.1f}"
            for r in bad
            if r.ran is not None
        ]
    return out


def category_lines(trials: Sequence[TrialRecord], base: ServerConfig | None) -> list[str]:
    """The acceptance length per prompt category per level (shifting traffic)."""
    out = []
    for t in trials:
        parts = []
        for level in sorted(t.levels, key=lambda lv: lv.concurrency):
            counters = level.counters
            if counters is None or not counters.categories:
                continue
            said = ", ".join(
                f"{c.category} {c.acceptance_length:.2f}" if c.acceptance_length else c.category
                for c in counters.categories
            )
            parts.append(f"c={level.concurrency} {said}")
        if parts:
            out.append(f"acceptance per category, #{t.index + 1} {record_label(t, base)}: "
                       + "; ".join(parts))  # fmt: skip
    return out


def workload_lines(
    plan: SweepPlan, trials: Sequence[TrialRecord], base: ServerConfig | None
) -> list[str]:
    """How the schedule holds on ``[sweep] proof_dataset``: per level its figure there
    against the best of the statics it is built from and the engine's adaptive contender
    over its lengths."""
    dataset = plan.proof_dataset
    configs = workload_configs(plan, trials)
    if not dataset or not configs:
        return []
    schedule = configs[0]
    statics = [c for c in configs[1:] if role_of_config(c) in (Role.STATIC, Role.BASELINE)]
    adaptive = [c for c in configs[1:] if role_of_config(c) is Role.ADAPTIVE]
    out = [f"on {dataset} (the proof's other workload):"]
    for c in sorted(plan.bench.ladder):
        mine = figure_at(trials, schedule, c, dataset)
        ran = [(o, f) for o in statics if (f := figure_at(trials, o, c, dataset)) is not None]
        if mine is None and not ran:
            continue
        text = f"  c={c}: schedule {_rate(mine)}"
        best = max(ran, key=lambda p: p[1], default=None)
        if best is not None:
            text += f"; best static {_label(best[0], base)} {_rate(best[1])}{_vs(mine, best[1])}"
        for other in adaptive:
            theirs = figure_at(trials, other, c, dataset)
            text += f"; {_label(other, base)} {_rate(theirs)}{_vs(mine, theirs)}"
        out.append(text)
    return out


def _vs(mine: float | None, theirs: float | None) -> str:
    """`` (schedule +1.2 %)``: the schedule against a figure."""
    if mine is None or not theirs:
        return ""
    return f" (schedule {pct((mine / theirs - 1.0) * 100.0)})"


def proof_lines(plan: SweepPlan | None, trials: Sequence[TrialRecord]) -> list[str]:
    """Everything the proof says beyond the per-level table: the edges (a plan whose
    strategy derives a schedule), what the servers ran, the acceptance per category, the
    other workload."""
    if plan is None:
        return []
    base = plan.base
    done = rounds(plan, trials) if plan.strategy is StrategyKind.PER_LEVEL else ()
    out = edge_lines(done, base, trials)
    out += readback_lines(trials, base)
    out += category_lines(trials, base)
    if plan.strategy is StrategyKind.PER_LEVEL:
        out += workload_lines(plan, trials, base)
    return out
