"""Ask the box which engine release it runs, before the first deploy.

Why: flag names change between releases (each engine's release table); a configuration
without ``[server] engine_version`` is rendered in the names of the release the box actually
has. The launcher's own interpreter is asked what the engine says it should be
(``Engine.detect_command``: for SGLang ``python -c "import sglang; print(sglang.__version__)"``,
in the configuration's working directory), so a virtualenv launcher answers for its own
install; when that fails (a container image, ``sglang serve`` without a Python path) the
server the box runs now is asked (``/server_info``, through the box probe, before trial 1 is
rendered). Only when nothing serves either is the release unknown: trials are then deployed
with the flags every release the engine vouches for accepts
(``core.config.effective.portable``, said as a notice and in the trial's warnings) until the
server a trial started reports its release (``Engine.release_from_server_info``).

:class:`EngineVersionKeeper` is what the controller holds: it asks once, within a time budget,
never raises (an impossible detection is ``unknown`` with the reason, and the sweep goes on
with portable flags), lets ``[server] engine_version`` win over any detection, and fills the
version into each configuration before it is validated, rendered and deployed (the trial's
own configuration, its identity in the session, is left as planned).
"""

from __future__ import annotations

import asyncio
import shlex
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from specconsole.core.config.effective import portable
from specconsole.core.config.model import ServerConfig, effective_launcher
from specconsole.core.engine.registry import default_engine, engine_for, get_engine
from specconsole.core.machine.events import ConfigValidated
from specconsole.core.ports import Transport, TransportError

if TYPE_CHECKING:
    from specconsole.controller.probe.flagcheck import FlagSetKeeper

__all__ = [
    "EngineVersionInfo",
    "EngineVersionKeeper",
    "detect_engine_version",
    "launcher_python",
    "noted",
    "probe_engine_version",
    "recorded_engine_version",
    "version_from_server_info",
]

ServerInfoCall = Callable[[ServerConfig], Awaitable[Any]]
"""``/server_info``'s JSON body of the server serving a configuration's port."""

UNVERSIONED = "unversioned"
"""The source of an engine whose flags follow no release number (llama.cpp: its build says
"build 0"; the binary's ``--help`` decides, ``controller.probe.flagcheck``): never "unknown"."""

DETECT_BUDGET_S = 20.0
"""How long the box is given to answer before the version is recorded as unknown."""


_SYSTEM_BINS = ("/bin/", "/sbin/", "/usr/bin/", "/usr/sbin/", "/usr/local/bin/")
"""Folders whose programs run on the system's own ``python3``."""


def launcher_python(config: ServerConfig) -> str:
    """The interpreter that runs the launcher (``/opt/sglang/.venv/bin/python``); for a
    program installed in an environment's ``bin`` folder (``/opt/vllm/.venv/bin/vllm
    serve``: a console script) that environment's ``python3``; else ``python3``."""
    words = shlex.split(effective_launcher(config))
    for word in words:
        if word.rsplit("/", 1)[-1].startswith("python"):
            return word
    program = words[0] if words else ""
    folder = program.rpartition("/")[0]
    in_environment = folder.endswith("/bin") and not program.startswith(_SYSTEM_BINS)
    if program.startswith("/") and in_environment:
        return f"{folder}/python3"
    return "python3"


async def probe_engine_version(
    transport: Transport, config: ServerConfig, *, timeout: float = DETECT_BUDGET_S
) -> tuple[str | None, str]:
    """(the engine's release on the box, how it was told or why it could not be)."""
    engine = engine_for(config)
    python = launcher_python(config)
    argv = engine.detect_command(python)
    if argv is None:
        return None, f"not detected for engine {engine.name}"
    command = shlex.join(argv)
    if config.working_directory:
        command = f"cd {shlex.quote(config.working_directory)} && {command}"
    try:
        result = await transport.run(command, timeout=timeout)
    except TransportError as exc:
        return None, f"the box could not be asked: {exc}"
    if not result.ok:
        last = (result.stderr.strip().splitlines() or ["no output"])[-1][:200]
        return None, f"{_shown(argv)} failed: {last}"
    version = engine.parse_release(result.stdout)
    if version is None:
        return None, f"{python} printed no release number: {result.stdout.strip()[:80]!r}"
    return version, _shown(argv)


