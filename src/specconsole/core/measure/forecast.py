"""What the tool predicted before a trial deployed, and how far what ran fell from it.

Why: a prediction that is never checked cannot be trusted — AIConfigurator gates its model on
its measured error — and the search leans on predictions (a configuration predicted not to
load is skipped). So every trial records, before its deploy, what was predicted of it with a
stated band, and the record keeps it beside what was measured:

* **will it load**, and why (the capacity line over earlier trials; the model's own limits
  from its GGUF header and the box's memory, for llama.cpp);
* **capacity** — the KV tokens the server will report (SGLang's ``max_total_num_tokens``,
  llama-server's slots x slot context), with its band;
* **throughput per level**, where a model of it exists (none of the real engines has one
  today: the record says so rather than guess).

:func:`check` compares one trial's forecast with its record: the load predicted against what
happened, each figure's signed error as a share of the measured one, and a *miss* when an
error is beyond the forecast's own band (a finding). :func:`session_error` is the mean
absolute percentage error over a session's predicted figures. Pure.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

__all__ = [
    "Forecast",
    "ForecastCheck",
    "ModelFacts",
    "check",
    "session_error",
]

LOADED = frozenset({"ok", "pruned", "degraded", "failed"})
"""Statuses of a trial whose server loaded (the benchmark may still have failed)."""
NOT_LOADED = frozenset({"crashed", "load_timeout"})


@dataclass(frozen=True, slots=True)
class ModelFacts:
    """One model file's own limits (its GGUF header), and the box's free memory."""

    path: str
    n_ctx_train: int | None = None
    kv_bytes_per_token: int | None = None
    """An f16 KV cache's bytes per token: layers x KV heads x (key + value size) x 2."""
    file_bytes: int | None = None
    mem_available_bytes: int | None = None
    """``MemAvailable`` of the box when it was read."""
    detail: str = ""
    """``30 layers x 3 KV heads x 64`` or why the header could not be read."""


@dataclass(frozen=True, slots=True)
class Forecast:
    """The predictions made before a trial deployed."""

    loads: bool | None = None
    """Predicted to load (None: nothing to predict it from)."""
    load_reason: str = ""
    capacity: int | None = None
    """Predicted KV tokens (the server's own capacity figure)."""
    capacity_band: float = 0.05
    """The capacity prediction's stated band, as a share (0.05: within 5 %)."""
    levels: tuple[tuple[int, float], ...] = ()
    """(concurrency, predicted aggregate output tok/s) where a throughput model exists."""
    throughput_band: float = 0.10
    source: str = ""
    """What made the predictions, in words."""


@dataclass(frozen=True, slots=True)
class ForecastCheck:
    """One trial's forecast against its record."""

    load_right: bool | None
    """The load predicted correctly (None: not predicted, or the trial never got to load)."""
    capacity_error: float | None
    """(predicted − measured) / measured (None: either unknown)."""
    level_errors: tuple[tuple[int, float], ...]
    """(concurrency, signed relative error) of each level predicted and measured."""
    misses: tuple[str, ...]
    """Predictions wrong beyond their band, one sentence each (findings)."""

    @property
    def errors(self) -> tuple[float, ...]:
        """Every figure's absolute relative error (capacity, then the levels)."""
        out = [abs(e) for _c, e in self.level_errors]
        if self.capacity_error is not None:
            out.insert(0, abs(self.capacity_error))
        return tuple(out)

    @property
    def mape(self) -> float | None:
        """This trial's mean absolute percentage error (None: nothing figured)."""
        errors = self.errors
        return None if not errors else 100.0 * sum(errors) / len(errors)


def _relative(predicted: float, measured: float) -> float | None:
    return None if measured == 0 else (predicted - measured) / measured


def check(
    forecast: Forecast | None,
    status: str,
    capacity: int | None,
    levels: Sequence[tuple[int, float]],
) -> ForecastCheck | None:
    """The forecast of a trial that ended with ``status``, ``capacity`` and the measured
    (concurrency, aggregate tok/s) ``levels`` (None: nothing was forecast)."""
    if forecast is None:
        return None
    misses: list[str] = []
    load_right: bool | None = None
    if forecast.loads is not None and (status in LOADED or status in NOT_LOADED):
        load_right = forecast.loads == (status in LOADED)
        if not load_right:
            said = "load" if forecast.loads else "not load"
            misses.append(
                f"predicted to {said} ({forecast.load_reason or forecast.source}); it {status}"
            )
    cap_error = None
    if forecast.capacity is not None and capacity is not None:
        cap_error = _relative(forecast.capacity, capacity)
        if cap_error is not None and abs(cap_error) > forecast.capacity_band:
            misses.append(
                f"capacity predicted {forecast.capacity:,}, measured {capacity:,} "
                f"({cap_error:+.1%}, beyond its ±{forecast.capacity_band:.0%})"
            )
    measured = dict(levels)
    errors: list[tuple[int, float]] = []
    for c, predicted in forecast.levels:
        got = measured.get(c)
        error = None if got is None else _relative(predicted, got)
        if error is None:
            continue
        errors.append((c, error))
        if abs(error) > forecast.throughput_band:
            misses.append(
                f"c={c} predicted {predicted:,.1f} tok/s, measured {got:,.1f} "
                f"({error:+.1%}, beyond its ±{forecast.throughput_band:.0%})"
            )
    return ForecastCheck(load_right, cap_error, tuple(errors), tuple(misses))


def session_error(checks: Sequence[ForecastCheck | None]) -> float | None:
    """The mean absolute percentage error over every figure a session predicted and measured
    (None: none)."""
    errors = [e for c in checks if c is not None for e in c.errors]
    return None if not errors else 100.0 * sum(errors) / len(errors)
