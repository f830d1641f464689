"""What the box serves now, said in words: waiting for ``/health``, and naming the
configuration the deployed unit (or script) runs and where it came from.

Why its own module: every way out of a run — ``[sweep] finally``, ``specconsole rollback``,
a headless sweep that finished, paused, stopped on an error or was interrupted with Ctrl-C —
must tell the user the server's *real* state, not what the program meant to leave behind
("the server is left running" while it was down mid-restart; "restored BACKUP" naming a file
instead of the configuration that now runs). One place asks the box (the service's status,
``/health``, the hash and text of the deployed artifact) and matches the artifact against the
session's trial records, so each message names the configuration as the user knows it
(``trial 2: steps=4 draft=5``) or says it is the box's own unit from before the session.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence

from specconsole.controller.probe.boxprobe import running_config
from specconsole.core.config.model import ServerConfig
from specconsole.core.machine.results import box_host
from specconsole.core.machine.state import TrialRecord, TrialStatus
from specconsole.core.ports import (
    LocatedService,
    ServiceBackend,
    ServiceState,
    Transport,
    TransportError,
)
from specconsole.present.labels import config_summary, record_label

__all__ = ["HEALTH_POLL_S", "deployed_origin", "server_now", "unit_port", "wait_serving"]

HEALTH_POLL_S = 1.0
STATE_STEP_S = 20.0
"""How long a way out may spend asking the box for its state."""
DOWN_STATES = frozenset({ServiceState.FAILED, ServiceState.EXITED, ServiceState.INACTIVE})


async def wait_serving(
    transport: Transport,
    port: int,
    timeout_s: float,
    host: str = "127.0.0.1",
    *,
    backend: ServiceBackend | None = None,
) -> bool:
    """Poll ``/health`` on the box's ``host``:``port`` (through the transport) until it
    answers 200 or ``timeout_s`` passes; True when it did. With ``backend``, a service that
    has failed or exited ends the wait at once (it will not start serving by itself)."""
    import httpx  # here, not at the top: 60 ms that the console's start need not pay

    forward = await transport.forward_local_port(port, host)
    deadline = time.monotonic() + timeout_s
    async with httpx.AsyncClient(base_url=forward.url, timeout=5.0) as client:
        while True:
            try:
                if (await client.get("/health")).status_code == 200:
                    return True
            except httpx.HTTPError:
                pass
            if backend is not None and (await backend.status()).state in DOWN_STATES:
                return False
            if time.monotonic() + HEALTH_POLL_S > deadline:
                return False
            await asyncio.sleep(HEALTH_POLL_S)


async def unit_port(backend: ServiceBackend, default: int) -> int:
    """The port the unit on the box serves on (its ExecStart), else ``default``."""
    read_unit = getattr(backend, "read_unit", None)
    if read_unit is None:
        return default
    from specconsole.core.config.model import ConfigError
    from specconsole.core.launch.systemd import parse_unit

    source = await read_unit()
    if source is None or source.text is None:
        return default
    try:
        return parse_unit(source.text, source.context).port
    except (ConfigError, ValueError):
        return default


async def deployed_origin(
    backend: ServiceBackend, base: ServerConfig, trials: Sequence[TrialRecord]
) -> tuple[ServerConfig | None, str]:
    """(the configuration the artifact on the box runs, parsed from it, and a phrase naming
    it: ``trial 2's configuration (steps=4 draft=5, ok)``, or that it is no trial of this
    session, e.g. the box's own unit from before it)."""
    config, where = await running_config(backend, base)
    summary = config_summary(config) if config is not None else f"nothing readable ({where})"
    artifact_hash = await backend.deployed_hash()
    ran = [t for t in trials if artifact_hash is not None and t.artifact_hash == artifact_hash]
    if ran:
        last = ran[-1]
        status = last.status.value.replace("_", " ")
        if last.status is TrialStatus.RUNNING:
            status = "not finished"
        origin = f"trial {last.index + 1}'s configuration ({record_label(last, base)}, {status})"
    else:
        origin = "no trial of this session's (the box's own, or one deployed before it)"
    return config, f"{summary} — {origin}"


async def server_now(
    backend: ServiceBackend,
    transport: Transport,
    base: ServerConfig,
    trials: Sequence[TrialRecord],
) -> str:
    """One sentence of facts read from the box right now: the service's state in its
    manager's words (a restart cut short shows as stopping or starting), whether ``/health``
    answers, and what the deployed unit runs — and whether the live server was started from
    it. Bounded in time, never raises: what cannot be told is said."""
    try:
        async with asyncio.timeout(STATE_STEP_S):
            status = await backend.status()
            word = status.detail or status.state.value
            if status.state in DOWN_STATES:
                state = f"the server is down ({word})"
            else:
                state = await _up_state(backend, transport, base, status.state, word)
            _config, what = await deployed_origin(backend, base, trials)
    except (TransportError, OSError, TimeoutError) as exc:
        return f"the server's state cannot be told: {exc or type(exc).__name__}"
    return f"{state}; its unit runs {what}"


async def _up_state(
    backend: ServiceBackend,
    transport: Transport,
    base: ServerConfig,
    state: ServiceState,
    word: str,
) -> str:
    """How a service that is not down is: stopping, starting, serving or not, and started
    from the unit on the box or from an earlier one."""
    port = await unit_port(backend, base.port)
    host = box_host(base)
    if isinstance(backend, LocatedService):
        host = await backend.server_host(base) or host
    serving = await wait_serving(transport, port, 0.0, host)
    health = f"/health {'200' if serving else 'not 200'} on port {port}; {word}"
    if word.startswith("deactivating"):
        return f"the server is stopping ({health})"
    if state is ServiceState.STARTING:
        return f"the server is starting ({health})"
    stale = ""
    if await backend.running_hash() != await backend.deployed_hash():
        stale = "; it was started before its unit last changed"
    verb = "runs and serves" if serving else "runs but does not serve"
    return f"the server {verb} ({health}){stale}"
