"""What the box is, before the first trial: the probe's result as plain data.

Why: a user pointing the console at a production GPU box must see at once whether it can be
reached (and if not, the exact reason: an alias that does not resolve, a refused host key, a
failed login), which engine release runs there, the GPUs and their memory, the state of the
service and the configuration it runs now, and whether it serves — not learn any of it on
the first deploy. The runtime gathers these facts (``controller.probe.boxprobe``) and delivers a
:class:`BoxProbe` to the state machine as ``events.BoxProbed``; ``ControllerState.box``
carries it, so every view renders the same facts and the session records them. Parsing what
the box printed (``nvidia-smi --query-gpu``) is pure and lives here, tested without I/O.

A probe never holds a secret: the running configuration's environment values are redacted
when it is built (:func:`specconsole.core.config.secrets.redact_config`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from specconsole.core.config.model import ServerConfig, config_to_table
from specconsole.core.measure.gpu import read_figure

__all__ = [
    "NVIDIA_SMI_QUERY",
    "BoxProbe",
    "GpuInfo",
    "foreign_memory",
    "parse_gpus",
    "probe_table",
]

NVIDIA_SMI_QUERY = (
    "nvidia-smi",
    "--query-gpu=name,memory.total,memory.used",
    "--format=csv,noheader,nounits",
)
"""The GPU query (memory in MiB, no units, one GPU a line)."""


@dataclass(frozen=True, slots=True)
class GpuInfo:
    """One GPU as ``nvidia-smi`` lists it."""

    name: str
    memory_total_mib: int | None = None
    memory_used_mib: int | None = None


def _mib(text: str) -> int | None:
    """``81559`` or ``81559 MiB`` → 81559; ``[N/A]``, another unit (``79.6 GiB``), a negative
    or impossible size → None (``core.measure.gpu.read_figure``)."""
    value = read_figure(text, "memory.total")
    return None if value is None else int(value)


def parse_gpus(text: str) -> tuple[GpuInfo, ...]:
    """The GPUs in ``nvidia-smi --query-gpu=name,memory.total,memory.used --format=csv,
    noheader[,nounits]`` output; lines that are not three comma-separated fields are skipped,
    a name is kept printable and short, and memory used past the total is not believed."""
    gpus: list[GpuInfo] = []
    for line in text.splitlines()[:MAX_GPUS]:
        fields = [field.strip() for field in line.rsplit(",", 2)]
        if len(fields) != 3 or not fields[0] or len(line) > 4096:
            continue
        name = "".join(c for c in fields[0] if c.isprintable())[:80]
        total, used = _mib(fields[1]), _mib(fields[2])
        if total is not None and used is not None and used > total:
            used = None
        gpus.append(GpuInfo(name or "?", total, used))
    return tuple(gpus)


MAX_GPUS = 1024
"""Lines read from the GPU query (no box has more GPUs)."""


@dataclass(frozen=True, slots=True)
class BoxProbe:
    """The box as the probe found it. When ``reachable`` is False only ``target``, ``error``
    and ``error_kind`` are meaningful."""

    target: str
    """The transport's description (``gpu-box (ssh 10.0.0.5:22)``, ``local``)."""
    at: float = 0.0
    """Wall-clock time the probe finished."""
    reachable: bool = True
    error: str = ""
    """Why the box could not be reached: the transport's exact message."""
    error_kind: str = ""
    """``host_key``, ``auth``, ``sudo``, ``unreachable`` or ``other`` ('' when reachable)."""
    engine: str = ""
    """The engine the plan runs (``sglang``, ``vllm``)."""
    engine_version: str | None = None
    engine_version_source: str = ""
    """``declared``, ``detected``, ``server_info``, ``recorded`` or ``unknown``."""
    engine_version_detail: str = ""
    gpus: tuple[GpuInfo, ...] = ()
    gpu_detail: str = ""
    """Why no GPU is listed (``nvidia-smi not found on the box``), '' when listed."""
    service: str = ""
    """The backend's description (``systemd unit sglang.service on ...``)."""
    service_state: str = ""
    """The coarse state (``running``, ``inactive``, ``failed``...; ``ServiceState`` values)."""
    service_detail: str = ""
    """The manager's own words (systemd ``active/running``, ``Result=``, restarts)."""
    running_config: ServerConfig | None = None
    """The configuration the service runs now, parsed from the unit (or command line) on the
    box; environment values redacted. None when nothing is deployed or it did not parse."""
    running_config_detail: str = ""
    """Where it came from (``parsed from sglang.service``), or why there is none."""
    serving: bool | None = None
    """``/health`` answered 200 (True), did not (False), or was not asked (None)."""
    serving_detail: str = ""
    """The health check's answer (``/health 200 on port 30000``, the error)."""


FOREIGN_MIB = 1024
"""GPU memory held while the service does not run past which another process is named."""
_IDLE_STATES = frozenset({"inactive", "exited", "failed"})


def foreign_memory(probe: BoxProbe | None) -> str:
    """Memory another process holds on the box's GPUs ('' when none is seen): what a GPU
    holds while the service is not running is not the server's, and every memory figure of
    the sweep (``nvidia-smi``'s ``memory.used``) will include it."""
    if probe is None or not probe.reachable or probe.service_state not in _IDLE_STATES:
        return ""
    held = [
        (gpu_index, gpu.memory_used_mib)
        for gpu_index, gpu in enumerate(probe.gpus)
        if gpu.memory_used_mib is not None and gpu.memory_used_mib > FOREIGN_MIB
    ]
    if not held:
        return ""
    each = ", ".join(f"GPU {i} {mib / 1024:.1f} GiB" for i, mib in held)
    return (
        f"another process holds GPU memory with the service {probe.service_state} ({each}): "
        "every memory figure of the sweep includes it, and the server has that much less"
    )


def probe_table(probe: BoxProbe) -> dict[str, Any]:
    """The probe as a TOML-ready table (the session's ``box.toml``); no secret values (the
    running configuration was redacted when the probe was built)."""
    table: dict[str, Any] = {
        "target": probe.target,
        "at": probe.at,
        "reachable": probe.reachable,
    }
    if not probe.reachable:
        table.update(error=probe.error, error_kind=probe.error_kind)
        return table
    table.update(
        engine=probe.engine,
        engine_version=probe.engine_version or "unknown",
        engine_version_source=probe.engine_version_source,
        engine_version_detail=probe.engine_version_detail,
        gpu_detail=probe.gpu_detail,
        gpus=[
            {
                "name": gpu.name,
                **({"memory_total_mib": gpu.memory_total_mib} if gpu.memory_total_mib else {}),
                **(
                    {"memory_used_mib": gpu.memory_used_mib}
                    if gpu.memory_used_mib is not None
                    else {}
                ),
            }
            for gpu in probe.gpus
        ],
        service=probe.service,
        service_state=probe.service_state,
        service_detail=probe.service_detail,
        running_config_detail=probe.running_config_detail,
        serving_detail=probe.serving_detail,
    )
    if probe.serving is not None:
        table["serving"] = probe.serving
    if probe.running_config is not None:
        table["running_config"] = config_to_table(probe.running_config)
    return table