def _shown(argv: list[str]) -> str:
    """How a detection command is named in messages: ``PYTHON -c 'import sglang'``."""
    if len(argv) >= 3 and argv[1] == "-c":
        first = argv[2].split(";", 1)[0].strip().splitlines()[0]
        return f"{argv[0]} -c '{first}'"
    return shlex.join(argv)


async def detect_engine_version(transport: Transport, config: ServerConfig) -> str | None:
    """The engine's release on the box through ``transport``; ``None`` when it cannot be told."""
    return (await probe_engine_version(transport, config))[0]


def version_from_server_info(body: Any, config: ServerConfig | None = None) -> str | None:
    """The release the running server of ``config`` (default: the default engine's) reports,
    when it is a release number."""
    engine = engine_for(config) if config is not None else get_engine(default_engine())
    return engine.release_from_server_info(body)


@dataclass(frozen=True)
class EngineVersionInfo:
    """The release a session runs and where that came from."""

    version: str | None
    source: str
    """``declared`` (``[server] engine_version``), ``detected`` (the launcher's interpreter),
    ``server_info`` (the running server's ``/server_info``) or ``unknown``."""
    detail: str = ""

    def note(self, *, started: bool, preflight: bool = False) -> str:
        """What this release means for the trials, said once ('' when nothing): unknown →
        portable flags (before trial 1 the pre-flight says it, when it runs); learnt from a
        trial's server after trials began → later trials."""
        if self.source == UNVERSIONED or (self.version is None and preflight and not started):
            return ""
        if self.version is None:
            return (
                f"the engine release on the box is not known ({self.detail}): until a server "
                "reports it, trials are deployed only with flags every release accepts"
            )
        if self.source == "server_info" and started:
            return f"the box runs release {self.version} (/server_info): later trials use its flags"
        return ""

    def meta(self) -> dict[str, str]:
        """The fields recorded in the session's ``[session]`` table."""
        return {
            "engine_version": self.version or "unknown",
            "engine_version_source": self.source,
            "engine_version_detail": self.detail,
        }


def recorded_engine_version(meta: Any) -> EngineVersionInfo | None:
    """The release a session found earlier (its ``[session]`` table), or None when it found
    none: a resumed sweep keeps deploying in the names its trials were deployed in, so the
    server it left running is recognised and reattached (not redeployed)."""
    if not isinstance(meta, dict):
        return None
    version = meta.get("engine_version")
    source = meta.get("engine_version_source")
    if not isinstance(version, str) or version in ("", "unknown"):
        return None
    if source not in ("detected", "server_info"):
        return None  # declared versions come from the plan itself
    detail = str(meta.get("engine_version_detail", ""))
    return EngineVersionInfo(version, source, f"{detail} (recorded in the session)".strip())


