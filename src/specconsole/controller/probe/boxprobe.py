"""Probe the box as the controller starts: reach, engine release, GPUs, service, serving.

Why: a failure of reach (an alias that does not resolve, a refused host key, a failed
login, sudo that prompts) must show the moment the console opens or before a headless
sweep's first trial, not on the first deploy; and the user should see what the box is —
the engine release, the GPUs, the service's state and the configuration it runs now, and
whether it serves — before anything changes it. :func:`probe_box` gathers those facts
through the ports, bounded in time, and returns a :class:`specconsole.core.boxfacts.BoxProbe`
(pure data, no secret values); the controller delivers it to the machine as
``events.BoxProbed``. It never raises (but a cancel): what cannot be told is said in the
probe's ``*_detail`` fields; only a failure of reach makes the probe ``reachable=False``.
"""

from __future__ import annotations

import asyncio
import shlex
from collections.abc import Awaitable, Callable
from dataclasses import replace
from typing import TypeVar

from specconsole.controller.probe.engine_detect import (
    EngineVersionInfo,
    EngineVersionKeeper,
    ServerInfoCall,
)
from specconsole.core.boxfacts import NVIDIA_SMI_QUERY, BoxProbe, GpuInfo, parse_gpus
from specconsole.core.config.errors import ConfigError
from specconsole.core.config.model import ServerConfig
from specconsole.core.config.secrets import redact_config
from specconsole.core.launch.importplan import read_server_text
from specconsole.core.ports import (
    REACH_FAILURES,
    AuthenticationFailed,
    HostKeyRejected,
    LocatedService,
    ServiceBackend,
    SudoWouldPrompt,
    Transport,
    TransportError,
)

__all__ = ["PROBE_STEP_S", "probe_box", "running_artifact", "running_config"]

PROBE_STEP_S = 20.0
"""How long one step of the probe (a command, the health check) may take."""

HealthCheck = Callable[[ServerConfig], Awaitable[str | None]]
"""None when ``/health`` answers 200 for that configuration, else what went wrong."""

T = TypeVar("T")


def _kind(exc: Exception) -> str:
    if isinstance(exc, HostKeyRejected):
        return "host_key"
    if isinstance(exc, AuthenticationFailed):
        return "auth"
    if isinstance(exc, SudoWouldPrompt):
        return "sudo"
    return "unreachable" if isinstance(exc, REACH_FAILURES) else "other"


async def running_artifact(backend: ServiceBackend, config: ServerConfig) -> tuple[str | None, str]:
    """(what the service runs from now — the unit with its drop-ins as ``systemctl cat``
    shows them, or the deployed launch script — and where it was read). None when nothing is
    deployed."""
    cat = getattr(backend, "cat", None)  # a systemd unit: the user's own, drop-ins included
    if cat is not None:
        main, dropins = await cat()
        unit = str(getattr(backend, "unit", "the unit"))
        return (None if main is None else main + "\n" + dropins), unit
    return (await backend.preview(config)).current, backend.description


async def running_config(
    backend: ServiceBackend, config: ServerConfig
) -> tuple[ServerConfig | None, str]:
    """(the configuration the service runs now, parsed from its unit or launch script, or
    None; where it came from or why there is none). Environment values are kept: the caller
    redacts what it shows or records."""
    read_unit = getattr(backend, "read_unit", None)  # a unit: read as systemd reads it
    source = await read_unit() if read_unit is not None else None
    if source is not None:
        text, where = source.text, str(getattr(backend, "unit", "the unit"))
    else:
        text, where = await running_artifact(backend, config)
    if text is None:
        return None, f"nothing is deployed for {where}"
    try:
        parsed = read_server_text(text, where, source.context if source else None)[1]
    except (ConfigError, ValueError) as exc:
        return None, f"{where} could not be parsed: {exc}"
    return parsed, f"parsed from {where}"


async def _gpus(transport: Transport, backend: ServiceBackend) -> tuple[tuple[GpuInfo, ...], str]:
    if isinstance(backend, LocatedService):
        return (), "the GPUs are on the job's node (not probed from the login node)"
    command = f"{shlex.join(NVIDIA_SMI_QUERY)} 2>&1 || echo __exit=$?"
    result = await transport.run(command, timeout=PROBE_STEP_S)
    out = result.stdout.strip()
    body, failed, code = out.rpartition("__exit=")
    if not failed:
        body = out
    elif code == "127" or ("nvidia-smi" in body and "not found" in body.lower()):
        return (), "no nvidia-smi on the box (no GPUs listed)"
    else:
        last = body.strip().splitlines() or [f"exit status {code}"]
        return (), f"nvidia-smi failed: {last[-1][:200]}"
    out = body.strip()
    gpus = parse_gpus(out)
    return gpus, "" if gpus else f"nvidia-smi listed no GPU ({out[:80]!r})"


