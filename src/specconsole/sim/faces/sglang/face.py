"""The simulator's SGLang face: SGLang's flags, log, API and death on the box.

Why a thin module: the face's pieces each have their home in this package — the command line
in :mod:`.args`, SGLang's rules onto the box in :mod:`.resolve` (its adaptive config file in
:mod:`.adaptive`), its texts in :mod:`.log`, the server's life in :mod:`.server` (its
statistics lines in :mod:`.steps`), its routes in :mod:`.http` (the native stream in
:mod:`.generate`). This module binds them into the :class:`~specconsole.sim.faces.Face` the
process asks for.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from specconsole.core.config.model import ServerConfig
from specconsole.sim.arguments import ParsedArgs, SimArgError
from specconsole.sim.faces.sglang import log as logfmt
from specconsole.sim.faces.sglang.args import (
    argv_from_server_config,
    imitated_engine,
    in_context,
    parse_argv,
)
from specconsole.sim.faces.sglang.resolve import resolve
from specconsole.sim.faces.sglang.server import LOG_LEVELS, LogWriter, SGLangServer
from specconsole.sim.physics.launch import ResolvedArgs
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
        """The seed sweep's launch at ``steps``: topk, tensor parallelism and memory flags
        from the profile's ``[reference_launch]``, draft tokens ``steps + 1``."""
        ref = profile.reference_launch
        return ServerConfig(
            model_path=profile.model.name,
            engine=self.engine,
            speculative_algorithm=ref.algorithm,
            speculative_draft_model_path=profile.model.draft_name,
            speculative_num_steps=steps,
            speculative_eagle_topk=ref.topk,
            speculative_num_draft_tokens=steps + 1,
            mem_fraction_static=ref.mem_fraction_static,
            cuda_graph_max_bs=ref.cuda_graph_max_bs,
            max_running_requests=ref.max_running_requests,
            tp_size=ref.tp_size,
        )

    def words(self, config: ServerConfig) -> list[str]:
        return argv_from_server_config(config)

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
        log.min_level = LOG_LEVELS.get(str(args.server_args["log_level"]).lower(), logging.INFO)
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
        return SGLangServer(args, parsed, profile, opts, log)

    def app(self, sim: SimBox) -> Starlette:
        from specconsole.sim.faces.sglang.http import build_app  # starlette: only to serve

        assert isinstance(sim, SGLangServer)
        return build_app(sim)


FACE = SGLangFace()
"""The SGLang face the simulator's registry (:data:`specconsole.sim.facetable.FACES`) hands
out."""
