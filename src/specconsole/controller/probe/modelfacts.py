"""The models' own limits, read on the box once per sweep: what the forecast of every trial
needs to say "will not load" before anything is deployed.

Why a probe: the model files are on the box, and what decides a load — llama.cpp's training
context and KV bytes per token in the GGUF header, the box's available memory — is there
too. The engine says which files a launch reads and how to read them (its optional
``model_files`` / ``model_facts_command`` / ``parse_model_facts`` capabilities: llama.cpp
ships its stdlib GGUF reader as ``python3 -c``); the keeper asks once for every file the
plan can name (the base and the values of the ``model_path`` and
``speculative_draft_model_path`` axes), bounded in time, and hands each validated trial the
facts of its files (``ConfigValidated.model_facts``). A box that cannot answer (no
``python3``, a missing file) gets no facts, with the reason kept: the forecast then falls
back to the capacity line, as before.
"""

from __future__ import annotations

import asyncio
import logging
import shlex
from dataclasses import dataclass, field

from specconsole.core.config.model import ServerConfig
from specconsole.core.engine.registry import EngineNotFound, engine_for
from specconsole.core.measure.forecast import ModelFacts
from specconsole.core.plans.plan import SweepPlan
from specconsole.core.ports import Transport, TransportError
from specconsole.core.search.forecasting import model_files

__all__ = ["FACTS_BUDGET_S", "ModelFactsKeeper", "plan_configs"]

log = logging.getLogger(__name__)

FACTS_BUDGET_S = 60.0
"""The box gets this long to read the headers (a few seconds for GGUF files of any size:
only the header is read)."""
PATH_AXES = ("model_path", "speculative_draft_model_path")


def plan_configs(plan: SweepPlan) -> list[ServerConfig]:
    """The base and one configuration per value of the plan's model-file axes."""
    out = [plan.base]
    for name, values in plan.axes:
        if name in PATH_AXES:
            out += [plan.at(plan.base, **{name: value}) for value in values]
    return out


@dataclass
class ModelFactsKeeper:
    """Reads each model file's limits once and hands them to the trials that use it."""

    transport: Transport
    found: dict[str, ModelFacts] = field(default_factory=dict)
    detail: str = ""
    """Why the last read gave nothing ('' when it did, or was never needed)."""

    async def ensure(self, configs: list[ServerConfig]) -> None:
        """Read the files of ``configs`` not read yet; never raises (but a cancel)."""
        wanted: dict[str, list[str]] = {}
        engines: dict[str, ServerConfig] = {}
        for config in configs:
            missing = [f for f in model_files(config) if f not in self.found]
            if missing:
                wanted.setdefault(config.engine, [])
                wanted[config.engine] += [f for f in missing if f not in wanted[config.engine]]
                engines.setdefault(config.engine, config)
        for name, paths in wanted.items():
            try:
                await self._read(engines[name], paths)
            except Exception as exc:  # never fails a sweep: the capacity line still predicts
                self.detail = f"{type(exc).__name__}: {exc}"
                log.warning("model facts: %s", self.detail)

    async def _read(self, config: ServerConfig, paths: list[str]) -> None:
        try:
            engine = engine_for(config)
        except EngineNotFound:
            return
        argv = engine.model_facts_command("python3", paths)
        if argv is None:
            return
        if config.working_directory:
            argv = ["sh", "-c", f"cd {shlex.quote(config.working_directory)} && {shlex.join(argv)}"]
        try:
            async with asyncio.timeout(FACTS_BUDGET_S + 5.0):
                result = await self.transport.run(shlex.join(argv), timeout=FACTS_BUDGET_S)
        except (TimeoutError, TransportError) as exc:
            self.detail = f"the box could not read the model files ({exc or 'no answer'})"
            return
        if not result.ok:
            self.detail = f"the box could not read the model files: {result.stderr.strip()[:200]}"
            return
        for facts in engine.parse_model_facts(result.stdout):
            self.found[facts.path] = facts

    def facts_for(self, config: ServerConfig) -> tuple[ModelFacts, ...]:
        """The facts of the files ``config`` reads (those that were read)."""
        return tuple(self.found[f] for f in model_files(config) if f in self.found)
