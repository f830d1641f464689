"""What the box's ``nvidia-smi`` gets wrong while a simulator lives (``--sim-smi-*``): power
its driver cannot read, a hung driver, a GPU fallen off the bus.

Why here, beside the GPUs' state: these faults travel in the simulator's state file
(:mod:`specconsole.sim.gpu.gpustate` writes them, :mod:`specconsole.sim.gpu.nvidia_smi` reads
them), so they last exactly as long as the simulator that declared them. The flags are
registered with the box's other faults (:mod:`specconsole.sim.faults`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["SMI_POWER", "SmiFaults"]

SMI_POWER = {"na": "[N/A]", "not-supported": "[Not Supported]"}
"""What the driver prints for power it cannot read, by the flag's word."""


@dataclass(frozen=True, slots=True)
class SmiFaults:
    """What the box's ``nvidia-smi`` gets wrong while this simulator lives."""

    power: str = ""
    """What it prints for power (``[N/A]``, ``[Not Supported]``; '' when it reads it)."""
    gpus: tuple[int, ...] | None = None
    """The GPUs :attr:`power` touches (None: all)."""
    stall_after_s: float | None = None
    exit_after_s: float | None = None

    @classmethod
    def from_values(cls, values: dict[str, Any]) -> SmiFaults:
        listed = values.get("sim_smi_gpus")
        gpus = None
        if listed:
            gpus = tuple(int(x) for x in str(listed).split(",") if x.strip().isdigit())

        def seconds(key: str) -> float | None:
            value = values.get(key)
            return None if value is None else max(float(value), 0.0)

        return cls(
            power=SMI_POWER.get(str(values.get("sim_smi_power") or ""), ""),
            gpus=gpus,
            stall_after_s=seconds("sim_smi_stall_after"),
            exit_after_s=seconds("sim_smi_exit_after"),
        )

    def state(self, ready_at: float | None) -> dict[str, Any]:
        """The faults as the state file carries them to ``nvidia-smi`` (the stall and the
        exit as wall-clock times, once the server is ready)."""
        out: dict[str, Any] = {}
        if self.power:
            out["power"] = self.power
            if self.gpus is not None:
                out["power_gpus"] = list(self.gpus)
        if ready_at is not None:
            if self.stall_after_s is not None:
                out["stall_at"] = ready_at + self.stall_after_s
            if self.exit_after_s is not None:
                out["exit_at"] = ready_at + self.exit_after_s
        return out
