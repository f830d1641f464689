"""The reports' section on a schedule's proof beyond the ladder: its edges (cliffs named and
merged away), what each server ran per level against what was deployed, the acceptance per
prompt category, and the other workload — in Markdown, JSON and HTML.

Why its own module: the per-level table (``levels_report``) answers "which configuration per
level"; this section answers "where does the answer break, and was it what ran" from the
same records (``core.search.per_level.rounds``, ``core.search.proof``), worded by
``present.figures.proof``. Empty when there is nothing to say (no schedule, no counters).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from specconsole.core.machine.state import TrialRecord
from specconsole.core.plans.plan import StrategyKind, SweepPlan
from specconsole.core.search.levels import role_of
from specconsole.core.search.per_level import rounds, workload_configs
from specconsole.core.search.proof.edges import Round, band_pct
from specconsole.core.search.proof.readback import in_force
from specconsole.core.search.proof.remeasure import figure_at
from specconsole.present.figures.proof import proof_lines
from specconsole.present.labels import config_label, record_label
from specconsole.session.selection import report_trials

__all__ = ["proof_document", "proof_html", "proof_markdown"]

TITLE = "The schedule's proof: edges, what ran, acceptance per category"


def proof_markdown(trials: Sequence[TrialRecord], plan: SweepPlan | None) -> list[str]:
    """The section as Markdown lines (none when there is nothing to say)."""
    lines = proof_lines(plan, report_trials(trials))
    if not lines:
        return []
    out = ["", f"## {TITLE}", ""]
    for line in lines:
        out.append(f"  - {line.strip()}" if line.startswith("  ") else f"- {line}")
    return out


def proof_html(
    trials: Sequence[TrialRecord], plan: SweepPlan | None, escape: Callable[[object], str]
) -> str:
    """The section as HTML ('' when there is nothing to say)."""
    lines = proof_lines(plan, report_trials(trials))
    if not lines:
        return ""
    items = "".join(
        f'<li class="sub">{escape(line.strip())}</li>'
        if line.startswith("  ")
        else f"<li>{escape(line)}</li>"
        for line in lines
    )
    return f"<h2>{escape(TITLE)}</h2><ul>{items}</ul>"


def _round_doc(found: Round, plan: SweepPlan) -> dict[str, Any]:
    base = plan.base
    return {
        "schedule": config_label(found.schedule, base),
        "trial": None if found.trial is None else found.trial.index + 1,
        "edges": [
            {
                "batch": c.edge.batch,
                "why": c.edge.why,
                "switches": c.edge.switches,
                "left_level": c.left.concurrency,
                "right_level": c.right.concurrency,
                "rungs": [
                    {
                        "concurrency": r.concurrency,
                        "schedule": r.schedule,
                        "left": r.left,
                        "right": r.right,
                        "shortfall_pct": r.shortfall_pct(),
                    }
                    for r in c.rungs
                ],
                "cliff": None if c.cliff is None else c.cliff.concurrency,
            }
            for c in found.checks
        ],
        "merged": [{"edge": e.batch, "level": lo, "takes": hi} for e, lo, hi in found.merged],
        "missing": [
            {"config": config_label(cfg, base), "rungs": list(rungs)}
            for cfg, rungs in found.missing
        ],
    }


def proof_document(trials: Sequence[TrialRecord], plan: SweepPlan | None) -> dict[str, Any]:
    """The section as JSON (``docs/report-schema.json``: ``schedule_proof``)."""
    shown = report_trials(trials)
    base = plan.base if plan is not None else None
    schedule = plan is not None and plan.strategy is StrategyKind.PER_LEVEL
    done = rounds(plan, shown) if schedule and plan is not None else ()
    forced = []
    for t in shown:
        rows = in_force(t)
        if rows and any(r.ran is not None for r in rows):
            forced.append(
                {
                    "trial": t.index + 1,
                    "role": role_of(t).value,
                    "levels": [
                        {
                            "concurrency": r.concurrency,
                            "deployed": r.deployed,
                            "ran": r.ran,
                            "mismatch": r.mismatch,
                        }
                        for r in rows
                    ],
                }
            )
    categories = []
    for t in shown:
        levels = [
            {
                "concurrency": lv.concurrency,
                "categories": [c.to_dict() for c in lv.counters.categories],
            }
            for lv in sorted(t.levels, key=lambda lv: lv.concurrency)
            if lv.counters is not None and lv.counters.categories
        ]
        if levels:
            categories.append(
                {"trial": t.index + 1, "label": record_label(t, base), "levels": levels}
            )
    workload = None
    if schedule and plan is not None and plan.proof_dataset:
        configs = workload_configs(plan, shown)
        workload = {
            "dataset": plan.proof_dataset,
            "configs": [
                {
                    "label": config_label(cfg, base),
                    "figures": {
                        str(c): figure_at(shown, cfg, c, plan.proof_dataset)
                        for c in sorted(plan.bench.ladder)
                    },
                }
                for cfg in configs
            ],
        }
    return {
        "band_pct": None if plan is None else band_pct(plan),
        "rounds": [] if plan is None else [_round_doc(r, plan) for r in done],
        "in_force": forced,
        "categories": categories,
        "workload": workload,
        "lines": proof_lines(plan, shown),
    }
