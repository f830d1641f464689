"""A trial's benchmark result: every level of its ladder, its headlines and its repeats.

Why apart from :mod:`.metrics`: a level's numbers are computed from its requests alone; the
trial's result is what the ladder as a whole says — the single-request and peak-aggregate
headlines everything ranks by, and, with ``[bench] repeats``, the other runs. Standard library
only, like :mod:`.metrics`: the remote runner ships both to the box.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from specconsole.core.measure.metrics import LevelMetrics
from specconsole.core.measure.stats import Spread, mean, spread

REPEAT_LEVEL_KEYS: tuple[str, ...] = (
    "output_throughput",
    "mean_decode_tok_s",
    "median_ttft_ms",
    "p99_ttft_ms",
    "median_tpot_ms",
    "median_itl_ms",
    "p99_itl_ms",
    "accept_length",
    "request_goodput",
)
"""Per-level numbers that get repeat statistics, as ``<key>@<concurrency>``."""


def _single_level(levels: Sequence[LevelMetrics]) -> LevelMetrics | None:
    ran = [level for level in levels if level.completed > 0]
    return min(ran, key=lambda level: level.max_concurrency) if ran else None


def _peak_level(levels: Sequence[LevelMetrics]) -> LevelMetrics | None:
    ran = [level for level in levels if level.completed > 0]
    return max(ran, key=lambda level: level.output_throughput) if ran else None


def _headlines(levels: Sequence[LevelMetrics]) -> tuple[float, float]:
    single, peak = _single_level(levels), _peak_level(levels)
    return (
        single.mean_decode_tok_s if single is not None else 0.0,
        peak.output_throughput if peak is not None else 0.0,
    )


@dataclass(frozen=True, slots=True)
class BenchResult:
    """A trial's benchmark: one :class:`LevelMetrics` per level that ran, plus headlines.

    ``single_request_tok_s`` and ``peak_aggregate_tok_s`` are always present (0.0 when no
    level produced a completed request) so charts and reports never special-case them. With
    ``[bench] repeats = N`` the ladder ran N times: ``levels`` is the first run,
    ``extra_repeats`` the others, the headlines are means over all runs and
    :meth:`repeat_stats` gives mean, std and a 95 % CI for every headline number.
    """

    levels: tuple[LevelMetrics, ...]
    settings: dict[str, Any] = field(default_factory=dict)
    """bench_serving's settings keys: ``backend``, ``dataset_name``, ``random_input_len``..."""
    cancelled: bool = False
    """The run was stopped on request before the ladder finished."""
    error: str | None = None
    """Why the run stopped early, if it did not finish (e.g. the server went away)."""
    planned_levels: tuple[int, ...] = ()
    """The ladder that was asked for (levels that did not run are missing from ``levels``)."""
    extra_repeats: tuple[tuple[LevelMetrics, ...], ...] = ()
    """Runs 2..N of the ladder (``[bench] repeats``); empty for one run."""
    planned_repeats: int = 1
    reruns: tuple[str, ...] = ()
    """Levels re-run once after a lost connection, each with why and how it went."""

    @property
    def repeats(self) -> tuple[tuple[LevelMetrics, ...], ...]:
        """Every run of the ladder, the first (``levels``) included."""
        return (self.levels, *self.extra_repeats)

    @property
    def partial(self) -> bool:
        """True when any level was cut short or some planned levels (or repeats) never ran."""
        if self.cancelled or self.error:
            return True
        if any(level.partial for run in self.repeats for level in run):
            return True
        if len(self.repeats) < self.planned_repeats:
            return True
        return any(len(run) < len(self.planned_levels) for run in self.repeats)

    @property
    def single_request_level(self) -> LevelMetrics | None:
        """Level 1 (or the lowest level that ran when the ladder has no 1), first run."""
        return _single_level(self.levels)

    @property
    def single_request_tok_s(self) -> float:
        """Headline 1: per-request decode tok/s at concurrency 1 (mean over repeats)."""
        return mean([_headlines(run)[0] for run in self.repeats])

    @property
    def peak_level(self) -> LevelMetrics | None:
        """The level with the highest aggregate output throughput (first run)."""
        return _peak_level(self.levels)

    @property
    def peak_aggregate_tok_s(self) -> float:
        """Headline 2: the best level's ``output_throughput`` (mean over repeats)."""
        return mean([_headlines(run)[1] for run in self.repeats])

    def repeat_stats(self) -> dict[str, Spread]:
        """Mean, sample std and 95 % CI over the repeats of each headline number:
        ``single_request_tok_s``, ``peak_aggregate_tok_s`` and, for every level that ran in
        every repeat, :data:`REPEAT_LEVEL_KEYS` as ``"<key>@<c>"`` (e.g.
        ``"median_ttft_ms@16"``). With one run each spread has n = 1 and no width."""
        runs = self.repeats
        heads = [_headlines(run) for run in runs]
        out = {
            "single_request_tok_s": spread([h[0] for h in heads]),
            "peak_aggregate_tok_s": spread([h[1] for h in heads]),
        }
        for level in self.levels:
            c = level.max_concurrency
            same = [next((lv for lv in run if lv.max_concurrency == c), None) for run in runs]
            if any(lv is None or lv.completed == 0 for lv in same):
                continue
            records = [lv.to_record() for lv in same if lv is not None]
            for key in REPEAT_LEVEL_KEYS:
                values = [r.get(key) for r in records]
                if all(isinstance(v, (int, float)) for v in values):
                    out[f"{key}@{c}"] = spread([float(v) for v in values])  # type: ignore[arg-type]
        return out

    def level(self, concurrency: int) -> LevelMetrics | None:
        """The level measured at ``concurrency``, if it ran (first run)."""
        for level in self.levels:
            if level.max_concurrency == concurrency:
                return level
        return None

    def records(self, *, details: bool = False) -> list[dict[str, Any]]:
        """One bench_serving-keyed record per level and repeat, with the settings merged in
        (``repeat`` numbers the runs from 1); ``details`` adds the per-request lists."""
        out: list[dict[str, Any]] = []
        for number, run in enumerate(self.repeats, start=1):
            for level in run:
                record = level.to_detailed_record() if details else level.to_record()
                out.append({**self.settings, **record, "repeat": number})
        return out

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form for session records (headlines included for readers' convenience;
        ``repeat_stats`` is the field the bench panel and reports show as mean ± CI)."""
        single = self.single_request_level
        peak = self.peak_level
        return {
            "single_request_tok_s": self.single_request_tok_s,
            "single_request_concurrency": single.max_concurrency if single else None,
            "peak_aggregate_tok_s": self.peak_aggregate_tok_s,
            "peak_concurrency": peak.max_concurrency if peak else None,
            "partial": self.partial,
            "cancelled": self.cancelled,
            "error": self.error,
            "planned_levels": list(self.planned_levels),
            "settings": dict(self.settings),
            "levels": [level.to_record() for level in self.levels],
            "planned_repeats": self.planned_repeats,
            "extra_repeats": [[lv.to_record() for lv in run] for run in self.extra_repeats],
            "repeat_stats": {k: v.to_dict() for k, v in self.repeat_stats().items()},
            "reruns": list(self.reruns),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> BenchResult:
        """Rebuild from :meth:`to_dict` output; the headlines are recomputed, not trusted."""
        return cls(
            levels=tuple(LevelMetrics.from_record(r) for r in data.get("levels", ())),
            settings=dict(data.get("settings") or {}),
            cancelled=bool(data.get("cancelled", False)),
            error=data.get("error"),
            planned_levels=tuple(int(c) for c in data.get("planned_levels", ())),
            extra_repeats=tuple(
                tuple(LevelMetrics.from_record(r) for r in run)
                for run in data.get("extra_repeats", ())
            ),
            planned_repeats=int(data.get("planned_repeats", 1)),
            reruns=tuple(str(note) for note in data.get("reruns", ())),
        )
