#!/usr/bin/env python3
"""``nvidia-smi`` for the simulated box: its flags, its CSV and its table, from the state the
simulator's processes write.

Why: the console samples ``nvidia-smi`` on the box over the same transport as everything
else; there is no GPU where specconsole is developed, so the simulated box carries this
program on its PATH (installed as ``nvidia-smi`` by :func:`install`). It answers the query
the console streams, ``--query-gpu=FIELDS --format=csv[,noheader][,nounits] -lms N``, the
box probe's one-shot query, ``-L`` and the plain table, in the real tool's shapes:
``2026/12/06 02:32:06.123, 0, 43310, 49140, 100, 287.41, 67`` (memory in MiB, power in W;
with units ``43310 MiB``, ``100 %``, ``287.41 W``), ``Field "x" is not a valid field to
query.`` with exit status 2, ``No devices were found`` with exit status 6.

What it reports comes from files in :func:`state_dir` (``SPECCONSOLE_SIM_GPU_DIR``, else
``/tmp/specconsole-sim-gpu``): ``box.json`` (the GPUs: name, memory, power range, written by
every simulator as it starts) and one ``<pid>.json`` per live simulator (the memory it holds
on each GPU and how busy it keeps it, written as it loads and serves:
:mod:`specconsole.sim.gpu.gpustate`). Memory is summed over live processes (a dead one's file is
ignored: the driver frees what a killed process held); utilisation follows the busiest;
power rises from idle with utilisation and the batch; temperature follows power.

A live simulator's file may also carry the box's faults (``--sim-smi-*``,
:mod:`specconsole.sim.faults`), which last as long as it does: power the driver cannot read
(``[N/A]``, ``[Not Supported]`` in its place, with or without units, as the real tool prints
it), a hung driver (from a moment on, every run prints nothing more and hangs — bounded by
:data:`HANG_LIMIT_S`, and over once no live simulator says so), and a GPU fallen off the bus
(from a moment on, every run prints ``Unable to determine the device handle for GPU...: GPU
is lost.`` and exits with status :data:`GPU_LOST_EXIT`).

Standard library only: run as ``python3 -I -S nvidia_smi.py ARGS`` without the package.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

STATE_ENV = "SPECCONSOLE_SIM_GPU_DIR"
"""Where the simulated GPUs' state lives (one folder per simulated box)."""
BOX_FILE = "box.json"
IDLE_MIB = 1.0
"""What an idle GPU reports in use (the driver's own)."""
GPU_LOST_EXIT = 15
"""nvidia-smi's exit status for a GPU that has fallen off the bus."""
HANG_LIMIT_S = 600.0
"""The longest a run hangs for a hung driver (a test's process is never left behind)."""

# field name (and aliases) -> (CSV header, unit)
FIELDS: dict[str, tuple[str, str]] = {
    "timestamp": ("timestamp", ""),
    "index": ("index", ""),
    "name": ("name", ""),
    "gpu_name": ("name", ""),
    "uuid": ("uuid", ""),
    "gpu_uuid": ("uuid", ""),
    "pci.bus_id": ("pci.bus_id", ""),
    "driver_version": ("driver_version", ""),
    "count": ("count", ""),
    "memory.total": ("memory.total [MiB]", "MiB"),
    "memory.used": ("memory.used [MiB]", "MiB"),
    "memory.free": ("memory.free [MiB]", "MiB"),
    "utilization.gpu": ("utilization.gpu [%]", "%"),
    "utilization.memory": ("utilization.memory [%]", "%"),
    "power.draw": ("power.draw [W]", "W"),
    "power.limit": ("power.limit [W]", "W"),
    "temperature.gpu": ("temperature.gpu", ""),
    "pstate": ("pstate", ""),
}

USAGE = """NVIDIA System Management Interface -- v560.35.03 (specconsole simulated box)

    nvidia-smi [OPTION1 [ARG1]] [OPTION2 [ARG2]] ...

    -L,   --list-gpus           Display a list of GPUs connected to the system.
    -i,   --id=                 Target a specific GPU.
    -l,   --loop=               Probe until Ctrl+C at specified second interval.
    -lms, --loop-ms=            Probe until Ctrl+C at specified millisecond interval.
    --query-gpu=                Information about GPU. Pass comma separated list of
                                properties you want to query.
    --format=                   Comma separated list of format options: csv, noheader,
                                nounits.
    -h,   --help                Print usage information and exit.
"""


