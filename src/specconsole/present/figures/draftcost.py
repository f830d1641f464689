"""How a draft's KV cost reads: ``the draft costs 212,568 KV tokens, 38 %``, and where the
figure without speculation came from.

Why in present: the console's trial details, the headless summary and the reports all put it
beside the capacity, in the same words (``core.search.draftcost`` computes it).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from specconsole.present.formats import format_int

if TYPE_CHECKING:
    from specconsole.core.search.draftcost import DraftCost

__all__ = ["draft_cost_text"]


def draft_cost_text(cost: DraftCost | None, *, source: bool = True) -> str:
    """``the draft costs 212,568 KV tokens, 38 %`` and, with ``source``, what it is measured
    against ('' when unknown)."""
    if cost is None:
        return ""
    text = f"the draft costs {format_int(cost.tokens)} KV tokens, {round(cost.share * 100)} %"
    if not source:
        return text
    if cost.source == "baseline" and cost.baseline_index is not None:
        where = f"trial {cost.baseline_index + 1} held {format_int(cost.without)} without it"
    else:
        where = (
            f"{format_int(cost.without)} without it by the capacity line at no draft tokens, "
            "before its weights and KV"
        )
    return f"{text} ({where})"