async def _bounded(step: Awaitable[T], what: str) -> T:
    try:
        async with asyncio.timeout(PROBE_STEP_S + 5.0):
            return await step
    except TimeoutError:
        raise TimeoutError(f"{what}: no answer within {PROBE_STEP_S:g} s") from None


async def probe_box(
    transport: Transport,
    backend: ServiceBackend,
    config: ServerConfig,
    health: HealthCheck,
    engine_versions: EngineVersionKeeper | None,
    clock: Callable[[], float],
    *,
    server_info: ServerInfoCall | None = None,
) -> BoxProbe:
    """The box as it is now, for ``config`` (the plan's base: its engine and port). When the
    launcher cannot tell the engine's release and a server serves, ``server_info`` asks it:
    the release must be known before trial 1 is rendered."""
    probe = BoxProbe(target=transport.description, engine=config.engine)
    try:
        probe = await _probe(
            probe, transport, backend, config, health, engine_versions, server_info
        )
    except (TransportError, TimeoutError, OSError) as exc:  # only reaching it raises here
        error = str(exc) or type(exc).__name__
        probe = replace(probe, reachable=False, error=error, error_kind=_kind(exc))
    return replace(probe, at=clock())


async def _probe(
    probe: BoxProbe,
    transport: Transport,
    backend: ServiceBackend,
    config: ServerConfig,
    health: HealthCheck,
    engine_versions: EngineVersionKeeper | None,
    server_info: ServerInfoCall | None,
) -> BoxProbe:
    # reach first: the transport connects (and verifies the host key) on its first command
    await _bounded(transport.run("true", timeout=PROBE_STEP_S), "the box")
    probe = replace(probe, service=backend.description)
    try:
        status = await _bounded(backend.status(), "the service's status")
        detail = status.detail or status.state.value
        if status.result and status.result != "success" and status.result not in detail:
            detail += f", result {status.result}"
        if status.restarts:
            detail += f", {status.restarts} restarts"
        probe = replace(probe, service_state=status.state.value, service_detail=detail)
    except REACH_FAILURES:
        raise
    except (TransportError, TimeoutError, OSError) as exc:
        probe = replace(probe, service_state="unknown", service_detail=str(exc))
    running: ServerConfig | None = None
    try:
        running, where = await _bounded(running_config(backend, config), "the deployed unit")
        shown = None if running is None else redact_config(running)
        probe = replace(probe, running_config=shown, running_config_detail=where)
    except REACH_FAILURES:
        raise
    except (TransportError, TimeoutError, OSError) as exc:
        probe = replace(probe, running_config_detail=f"could not be read: {exc}")
    try:
        gpus, gpu_detail = await _bounded(_gpus(transport, backend), "nvidia-smi")
        probe = replace(probe, gpus=gpus, gpu_detail=gpu_detail)
    except REACH_FAILURES:
        raise
    except (TransportError, TimeoutError, OSError) as exc:
        probe = replace(probe, gpu_detail=f"nvidia-smi could not be run: {exc}")
    target = running if running is not None else config
    if probe.service_state in ("running", "starting"):
        try:
            problem = await _bounded(health(target), "/health")
        except REACH_FAILURES:
            raise
        except Exception as exc:  # the health check's own failure is its answer
            problem = str(exc) or type(exc).__name__
        answer = f"/health 200 on port {target.port}" if problem is None else problem
        probe = replace(probe, serving=problem is None, serving_detail=answer)
    else:
        probe = replace(
            probe, serving=False, serving_detail=f"not asked: the service is {probe.service_state}"
        )
    # after /health: a serving server is asked its release when the launcher cannot say
    serving = target if probe.serving and server_info is not None else None
    info = await _engine(engine_versions, config, serving, server_info)
    return replace(probe, **_engine_fields(info))


async def _engine(
    keeper: EngineVersionKeeper | None,
    config: ServerConfig,
    running: ServerConfig | None = None,
    server_info: ServerInfoCall | None = None,
) -> EngineVersionInfo:
    if keeper is not None:
        info = await keeper.ensure(config, running=running, server_info=server_info)
        if info is not None:
            return info
    if config.engine_version:
        return EngineVersionInfo(config.engine_version, "declared", "[server] engine_version")
    return EngineVersionInfo(None, "unknown", "not asked")


def _engine_fields(info: EngineVersionInfo) -> dict[str, object]:
    return {
        "engine_version": info.version,
        "engine_version_source": info.source,
        "engine_version_detail": info.detail,
    }