class UsageError(Exception):
    """The arguments are not ones nvidia-smi takes; the message is its own."""


def state_dir() -> Path:
    """The simulated box's state folder (the environment's, else the shared default)."""
    configured = os.environ.get(STATE_ENV)
    return Path(configured) if configured else Path(tempfile.gettempdir()) / "specconsole-sim-gpu"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process: alive
        return True
    except OSError:
        return False
    return True


def _read(path: Path) -> Any:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def read_box(directory: Path) -> list[dict[str, Any]]:
    """The GPUs as every live process holds them: one dict per GPU with ``used`` (MiB),
    ``busy`` and ``batch`` (0..1) beside the box's own facts."""
    box = _read(directory / BOX_FILE)
    if not isinstance(box, dict) or not isinstance(box.get("gpus"), list):
        return []
    gpus = [dict(g, used=IDLE_MIB, busy=0.0, batch=0.0) for g in box["gpus"]]
    try:
        entries = list(directory.iterdir())
    except OSError:
        entries = []
    for entry in entries:
        if not entry.name.endswith(".json") or not entry.name[:-5].isdigit():
            continue
        pid = int(entry.name[:-5])
        state = _read(entry)
        if not isinstance(state, dict) or not _alive(pid):
            continue
        for index, held in (state.get("gpus") or {}).items():
            if not str(index).isdigit() or int(index) >= len(gpus):
                continue
            gpu = gpus[int(index)]
            gpu["used"] += float(held.get("used_mib", 0.0))
            gpu["busy"] = max(gpu["busy"], float(held.get("busy", 0.0)))
            gpu["batch"] = max(gpu["batch"], float(held.get("batch", 0.0)))
    for gpu in gpus:
        gpu["used"] = min(gpu["used"], float(gpu["memory_total_mib"]))
    return gpus


def read_faults(directory: Path) -> dict[str, Any]:
    """The faults every live simulator's file declares, merged: ``power`` (GPU index -> what
    is printed instead), the earliest ``stall_at`` and ``exit_at`` (wall clock)."""
    merged: dict[str, Any] = {"power": {}}
    try:
        entries = list(directory.iterdir())
    except OSError:
        return merged
    for entry in entries:
        if not entry.name.endswith(".json") or not entry.name[:-5].isdigit():
            continue
        state = _read(entry)
        faults = state.get("faults") if isinstance(state, dict) else None
        if not isinstance(faults, dict) or not _alive(int(entry.name[:-5])):
            continue
        said = faults.get("power")
        if isinstance(said, str) and said:
            held = [i for i in (state.get("gpus") or {}) if str(i).isdigit()]
            touched = faults.get("power_gpus")
            for index in touched if isinstance(touched, list) else held:
                merged["power"][int(index)] = said
        for key in ("stall_at", "exit_at"):
            at = faults.get(key)
            if isinstance(at, int | float) and (key not in merged or at < merged[key]):
                merged[key] = float(at)
    return merged


def _power(gpu: dict[str, Any]) -> float:
    idle, most = float(gpu.get("power_idle_w", 30.0)), float(gpu.get("power_max_w", 300.0))
    return idle + (most - idle) * gpu["busy"] * (0.45 + 0.55 * min(1.0, gpu["batch"]) ** 0.5)


