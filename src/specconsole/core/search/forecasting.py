"""The forecast a trial records before it deploys: the engine's own model of the launch when
it has one, else the capacity line over the session's trials.

Why here: the pipeline asks once per trial, when the configuration is validated, and the
answer decides as much as it records — a configuration predicted not to load is skipped
(``[sweep] skip_infeasible``) or warned about. Two sources, the better first:

* the engine's ``forecast_load(config, facts)`` (an optional capability of
  ``core.engine.protocol.Engine``; llama.cpp's reads the models' GGUF headers and the box's
  memory: ``engines/llamacpp/limits.py``), exact where the engine's allocation is known;
* the capacity line (``core.search.capacity``): SGLang's KV pool falls linearly with the
  draft tokens, so earlier trials predict the next one's ``max_total_num_tokens`` and
  whether it clears the minimum.

Throughput per level is predicted only where a model of it exists; none of the engines
declares one today, so the forecast says nothing rather than guess.
"""

from __future__ import annotations

from collections.abc import Sequence

from specconsole.core.config.model import ServerConfig
from specconsole.core.engine.registry import EngineNotFound, engine_for
from specconsole.core.measure.forecast import Forecast, ModelFacts
from specconsole.core.measure.trials import CapacityPrediction, TrialRecord

__all__ = ["forecast", "model_files"]

LINE_BAND = 0.05
"""The capacity line's stated band: within 5 % (the line is fitted, the pool is rounded)."""


def model_files(config: ServerConfig) -> tuple[str, ...]:
    """The model files whose own limits the engine's forecast reads (its optional
    ``model_files`` capability; none by default)."""
    try:
        return tuple(engine_for(config).model_files(config))
    except EngineNotFound:
        return ()


def _engine_forecast(config: ServerConfig, facts: Sequence[ModelFacts]) -> Forecast | None:
    if not facts:
        return None
    try:
        return engine_for(config).forecast_load(config, facts)
    except EngineNotFound:
        return None


def forecast(
    trials: Sequence[TrialRecord],
    config: ServerConfig,
    line: CapacityPrediction,
    facts: Sequence[ModelFacts] = (),
) -> Forecast | None:
    """What is predicted of ``config`` before it deploys (None: nothing to predict from):
    the engine's forecast from the models' ``facts``, else the capacity ``line`` already
    fitted over ``trials`` (``core.search.capacity.predict_capacity``)."""
    del trials  # the line was fitted over them; kept in the signature for a throughput model
    own = _engine_forecast(config, facts)
    if own is not None:
        return own
    if line.predicted_tokens is None:
        return None
    basis = ", ".join(f"{d} draft tokens: {c:,}" for d, c in line.basis)
    return Forecast(
        loads=line.feasible,
        load_reason=line.reason,
        capacity=line.predicted_tokens,
        capacity_band=LINE_BAND,
        source=f"the capacity line over earlier trials ({basis})" if basis else line.reason,
    )
