"""Ask the box's own server binary which flags it accepts (its ``--help``), once per binary.

Why: flags change between builds faster than any release table (llama.cpp removed
``--draft-max`` and exits 1 on it; a source build says "build 0, commit unknown"), so the
binary on the box is asked. Its answer (:class:`~specconsole.core.config.capabilities.FlagSet`)
goes on every configuration before it is validated, rendered and deployed
(``ServerConfig.box_flags``): renderers pick the spellings it has, and validation refuses —
before anything is deployed — a configuration needing a flag it lacks, naming the
``[server]`` key and the fix. The answer is cached per binary fingerprint (its hash, from
``Engine.fingerprint_command``) in the session folder (``flags/``), so a resumed session, or
a second configuration of the same binary, asks nothing again.

:func:`check_box_flags` is the check on its own — the pre-flight before a session's first
deploy calls it; :class:`FlagSetKeeper` is what the controller holds (through its engine
version keeper). Neither ever fails a sweep: a box that cannot be asked (no such binary yet, a
launcher whose help cannot be read, no answer in time, a help in another layout — hard-wrapped,
or listing none of the engine's port flags: :func:`~specconsole.core.config.capabilities.
help_trouble`) is checked by the release tables only, and the reason is kept.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import shlex
from dataclasses import dataclass, field, replace
from pathlib import Path

from specconsole.core.config.capabilities import (
    MAX_HELP_CHARS,
    FlagSet,
    flag_issues,
    help_trouble,
    parse_help,
)
from specconsole.core.config.issues import Issue
from specconsole.core.config.model import ServerConfig
from specconsole.core.config.render import launcher_argv
from specconsole.core.engine.registry import engine_for
from specconsole.core.ports import Transport, TransportError

__all__ = [
    "HELP_BUDGET_S",
    "BoxFlags",
    "FlagSetKeeper",
    "check_box_flags",
    "read_box_flags",
    "refused_help",
    "unread_reason",
]

HELP_BUDGET_S = 60.0
"""How long the binary is given to print its help (SGLang's imports torch first)."""


@dataclass(frozen=True)
class BoxFlags:
    """What the box's binary said, or why it could not be asked."""

    flags: FlagSet | None
    detail: str
    """``llama-server --help (cached)``, or the reason there is no answer."""
    fingerprint: str = ""
    refused: bool = False
    """The binary printed a help that was not trusted (another layout, no flags): what the
    box said was refused, which each trial's record keeps (:func:`refused_help`)."""


def _cache_file(cache_dir: Path, engine: str, launcher: list[str], fingerprint: str) -> Path:
    key = hashlib.sha256("\0".join([engine, *launcher, fingerprint]).encode()).hexdigest()
    return cache_dir / f"{engine}-{key[:16]}.json"


async def _run(transport: Transport, command: str, config: ServerConfig, timeout: float) -> str:
    if config.working_directory:
        command = f"cd {shlex.quote(config.working_directory)} && {command}"
    result = await transport.run(command, timeout=timeout)
    return result.stdout + result.stderr if result.ok else ""


async def read_box_flags(
    transport: Transport,
    config: ServerConfig,
    *,
    cache_dir: Path | None = None,
    timeout: float = HELP_BUDGET_S,
) -> BoxFlags:
    """The flags of the binary ``config``'s launcher starts on the box; never raises (but
    a cancel): an answer that cannot be had is ``BoxFlags(None, why)``."""
    engine = engine_for(config)
    try:
        launcher = launcher_argv(config)
    except Exception as exc:  # a launcher that does not split: validation says so
        return BoxFlags(None, f"the launcher cannot be read: {exc}")
    argv = engine.help_command(launcher)
    if argv is None:
        return BoxFlags(None, f"{engine.title}'s --help is not asked")
    shown = shlex.join(argv)
    fingerprint = ""
    probe = engine.fingerprint_command(launcher)
    try:
        async with asyncio.timeout(timeout + 5.0):
            if probe is not None:
                fingerprint = (await _run(transport, probe, config, timeout)).strip()
            cached = _read_cache(cache_dir, engine.name, launcher, fingerprint)
            if cached is not None:
                return BoxFlags(cached, f"{shown} (cached for this binary)", fingerprint)
            text = await _run(transport, shown, config, timeout)
    except TimeoutError:
        return BoxFlags(None, f"{shown}: no answer within {timeout:g} s", fingerprint)
    except TransportError as exc:
        return BoxFlags(None, f"{shown}: the box could not be asked ({exc})", fingerprint)
    flags = parse_help(text[:MAX_HELP_CHARS], source=shown)
    if flags is None:
        first = (text.strip().splitlines() or ["no output"])[0][:120]
        return BoxFlags(None, f"{shown} printed no flags ({first!r})", fingerprint, refused=True)
    anchors = [flag for flag, key in engine.modelled_flags.items() if key == "port"]
    if trouble := help_trouble(text, flags, anchors):
        why = f"{shown} printed a help in another layout ({trouble})"
        return BoxFlags(None, why, fingerprint, refused=True)
    _write_cache(cache_dir, engine.name, launcher, fingerprint, flags)
    return BoxFlags(flags, shown, fingerprint)


def _read_cache(
    cache_dir: Path | None, engine: str, launcher: list[str], fingerprint: str
) -> FlagSet | None:
    if cache_dir is None or not fingerprint:
        return None
    try:
        data = json.loads(_cache_file(cache_dir, engine, launcher, fingerprint).read_text())
    except (OSError, ValueError):
        return None
    return FlagSet.from_dict(data) if isinstance(data, dict) else None


def _write_cache(
    cache_dir: Path | None, engine: str, launcher: list[str], fingerprint: str, flags: FlagSet
) -> None:
    if cache_dir is None or not fingerprint:
        return
    with contextlib.suppress(OSError):  # a cache that cannot be written costs one more ask
        cache_dir.mkdir(parents=True, exist_ok=True)
        path = _cache_file(cache_dir, engine, launcher, fingerprint)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps({**flags.to_dict(), "fingerprint": fingerprint}, indent=1))
        tmp.replace(path)


