"""The simulator's vLLM face: ``vllm serve MODEL`` on the box, as vLLM 0.11.0 or 0.34.0.

Why: a vLLM user's sweep must be exercised end to end like SGLang's — a process started with
vLLM's flags, vLLM V1's log followed line by line (the API server's and the engine core's
records, its KV-cache and concurrency lines, ``Application startup complete.``, the periodic
``Engine 000`` and ``SpecDecoding metrics`` statistics), its deaths (the engine core's
traceback, the front end's ``Engine core initialization failed``, exit 1), and its HTTP
surface. The physics is the box's; the face's pieces each have their home in this package:
the command line read by the vLLM engine's own reverse parse and resolved by vLLM's rules
(:mod:`.args`), the server's life (:mod:`.server`), the releases' own texts (:mod:`.text`,
:mod:`.fatal`), the routes (:mod:`.http`). This module binds them into the
:class:`~specconsole.sim.faces.Face` the process asks for.

The release played is ``--sim-engine-version`` (default 0.34.0, the newest checked).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from specconsole.core.config.model import ServerConfig
from specconsole.core.config.releases import has_feature
from specconsole.core.engine.registry import get_engine
from specconsole.paths import examples_dir
from specconsole.sim.arguments import ParsedArgs, SimArgError
from specconsole.sim.box import SimBox, SimOptions
from specconsole.sim.faces.vllm import fatal
from specconsole.sim.faces.vllm.args import VLLM, help_text, parse_vllm, resolve_vllm
from specconsole.sim.faces.vllm.server import VllmLog, VllmServer
from specconsole.sim.faces.vllm.text import RELEASES, SOURCES, text_for
from specconsole.sim.physics.launch import ResolvedArgs
from specconsole.sim.profile import Profile

if TYPE_CHECKING:
    from starlette.applications import Starlette

__all__ = ["DEFAULT_RELEASE", "FACE", "PROFILE_NAME", "VllmFace"]

DEFAULT_RELEASE = "0.34.0"
"""The release played without ``--sim-engine-version``."""

PROFILE_NAME = "llama3.1-8b-eagle3-1xh100-vllm.toml"
"""The packaged profile the face runs without ``--sim-profile`` (examples/sim/)."""


class VllmFace:
    """vLLM (``vllm serve MODEL``), as the box shows it."""

    engine = VLLM
    ready_text = "Application startup complete."
    steps_word = "K"
    calibration_steps = 8

    def calibration(self, profile: Profile, steps: int) -> ServerConfig:
        """``vllm serve`` of the profile's model with its EAGLE-3 draft drafting ``steps``
        tokens, at the reference launch's memory, sequences and tensor parallelism."""
        ref = profile.reference_launch
        return ServerConfig(
            model_path=profile.model.name,
            engine=VLLM,
            launcher="vllm serve",
            method=ref.algorithm.lower(),
            speculative_model=profile.model.draft_name,
            num_speculative_tokens=steps,
            gpu_memory_utilization=ref.mem_fraction_static,
            max_num_seqs=ref.max_running_requests,
            tensor_parallel_size=ref.tp_size,
        )

    def words(self, config: ServerConfig) -> list[str]:
        return ["serve", *get_engine(VLLM).render_flags(config, ["vllm", "serve"])]

    def _release(self, parsed: ParsedArgs) -> str:
        return str(parsed.values.get("release") or DEFAULT_RELEASE)

    def parse(self, words: Sequence[str]) -> ParsedArgs:
        if any(w in ("-h", "--help") or w.startswith("--help=") for w in words):
            print(help_text(), end="")  # vllm serve --help=all: every flag it accepts
            raise SystemExit(0)
        release = DEFAULT_RELEASE
        for i, word in enumerate(words):
            if word.startswith("--sim-engine-version"):
                _, eq, value = word.partition("=")
                release = value if eq else (words[i + 1] if i + 1 < len(words) else "")
        if release not in RELEASES:
            raise SimArgError(
                f"--sim-engine-version: the vLLM face plays {', '.join(RELEASES)}, not {release!r}"
            )
        synthetic = has_feature(get_engine(VLLM).releases, "synthetic_acceptance", release)
        parsed = parse_vllm(words, release, "schedule" in SOURCES[release], bool(synthetic))
        return ParsedArgs(values={**parsed.values, "release": release}, unknown=parsed.unknown)

    def default_profile(self) -> str:
        return str(examples_dir() / "sim" / PROFILE_NAME)

    def with_release(self, parsed: ParsedArgs, profile: Profile) -> Profile:
        return dataclasses.replace(
            profile, sim=dataclasses.replace(profile.sim, version=self._release(parsed))
        )

    def writer(self, parsed: ParsedArgs, profile: Profile) -> VllmLog:
        return VllmLog(text_for(self._release(parsed)))

    def context(
        self, parsed: ParsedArgs, env: Mapping[str, str], read: Callable[[str], str | None]
    ) -> ParsedArgs:
        return parsed  # its what-if and its schedule are inside --speculative-config

    def resolve(self, parsed: ParsedArgs, profile: Profile) -> ResolvedArgs:
        return resolve_vllm(parsed, profile, self._release(parsed))

    def refused(self, log: Any, exc: SimArgError) -> int:
        fatal.refused(log, exc.exception_type, str(exc))
        return 1

    def started(self, log: Any, args: ResolvedArgs) -> None:
        fatal.banner(log, args)

    def bind_failed(self, log: Any, args: ResolvedArgs, exc: OSError) -> int:
        fatal.refused(log, "OSError", f"[Errno {exc.errno}] {exc.strerror}")
        return 1

    def server(
        self,
        args: ResolvedArgs,
        parsed: ParsedArgs,
        profile: Profile,
        opts: SimOptions,
        log: Any,
    ) -> SimBox:
        return VllmServer(args, parsed, profile, opts, log, self._release(parsed))

    def app(self, sim: SimBox) -> Starlette:
        from specconsole.sim.faces.vllm.http import build_app  # starlette: only to serve

        assert isinstance(sim, VllmServer)
        return build_app(sim)


FACE = VllmFace()
"""The vLLM face the simulator's registry (:data:`specconsole.sim.facetable.FACES`) hands
out."""
