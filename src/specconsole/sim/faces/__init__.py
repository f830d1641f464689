"""The simulator's faces: what the simulated box says, per engine it imitates.

Why: the box (:mod:`specconsole.sim.box`, the physics in :mod:`specconsole.sim.physics`) is
one; the engines it imitates speak differently — SGLang's flags, log lines, ``/server_info``
and ``/generate``; vLLM's ``vllm serve MODEL``, its V1 start-up and statistics lines,
``/version`` and ``/metrics`` counters. Each face is a package here holding everything it
imitates — its argument reading, its resolution onto the box (a neutral
:class:`~specconsole.sim.physics.launch.ResolvedArgs` the physics runs), its log lines and
fatal texts, its HTTP surface, its statistics lines — laid out alike: ``face.py`` (the
:class:`Face` below), ``args.py``, ``server.py``, ``http.py`` and its texts. The physics never
imports a face. A face is found by the registered name of the engine it imitates, in the
simulator's registry (:data:`specconsole.sim.facetable.FACES`: adding a face is a package
here and a line there), and reaches that engine through the engine registry
(``get_engine(face.engine)``) for the engine's own knowledge — its flags, its reverse parse,
its rules, its counters.

The command line picks the face by its first word: ``python -m specconsole.sim vllm serve
MODEL ...`` is vLLM's face (the engine that claims the program ``vllm``); without an engine
word, the SGLang face reads SGLang's flags (``python -m specconsole.sim --model-path ...``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from starlette.applications import Starlette

    from specconsole.core.config.model import ServerConfig
    from specconsole.sim.arguments import ParsedArgs, SimArgError
    from specconsole.sim.box import SimBox, SimOptions
    from specconsole.sim.physics.launch import ResolvedArgs
    from specconsole.sim.profile import Profile

__all__ = ["Face"]


class Face(Protocol):
    """What the process (:mod:`specconsole.sim.process`) asks of a face, in the order of a
    start: read the arguments, pick the profile and the log, resolve, then build the server
    (a :class:`~specconsole.sim.box.SimBox`) and its HTTP application."""

    engine: str
    """The registered name of the engine it imitates."""
    ready_text: str
    """The line that says the server serves (the tests' fixture waits for it)."""
    steps_word: str
    """What its users call the draft length (``steps``, ``K``): ``sim predict``'s rows."""
    calibration_steps: int
    """The draft lengths its calibration sweep covers (1 .. this)."""

    def calibration(self, profile: Profile, steps: int) -> ServerConfig:
        """The profile's reference launch at draft length ``steps``, as this engine's
        configuration (``sim predict --calibration``)."""
        ...

    def words(self, config: ServerConfig) -> list[str]:
        """The words after the engine word a deployed ``config`` gives the simulator (the
        engine's own rendering, through the registry)."""
        ...

    def parse(self, words: Sequence[str]) -> ParsedArgs:
        """The words after the engine word; raises ``SimArgError`` (an argparse refusal:
        printed to stderr, exit 2)."""
        ...

    def default_profile(self) -> str:
        """The profile it runs without ``--sim-profile``."""
        ...

    def with_release(self, parsed: ParsedArgs, profile: Profile) -> Profile:
        """``profile`` playing the release the arguments ask for (``--sim-engine-version``)."""
        ...

    def writer(self, parsed: ParsedArgs, profile: Profile) -> Any:
        """Its log writer (records in its format, flushed per record)."""
        ...

    def context(
        self, parsed: ParsedArgs, env: Mapping[str, str], read: Callable[[str], str | None]
    ) -> ParsedArgs:
        """``parsed`` with what the launch's surroundings add: the environment's benchmark
        knobs (SGLang's ``SGLANG_SIMULATE_ACC_LEN``) and the files its flags name (SGLang's
        adaptive config; ``read(path)``: the text, None when it cannot be read). The process
        passes its own environment and disk; :mod:`specconsole.sim.forecast` a configuration's
        ``env`` and its engine's side files. Raises ``SimArgError`` as the engine would."""
        ...

    def resolve(self, parsed: ParsedArgs, profile: Profile) -> ResolvedArgs:
        """The effective launch by its rules, in the physics' words (the memory order, the
        draft length per batch size... included); raises ``SimArgError``."""
        ...

    def refused(self, log: Any, exc: SimArgError) -> int:
        """Print what the engine prints when it refuses an argument; the exit code."""
        ...

    def started(self, log: Any, args: ResolvedArgs) -> None:
        """The lines printed before the port is bound (argument warnings, its banner)."""
        ...

    def bind_failed(self, log: Any, args: ResolvedArgs, exc: OSError) -> int:
        """The port could not be bound: what the engine prints; the exit code."""
        ...

    def server(
        self,
        args: ResolvedArgs,
        parsed: ParsedArgs,
        profile: Profile,
        opts: SimOptions,
        log: Any,
    ) -> SimBox: ...

    def app(self, sim: SimBox) -> Starlette:
        """Its HTTP routes over the box."""
        ...
