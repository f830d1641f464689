"""The box probe as lines of text, for the headless output and the console's box panel.

Why here: what a probe found (``core.boxfacts.BoxProbe``) is shown the same way wherever it
is printed; formatting belongs to ``present``, never to the core or the controller. The
console's panel (``box_panel``) adds the moment before the probe answers (connecting) and
the header's word for the live connection (``connection_word``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from specconsole.core.machine.state import ConnectionState, ControllerState
from specconsole.present.labels import config_summary

if TYPE_CHECKING:
    from specconsole.core.boxfacts import BoxProbe, GpuInfo

__all__ = ["BoxPanelView", "box_panel", "box_shown", "connection_word", "gpu_text", "probe_lines"]


def gpu_text(gpu: GpuInfo) -> str:
    """``NVIDIA H100 80GB HBM3 (1,024 / 81,559 MiB used)``."""
    if gpu.memory_total_mib is None:
        return gpu.name
    used = "?" if gpu.memory_used_mib is None else f"{gpu.memory_used_mib:,}"
    return f"{gpu.name} ({used} / {gpu.memory_total_mib:,} MiB used)"


def probe_lines(probe: BoxProbe) -> list[str]:
    """What the probe found, one fact a line (the first line says reachable or why not)."""
    if not probe.reachable:
        # sudo that would prompt is a box reached but not usable, not an unreachable one
        word = "NOT USABLE" if probe.error_kind == "sudo" else "UNREACHABLE"
        return [f"box {probe.target}: {word} ({probe.error_kind}): {probe.error}"]
    version = probe.engine_version or "unknown"
    engine = f"{probe.engine} {version} ({probe.engine_version_source}"
    engine += f": {probe.engine_version_detail})" if probe.engine_version_detail else ")"
    if probe.engine_version_source == "unversioned":  # no release to name (llama.cpp)
        engine = f"{probe.engine} ({probe.engine_version_detail})"
    lines = [f"box {probe.target}: reachable", f"  engine: {engine}"]
    if probe.gpus:
        lines += [f"  gpu {i}: {gpu_text(gpu)}" for i, gpu in enumerate(probe.gpus)]
    else:
        lines.append(f"  gpus: {probe.gpu_detail or 'none listed'}")
    lines.append(f"  service: {probe.service}: {probe.service_state} ({probe.service_detail})")
    if probe.running_config is not None:
        running = probe.running_config
        lines.append(
            f"  runs now: {running.model_path} on port {running.port}: "
            f"{config_summary(running)} ({probe.running_config_detail})"
        )
    else:
        lines.append(f"  runs now: nothing known ({probe.running_config_detail})")
    word = {True: "serving", False: "not serving", None: "not asked"}[probe.serving]
    lines.append(f"  {word}: {probe.serving_detail}")
    return lines


CONNECTION_WORDS: dict[ConnectionState, str] = {
    ConnectionState.UNKNOWN: "connecting…",
    ConnectionState.CONNECTED: "connected",
    ConnectionState.RECONNECTING: "reconnecting",
    ConnectionState.LOST: "unreachable",
}
"""The header's word for the live connection (``LOST``: the probe or the last reconnect
attempt failed)."""


def connection_word(state: ControllerState) -> str:
    """``connecting…`` until the box answered or refused, then ``connected`` /
    ``reconnecting`` / ``unreachable``."""
    return CONNECTION_WORDS[state.connection]


@dataclass(frozen=True, slots=True)
class BoxPanelView:
    """The console's box panel: a headline and the probe's facts."""

    headline: str
    lines: tuple[str, ...] = ()
    ok: bool | None = None
    """Reachable (True), not (False), not known yet (None)."""


def box_panel(state: ControllerState) -> BoxPanelView:
    """What the console knows about the box: connecting, or what the probe found."""
    probe = state.box
    host = dict(state.labels).get("host", "the box")
    if probe is None:
        if state.connection is ConnectionState.UNKNOWN:
            return BoxPanelView(f"box {host}: connecting… (probing the box)")
        return BoxPanelView(f"box {host}: {connection_word(state)} (not probed)")
    first, *rest = (line.strip() for line in probe_lines(probe))
    live = _deployed_lines(state)
    if live:  # the probe ran before this console deployed: what it deploys is what runs now
        rest = [*live, *(line for line in rest if not line.startswith(PANEL_FIRST))]
    # what runs and whether it serves first: a narrow panel cuts the last lines, not these
    lead = [line for line in rest if line.startswith(PANEL_FIRST)]
    return BoxPanelView(
        first, (*lead, *(line for line in rest if line not in lead)), probe.reachable
    )


PANEL_FIRST = ("runs now:", "serving:", "not serving:", "not asked:")
"""The facts that matter most on the box panel, shown right under its headline."""


def _deployed_lines(state: ControllerState) -> tuple[str, ...]:
    """What runs now and whether it serves, from what this console deployed (the probe's
    answer is as old as the console); () before its first deploy."""
    deployed = state.deployed
    if deployed is None:
        return ()
    runs = f"runs now: {config_summary(deployed.config)} (deployed from this console)"
    if deployed.serving:
        return runs, "serving: it loaded and answered its health check"
    return runs, "not serving: not loaded since its deploy (loading, crashed or stopped)"


def box_shown(state: ControllerState) -> bool:
    """The panel is on screen while no trial runs and no crash awaits a decision (a pool's
    lanes say it per box), and always when the box cannot be reached."""
    if state.box is not None and not state.box.reachable:
        return True
    return state.trial is None and state.pending is None and not state.lanes