def _value(field: str, gpu: dict[str, Any], count: int, stamp: str) -> tuple[str, str]:
    """(the value as printed without units, its unit; no unit for what the driver could not
    read: ``[N/A]``)."""
    unreadable = gpu.get("power_says")
    if field == "power.draw" and unreadable:
        return str(unreadable), ""
    total = float(gpu["memory_total_mib"])
    power = _power(gpu)
    values: dict[str, str] = {
        "timestamp": stamp,
        "index": str(gpu["index"]),
        "name": str(gpu.get("name", "NVIDIA GPU")),
        "uuid": str(gpu.get("uuid", "")),
        "pci.bus_id": str(gpu.get("bus_id", "")),
        "driver_version": str(gpu.get("driver", "560.35.03")),
        "count": str(count),
        "memory.total": str(round(total)),
        "memory.used": str(round(gpu["used"])),
        "memory.free": str(round(total - gpu["used"])),
        "utilization.gpu": str(round(100 * gpu["busy"])),
        "utilization.memory": str(round(60 * gpu["busy"] * min(1.0, gpu["batch"]) ** 0.5)),
        "power.draw": f"{power:.2f}",
        "power.limit": f"{float(gpu.get('power_max_w', 300.0)):.2f}",
        "temperature.gpu": str(round(28 + 0.14 * power)),
        "pstate": "P0" if gpu["busy"] > 0 else "P8",
    }
    canonical = FIELDS[field][0].split(" ")[0]
    return values[canonical], FIELDS[field][1]


def csv_lines(
    fields: Sequence[str], gpus: Sequence[dict[str, Any]], *, header: bool, units: bool
) -> list[str]:
    """One line per GPU (after the header line when asked), as ``--format=csv`` prints."""
    now = time.time()
    stamp = time.strftime("%Y/%m/%d %H:%M:%S", time.localtime(now)) + f".{int(now % 1 * 1000):03d}"
    out = [", ".join(FIELDS[f][0] for f in fields)] if header else []
    for gpu in gpus:
        cells = []
        for field in fields:
            value, unit = _value(field, gpu, len(gpus), stamp)
            cells.append(f"{value} {unit}" if units and unit else value)
        out.append(", ".join(cells))
    return out


def table(gpus: Sequence[dict[str, Any]]) -> str:
    """The plain ``nvidia-smi`` summary (the parts a person reads)."""
    rule = "+" + "-" * 87 + "+"
    lines = [
        time.strftime("%a %b %d %H:%M:%S %Y"),
        rule,
        "| NVIDIA-SMI 560.35.03 (specconsole simulated box)   Driver Version: 560.35.03  "
        "   CUDA 12.6 |",
        rule,
    ]
    for gpu in gpus:
        power, most = _power(gpu), float(gpu.get("power_max_w", 300))
        used, total = round(gpu["used"]), round(float(gpu["memory_total_mib"]))
        drawn = "  N/A" if gpu.get("power_says") else f"{power:>5.0f}W"
        lines.append(
            f"| {gpu['index']:>3}  {str(gpu.get('name', ''))[:28]:<28} "
            f"{round(28 + 0.14 * power):>3}C {drawn} / {most:>3.0f}W "
            f"{used:>7}MiB / {total:>6}MiB {round(100 * gpu['busy']):>4}% |"
        )
    lines.append(rule)
    return "\n".join(lines)


def parse_args(argv: Sequence[str]) -> dict[str, Any]:
    """nvidia-smi's options as used here: ``--query-gpu``, ``--format``, ``-l``/``-lms``,
    ``-i``, ``-L``, ``-h``; ``--opt=value`` and ``--opt value`` both."""
    opts: dict[str, Any] = {"fields": None, "format": (), "loop_s": None, "ids": None}
    words = list(argv)
    i = 0

    def value(name: str) -> str:
        nonlocal i
        word = words[i]
        if "=" in word:
            return word.split("=", 1)[1]
        if i + 1 >= len(words):
            raise UsageError(f'Option "{name}" requires a value.')
        i += 1
        return words[i]

    while i < len(words):
        word = words[i]
        name = word.split("=", 1)[0]
        if name in ("-h", "--help"):
            opts["help"] = True
        elif name in ("-L", "--list-gpus"):
            opts["list"] = True
        elif name in ("--query-gpu", "-q-gpu"):
            fields = [f.strip() for f in value(name).split(",") if f.strip()]
            for field in fields:
                if field not in FIELDS:
                    raise UsageError(f'Field "{field}" is not a valid field to query.')
            opts["fields"] = fields
        elif name == "--format":
            opts["format"] = tuple(f.strip() for f in value(name).split(","))
        elif name in ("-l", "--loop"):
            opts["loop_s"] = max(1.0, float(value(name) or 5))
        elif name in ("-lms", "--loop-ms"):
            opts["loop_s"] = max(0.001, float(value(name) or 1000) / 1000.0)
        elif name in ("-i", "--id"):
            opts["ids"] = [int(x) for x in value(name).split(",") if x.strip().isdigit()]
        else:
            raise UsageError(f"Invalid combination of input arguments. ({word})")
        i += 1
    if opts["format"] and "csv" not in opts["format"]:
        raise UsageError('"--format" needs "csv".')
    return opts


