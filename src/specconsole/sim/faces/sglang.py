"""The simulator's SGLang face: SGLang's flags, log, API and death on the box.

Why a thin module: SGLang was the simulator's first engine, and its pieces keep their homes —
argument rules in :mod:`specconsole.sim.args` / :mod:`specconsole.sim.physics.resolve`, texts in
:mod:`specconsole.sim.faces.sglang_log`, the server's life in
:mod:`specconsole.sim.faces.sglang_server`, routes in
:mod:`specconsole.sim.faces.sglang_http`. This module binds them into the :class:`~.Face` the
process
asks for; what the SGLang face does is unchanged by the faces existing.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from specconsole.core.config.model import ServerConfig
from specconsole.sim.args import (
    ParsedArgs,
    SimArgError,
    argv_from_server_config,
    imitated_engine,
    in_context,
    parse_argv,
)
from specconsole.sim.faces import sglang_log as logfmt
from specconsole.sim.faces.sglang_server import LOG_LEVELS, LogWriter, SimServer
from specconsole.sim.physics.model import MemoryPlan, calibration_config, plan_memory
from specconsole.sim.physics.resolve import ResolvedArgs, resolve
from specconsole.sim.profile import Profile, default_profile_path

if TYPE_CHECKING:
    from starlette.applications import Starlette

    from specconsole.sim.box import SimBox, SimOptions

__all__ = ["FACE", "SGLangFace"]


class SGLangFace:
    """SGLang (``python -m sglang.launch_server``), as the box shows it."""

    engine = imitated_engine().name
    ready_text = logfmt.READY
    steps_word = "steps"
    calibration_steps = 10

    def calibration(self, profile: Profile, steps: int) -> ServerConfig:
        return calibration_config(profile, steps)

    def words(self, config: ServerConfig) -> list[str]:
        return argv_from_server_config(config)

    def plan(self, args: ResolvedArgs, profile: Profile) -> MemoryPlan:
        return plan_memory(args, profile)

    def parse(self, words: Sequence[str]) -> ParsedArgs:
        return parse_argv(words)

    def default_profile(self) -> str:
        return str(default_profile_path())

    def with_release(self, parsed: ParsedArgs, profile: Profile) -> Profile:
        version = parsed.values.get("sim_engine_version")
        if not version:  # the release it plays: /server_info, log wording
            return profile
        return dataclasses.replace(profile, sim=dataclasses.replace(profile.sim, version=version))

    def writer(self, parsed: ParsedArgs, profile: Profile) -> LogWriter:
        return LogWriter(int(parsed.values.get("tp_size") or 1))

    def context(
        self, parsed: ParsedArgs, env: Mapping[str, str], read: Callable[[str], str | None]
    ) -> ParsedArgs:
        return in_context(parsed, env, read)

    def resolve(self, parsed: ParsedArgs, profile: Profile) -> ResolvedArgs:
        return resolve(parsed, profile)

    def refused(self, log: Any, exc: SimArgError) -> int:
        log.raw(logfmt.argument_error_traceback(exc.exception_type, str(exc)))
        return 1

    def started(self, log: Any, args: ResolvedArgs) -> None:
        log.min_level = LOG_LEVELS.get(args.log_level.lower(), logging.INFO)
        for warning in args.warnings:
            log.main(warning, level=logging.WARNING)

    def bind_failed(self, log: Any, args: ResolvedArgs, exc: OSError) -> int:
        log.raw(
            logfmt.prefix() + f"ERROR:    [Errno {exc.errno}] error while attempting to "
            f"bind on address ({args.host!r}, {args.port}): {exc.strerror}"
        )
        return 1

    def server(
        self,
        args: ResolvedArgs,
        parsed: ParsedArgs,
        profile: Profile,
        opts: SimOptions,
        log: Any,
    ) -> SimBox:
        return SimServer(args, parsed, profile, opts, log)

    def app(self, sim: SimBox) -> Starlette:
        from specconsole.sim.faces.sglang_http import build_app

        assert isinstance(sim, SimServer)
        return build_app(sim)


FACE = SGLangFace()
"""The SGLang face the table (:data:`specconsole.sim.facetable.FACES`) hands out."""
