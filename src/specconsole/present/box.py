"""The box probe as lines of text, for the headless output (and any plain-text view).

Why here: what a probe found (``core.boxprobe.BoxProbe``) is shown the same way wherever it
is printed; formatting belongs to ``present``, never to the core or the controller.
"""

from __future__ import annotations

from specconsole.core.boxprobe import BoxProbe, GpuInfo
from specconsole.present.labels import config_summary

__all__ = ["gpu_text", "probe_lines"]


def gpu_text(gpu: GpuInfo) -> str:
    """``NVIDIA H100 80GB HBM3 (1,024 / 81,559 MiB used)``."""
    if gpu.memory_total_mib is None:
        return gpu.name
    used = "?" if gpu.memory_used_mib is None else f"{gpu.memory_used_mib:,}"
    return f"{gpu.name} ({used} / {gpu.memory_total_mib:,} MiB used)"


def probe_lines(probe: BoxProbe) -> list[str]:
    """What the probe found, one fact a line (the first line says reachable or why not)."""
    if not probe.reachable:
        return [f"box {probe.target}: UNREACHABLE ({probe.error_kind}): {probe.error}"]
    version = probe.engine_version or "unknown"
    engine = f"{probe.engine} {version} ({probe.engine_version_source}"
    engine += f": {probe.engine_version_detail})" if probe.engine_version_detail else ")"
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