def main(argv: Sequence[str] | None = None, out: Any = None) -> int:
    """Run like ``nvidia-smi``; returns its exit status."""
    out = out or sys.stdout
    try:
        opts = parse_args(sys.argv[1:] if argv is None else argv)
    except (UsageError, ValueError) as exc:
        print(str(exc), file=out)
        print("\nPlease run 'nvidia-smi -h' for more information.", file=out)
        return 2
    if opts.get("help"):
        print(USAGE, file=out)
        return 0
    directory = state_dir()
    while True:
        faults = read_faults(directory)
        if faults.get("exit_at", float("inf")) <= time.time():
            return _gpu_lost(read_box(directory), out)
        if faults.get("stall_at", float("inf")) <= time.time():
            _hang(directory)
            continue
        gpus = read_box(directory)
        for gpu in gpus:
            gpu["power_says"] = faults["power"].get(gpu["index"], "")
        if opts["ids"] is not None:
            gpus = [g for g in gpus if g["index"] in opts["ids"]]
        if not gpus:
            print("No devices were found", file=out)
            return 6
        if opts.get("list"):
            for gpu in gpus:
                print(f"GPU {gpu['index']}: {gpu.get('name', '')} (UUID: {gpu.get('uuid', '')})")
            return 0
        if opts["fields"] is not None:
            fmt = opts["format"]
            lines = csv_lines(
                opts["fields"], gpus, header="noheader" not in fmt, units="nounits" not in fmt
            )
            out.write("\n".join(lines) + "\n")
        else:
            out.write(table(gpus) + "\n")
        out.flush()
        if opts["loop_s"] is None:
            return 0
        time.sleep(opts["loop_s"])


def _gpu_lost(gpus: Sequence[dict[str, Any]], out: Any) -> int:
    """A GPU fallen off the bus: the real tool's words, and its status."""
    bus = str(gpus[0].get("bus_id", "00000000:18:00.0")) if gpus else "00000000:18:00.0"
    print(
        f"Unable to determine the device handle for GPU{bus}: GPU is lost.  "
        "Reboot the system to recover this GPU",
        file=out,
    )
    out.flush()
    return GPU_LOST_EXIT


def _hang(directory: Path) -> None:
    """A hung driver: print nothing while a live simulator says the stall lasts (bounded)."""
    deadline = time.monotonic() + HANG_LIMIT_S
    while time.monotonic() < deadline:
        time.sleep(0.2)
        if read_faults(directory).get("stall_at", float("inf")) > time.time():
            return
    sys.exit(0)


def install(bin_dir: Path, *, python: str | None = None, state: Path | None = None) -> Path:
    """Write ``bin_dir/nvidia-smi``: this file run by ``python`` (this interpreter's by
    default) without site packages, the state folder fixed when ``state`` is given (else the
    environment's). Returns the program's path."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    target = bin_dir / "nvidia-smi"
    env = f"export {STATE_ENV}={_quote(str(state))}\n" if state is not None else ""
    target.write_text(
        "#!/bin/sh\n"
        "# the specconsole simulated box's nvidia-smi (specconsole.sim.gpu.nvidia_smi)\n"
        f"{env}exec {_quote(python or sys.executable)} -I -S "
        f'{_quote(str(Path(__file__).resolve()))} "$@"\n'
    )
    target.chmod(0o755)
    return target


def _quote(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'"


if __name__ == "__main__":
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # a closed stream ends it, like the tool
    signal.signal(signal.SIGINT, lambda *_: sys.exit(0))
    sys.exit(main())
