"""The files a configuration's command line names, put on the box beside its unit or script.

Why: SGLang's adaptive mode reads its schedule from a file (``--speculative-adaptive-config
PATH``), so a schedule trial deploys two things — the unit (or launch script) and that file.
The engine says which files a configuration needs and renders their path in
``ServerConfig.side_dir`` (``Engine.side_files``); every backend keeps them in one folder of its
own (:func:`folder_for`: beside the secrets' environment file for a systemd unit, in the run
folder for a script or a container, which mounts it read-only), writes them before the
artifact that names them, and shows them in the deploy's diff — so the trial's record keeps
the file's text next to the unit's. Names are content-addressed: a new schedule is a new file
(and a new artifact hash), an old unit restored by a rollback still finds its own, and
nothing is overwritten in place.
"""

from __future__ import annotations

import dataclasses
import shlex

from specconsole.core.config.model import ServerConfig
from specconsole.core.engine.registry import EngineNotFound, engine_for
from specconsole.core.engine.schedule import SideFile
from specconsole.core.ports import Transport, TransportError
from specconsole.remote.artifact import unified_diff

__all__ = ["ask_side_dir", "folder_for", "install", "placed", "side_diff", "side_files"]

FOLDER = "files"
"""The side files' folder name under a backend's run folder (``UNIT-files`` for systemd)."""


def folder_for(base: str, name: str = FOLDER) -> str:
    """The side files' folder under ``base`` (an absolute folder on the box)."""
    return f"{base.rstrip('/')}/{name}"


def side_files(config: ServerConfig) -> tuple[SideFile, ...]:
    """What ``config``'s engine says its command line needs beside it (``()``: nothing)."""
    try:
        return engine_for(config).side_files(config)
    except EngineNotFound:
        return ()


def placed(config: ServerConfig, folder: str) -> ServerConfig:
    """``config`` rendering its side files' paths in ``folder`` (the controller sets it for
    every trial; a backend asked directly sets its own)."""
    if config.side_dir is not None:
        return config
    return dataclasses.replace(config, side_dir=folder)


async def side_diff(transport: Transport, config: ServerConfig, *, sudo: bool = False) -> str:
    """The unified diff the side files would make on the box ('' when they are there)."""
    out = []
    for file in side_files(config):
        path = f"{config.side_dir}/{file.name}"
        data = await transport.read_file(path, sudo=sudo)
        current = None if data is None else data.decode("utf-8", "replace")
        out.append(unified_diff(current, file.text, path))
    return "".join(out)


async def install(transport: Transport, config: ServerConfig, *, sudo: bool = False) -> None:
    """Write ``config``'s side files in ``config.side_dir`` (made if missing; 0644: the server
    may run as another user) before the artifact that names them."""
    files = side_files(config)
    if not files:
        return
    folder = config.side_dir
    if not folder:
        raise TransportError("the configuration names side files but no folder on the box")
    made = await transport.run(f"mkdir -p -- {shlex.quote(folder)}", sudo=sudo)
    if not made.ok:
        raise TransportError(f"cannot create {folder}: {made.stderr.strip()}; nothing changed")
    for file in files:
        path = f"{folder}/{file.name}"
        if await transport.read_file(path, sudo=sudo) == file.text.encode():
            continue  # content-addressed: the same name holds the same text
        await transport.upload(file.text.encode(), path, mode=0o644, sudo=sudo)


async def ask_side_dir(backend: object) -> str | None:
    """The backend's side-file folder (None: it keeps none, or the box did not say — the
    deploy asks again and reports the box's own words)."""
    ask = getattr(backend, "side_dir", None)
    if ask is None:
        return None
    try:
        return await ask()
    except Exception:
        return None