class EngineVersionKeeper:
    """Resolves the box's release once, bounded in time, and applies it to configurations."""

    def __init__(
        self,
        transport: Transport,
        *,
        budget_s: float = DETECT_BUDGET_S,
        on_change: Callable[[EngineVersionInfo], None] | None = None,
    ) -> None:
        self.transport = transport
        self.budget_s = budget_s
        self.on_change = on_change
        self.info: EngineVersionInfo | None = None
        self.flags: FlagSetKeeper | None = None
        """The box's binary's own flags (its ``--help``, ``controller.probe.flagcheck``), asked with
        the release and applied with it."""

    async def ensure(
        self,
        config: ServerConfig | None,
        *,
        running: ServerConfig | None = None,
        server_info: ServerInfoCall | None = None,
    ) -> EngineVersionInfo | None:
        """Resolve for ``config`` unless already resolved; never raises (but a cancel).
        When the launcher cannot say and ``running`` (the configuration a server serves
        now) is given, that server's ``server_info`` is asked before giving up, so trial 1
        is rendered for the box's release."""
        if self.flags is not None and config is not None:
            await self.flags.ensure(config)
        if self.info is not None or config is None:
            return self.info
        if config.engine_version:
            info = EngineVersionInfo(config.engine_version, "declared", "[server] engine_version")
        elif not (table := engine_for(config).releases).changes and not table.known:
            title = engine_for(config).title
            detail = f"{title} keeps no release table: the box's binary's own --help decides"
            info = EngineVersionInfo(None, UNVERSIONED, detail)
        else:
            try:
                async with asyncio.timeout(self.budget_s + 1.0):
                    version, detail = await probe_engine_version(
                        self.transport, config, timeout=self.budget_s
                    )
            except TimeoutError:
                version, detail = None, f"no answer within {self.budget_s:g} s"
            except Exception as exc:  # never fails a sweep: the deploy reports the box itself
                version, detail = None, f"{type(exc).__name__}: {exc}"
            info = EngineVersionInfo(version, "detected" if version else "unknown", detail)
            if version is None and running is not None and server_info is not None:
                asked = await self._ask_running(running, server_info)
                if isinstance(asked, EngineVersionInfo):
                    info = asked
                elif asked:  # why the running server's answer could not be read
                    info = replace(info, detail=f"{info.detail}; {asked}")
        self._set(info)
        return info

    async def _ask_running(
        self, running: ServerConfig, server_info: ServerInfoCall
    ) -> EngineVersionInfo | str:
        """The release the server serving ``running`` reports (bounded), or why it told
        none ('' when it was not asked)."""
        try:
            async with asyncio.timeout(self.budget_s):
                body = await server_info(running)
        except TimeoutError:
            return f"the running server gave no answer within {self.budget_s:g} s"
        except Exception as exc:  # no answer is an answer: the release stays unknown
            return f"the running server's answer: {str(exc)[:200] or type(exc).__name__}"
        if body is None:
            return ""
        version = version_from_server_info(body, running)
        if version is None:
            return "the running server's answer names no release number"
        return EngineVersionInfo(version, "server_info", "/server_info of the server running now")

    def server_info_refused(self, reason: str) -> None:
        """A running server's answer that was not read (a proxy's HTML where ``/server_info``
        or ``/version`` should be): while the release is unknown, its detail says so (once),
        so the session records why it stayed unknown."""
        info = self.info
        if info is None or info.version is not None or info.source == UNVERSIONED:
            return
        said = f"the running server's answer: {reason[:200]}"
        if said not in info.detail:
            self._set(replace(info, detail=f"{info.detail}; {said}" if info.detail else said))

    def from_server_info(self, body: Any, config: ServerConfig | None = None) -> None:
        """Take ``/server_info``'s ``version`` when the release is still unknown."""
        if self.info is not None and self.info.version is not None:
            return
        version = version_from_server_info(body, config)
        if version is not None:
            self._set(EngineVersionInfo(version, "server_info", "/server_info version"))

    @property
    def unknown(self) -> bool:
        """The box was asked and could not say (trials then get portable flags)."""
        info = self.info
        return info is not None and info.version is None and info.source != UNVERSIONED

    def apply(self, config: ServerConfig) -> ServerConfig:
        """``config`` in the names of the known release (its own ``engine_version`` wins);
        while the release is unknown, only with flags every release accepts; with the
        flags its binary accepts when it was asked."""
        if self.flags is not None:
            config = self.flags.apply(config)
        info = self.info
        if config.engine_version or info is None:
            return config
        if info.version is None:
            return portable(config)[0]
        return replace(config, engine_version=info.version)

    def portable_note(self, config: ServerConfig) -> str:
        """What :meth:`apply` leaves out of ``config`` while the release is unknown, as a
        sentence ('' when nothing)."""
        return portable(config)[1] if self.unknown else ""

    def _set(self, info: EngineVersionInfo) -> None:
        self.info = info
        if self.on_change is not None:
            self.on_change(info)


def noted(keeper: EngineVersionKeeper | None, outcome: Any, config: ServerConfig) -> Any:
    """A validation ``outcome`` of ``keeper.apply(config)`` with what the keeper left out of
    ``config`` (an unknown release) and why its binary's help was not trusted among its
    warnings, so the trial's record keeps them."""
    if keeper is None or not isinstance(outcome, ConfigValidated):
        return outcome
    from specconsole.controller.probe.flagcheck import refused_help  # as FlagSetKeeper: lazily

    notes = [n for n in (keeper.portable_note(config), refused_help(keeper.flags, config)) if n]
    return replace(outcome, warnings=(*outcome.warnings, *notes)) if notes else outcome