async def check_box_flags(
    transport: Transport, config: ServerConfig, *, cache_dir: Path | None = None
) -> tuple[BoxFlags, list[Issue]]:
    """The pre-flight's flag check: what the box's binary accepts, and every flag ``config``
    needs that it lacks (errors naming the ``[server]`` key and the fix; none when the
    binary could not be asked)."""
    found = await read_box_flags(transport, config, cache_dir=cache_dir)
    if found.flags is None:
        return found, []
    return found, flag_issues(replace(config, box_flags=found.flags))


@dataclass
class FlagSetKeeper:
    """Asks each launcher's binary once (bounded) and puts its flags on configurations."""

    transport: Transport
    cache_dir: Path | None = None
    found: dict[tuple[str, ...], BoxFlags] = field(default_factory=dict)

    @staticmethod
    def _key(config: ServerConfig) -> tuple[str, ...]:
        try:
            return (config.engine, *launcher_argv(config), config.working_directory or "")
        except Exception:
            return (config.engine, config.launcher)

    async def ensure(self, config: ServerConfig) -> BoxFlags:
        """Ask (once per launcher) and remember; never raises (but a cancel)."""
        key = self._key(config)
        known = self.found.get(key)
        if known is None:
            try:
                known = await read_box_flags(self.transport, config, cache_dir=self.cache_dir)
            except Exception as exc:  # never fails a sweep: the release tables still check
                known = BoxFlags(None, f"{type(exc).__name__}: {exc}")
            self.found[key] = known
        return known

    def apply(self, config: ServerConfig) -> ServerConfig:
        """``config`` with its binary's flags (unchanged when they are not known)."""
        known = self.found.get(self._key(config))
        if known is None or known.flags is None or config.box_flags is not None:
            return config
        return replace(config, box_flags=known.flags)


def refused_help(keeper: FlagSetKeeper | None, config: ServerConfig) -> str:
    """For a trial's record: why the help ``config``'s binary printed was not trusted ('' when
    it was, or could not be asked at all: the pre-flight says that)."""
    if keeper is None:
        return ""
    known = keeper.found.get(keeper._key(config))
    return unread_reason(keeper, config) if known is not None and known.refused else ""


def unread_reason(keeper: FlagSetKeeper | None, config: ServerConfig) -> str:
    """For the pre-flight: why the flags of ``config``'s binary are not known ('' when they
    are, or were not asked). A configuration the binary refuses is the configuration check's
    finding already (it validates with ``box_flags``); this only says a check did not run."""
    if keeper is None:
        return ""
    known = keeper.found.get(keeper._key(config))
    if known is None or known.flags is not None:
        return ""
    return (
        f"--help not trusted: the engine's rules only — the server binary's own flags could "
        f"not be read ({known.detail}); its flags are checked by the engine's rules only"
    )
