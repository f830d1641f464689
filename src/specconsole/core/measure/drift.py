"""Acceptance drift between two sessions: the same configurations' draft acceptance per level,
now against before, and whether it dropped beyond the noise.

Why: a new build of the engine can change acceptance with no other sign — llama.cpp users saw
0.95 fall to 0.83 between two builds (ggml-org/llama.cpp#22673) and found out from their
throughput. The engine's own counters count every drafted and every accepted token of a level
(``core.measure.acceptance``), so the same configuration measured by the previous session of
the same model and engine can be compared level by level, with the build each ran.

The noise: a level's acceptance rate is ``accepted / drafted`` over ``n`` drafted tokens, so
its standard error is about ``√(p(1 − p)/n)`` (drafted tokens taken as independent trials —
they are not quite, which is why the band is not made narrower than :data:`FLOOR`). A drop is
*beyond the noise* when ``before − now > 1.96 · √(se_before² + se_now²)`` and more than the
floor. Pure: the records come in, the rows go out.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from specconsole.core.measure.identity import identity
from specconsole.core.measure.trials import TrialRecord, TrialStatus

__all__ = ["FLOOR", "DriftRow", "acceptance_drift"]

FLOOR = 0.02
"""The smallest drop of the acceptance rate (2 points) ever flagged."""
Z_95 = 1.96


@dataclass(frozen=True, slots=True)
class DriftRow:
    """One configuration at one level, measured by both sessions."""

    trial: TrialRecord
    """This session's trial (the newest that measured the level)."""
    before_trial: TrialRecord
    concurrency: int
    rate: float
    before: float
    drafted: int
    drafted_before: int
    length: float | None
    length_before: float | None

    @property
    def change(self) -> float:
        """The rate now less the rate before (negative: a drop)."""
        return self.rate - self.before

    @property
    def band(self) -> float:
        """The 95 % band of the difference between the two rates."""
        se = self.before * (1 - self.before) / max(1, self.drafted_before)
        se += self.rate * (1 - self.rate) / max(1, self.drafted)
        return max(FLOOR, Z_95 * math.sqrt(se))

    @property
    def dropped(self) -> bool:
        """Acceptance fell beyond the noise."""
        return -self.change > self.band


def _levels(trials: Sequence[TrialRecord]) -> dict[tuple[object, int], TrialRecord]:
    """(configuration, level) → the newest ``ok`` trial that counted drafts there."""
    out: dict[tuple[object, int], TrialRecord] = {}
    for trial in trials:
        if trial.status is not TrialStatus.OK or trial.speculation_off:
            continue
        for level in trial.levels:
            c = level.counters
            if c is not None and c.trusted and c.draft_tokens > 0:
                out[(identity(trial.effective), level.concurrency)] = trial
    return out


def acceptance_drift(
    now: Sequence[TrialRecord], before: Sequence[TrialRecord]
) -> tuple[DriftRow, ...]:
    """Every (configuration, level) both sessions counted drafts at, in this session's
    trial order."""
    ours, theirs = _levels(now), _levels(before)
    rows: list[DriftRow] = []
    for key, trial in sorted(ours.items(), key=lambda kv: (kv[1].index, kv[0][1])):
        old = theirs.get(key)
        if old is None:
            continue
        concurrency = key[1]
        a = next(lv for lv in trial.levels if lv.concurrency == concurrency).counters
        b = next(lv for lv in old.levels if lv.concurrency == concurrency).counters
        assert a is not None and b is not None
        rows.append(
            DriftRow(
                trial=trial,
                before_trial=old,
                concurrency=concurrency,
                rate=a.accepted / a.draft_tokens,
                before=b.accepted / b.draft_tokens,
                drafted=a.draft_tokens,
                drafted_before=b.draft_tokens,
                length=a.acceptance_length,
                length_before=b.acceptance_length,
            )
        )
    return tuple(rows)
