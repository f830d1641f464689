"""The simulated box itself, whatever engine it imitates: its options, its memory plan, its
scheduler, and the life every face shares.

Why apart from the faces (:mod:`specconsole.sim.faces`): the physics — how much the GPUs hold,
how long a step takes, when a request is admitted — is the box's, and a face only decides
what the box *says*: which lines it logs while loading and serving, which HTTP routes it
answers, how it dies. :class:`SimBox` is that shared state; a face's server subclasses it and
fills in :meth:`SimBox.load` and the other hooks the process (:mod:`.process`) calls.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from typing import Any

from specconsole.sim.arguments import ParsedArgs
from specconsole.sim.faults import MetricsRestarts, html_routes
from specconsole.sim.gpu.gpustate import GpuBoard
from specconsole.sim.gpu.smifaults import SmiFaults
from specconsole.sim.physics.launch import ResolvedArgs
from specconsole.sim.physics.model import MemoryPlan, plan_memory
from specconsole.sim.profile import Profile
from specconsole.sim.scheduler import Scheduler, StepReporter

__all__ = ["SimBox", "SimOptions"]


@dataclass(frozen=True, slots=True)
class SimOptions:
    """The simulator's own flags (``--sim-*``)."""

    profile_path: str
    load_seconds: float
    crash_after_requests: int | None
    hang_during_load: bool
    stall_after_tokens: int | None
    slow_start: float
    unthrottled: bool
    metrics_reset_after_requests: int | None = None
    smi: SmiFaults = field(default_factory=SmiFaults)
    proxy_html: tuple[str, ...] = ()
    """The box's own faults (:mod:`specconsole.sim.faults`)."""

    @classmethod
    def from_values(cls, values: dict[str, Any], profile: Profile) -> SimOptions:
        load = values.get("sim_load_seconds")
        return cls(
            profile_path=profile.source,
            load_seconds=profile.load.seconds if load is None else max(float(load), 0.0),
            crash_after_requests=values.get("sim_crash_after_requests"),
            hang_during_load=bool(values.get("sim_hang_during_load")),
            stall_after_tokens=values.get("sim_stall_after_tokens"),
            slow_start=max(float(values.get("sim_slow_start") or 0.0), 0.0),
            unthrottled=bool(values.get("sim_unthrottled")),
            metrics_reset_after_requests=values.get("sim_metrics_reset_after_requests"),
            smi=SmiFaults.from_values(values),
            proxy_html=html_routes(values),
        )


class SimBox:
    """State shared by a face's loader, the scheduler and the HTTP handlers."""

    listens_while_loading = True
    """Whether the port accepts connections from the start (SGLang answers ``/health`` with
    503 while loading) or only once ready (vLLM binds its port first and listens when its
    engine is up: a connection is refused until then)."""

    def __init__(
        self,
        args: ResolvedArgs,
        parsed: ParsedArgs,
        profile: Profile,
        opts: SimOptions,
        log: Any,
        reporter: StepReporter,
    ) -> None:
        self.args = args
        self.parsed = parsed
        self.profile = profile
        self.opts = opts
        self.log = log
        self.plan: MemoryPlan = plan_memory(args, profile)
        self.ready = False
        self.shutting_down = False
        self.port = args.port
        self.scheduler = Scheduler(
            args,
            profile,
            self.plan,
            reporter,
            unthrottled=opts.unthrottled,
            crash_after_requests=opts.crash_after_requests,
            stall_after_tokens=opts.stall_after_tokens,
        )
        self.created = int(time.time())
        self._fatal = asyncio.Event()
        self.gpus = GpuBoard(profile, args.tp_size, faults=opts.smi)
        """What its GPUs hold and how busy they are, for the box's ``nvidia-smi``."""
        self.restarts = MetricsRestarts(opts.metrics_reset_after_requests)
        """``/metrics``'s counts as a restarted registry shows them (a fault)."""
        if self.restarts.active:
            self.scheduler.on_finish = self.restarts.finished

    @property
    def fatal_seen(self) -> bool:
        """A fatal error was logged: the process dies (:meth:`die`)."""
        return self._fatal.is_set()

    async def wait_fatal(self) -> None:
        await self._fatal.wait()

    def mark_fatal(self) -> None:
        self._fatal.set()

    async def phase(self, share: float, gpu_gb: float = 0.0) -> None:
        """Sleep for ``share`` of the load time (a load phase), allocating ``gpu_gb`` more
        on each GPU meanwhile (what the box's ``nvidia-smi`` shows)."""
        seconds = self.opts.load_seconds * share
        if gpu_gb:
            await self.gpus.ramp(gpu_gb, max(seconds, 0.0))
        elif seconds > 0:
            await asyncio.sleep(seconds)

    # -- what a face fills in ------------------------------------------------------------------

    async def load(self) -> bool:
        """Print the load sequence; False when the load failed (already logged)."""
        raise NotImplementedError

    def on_listening(self) -> None:
        """The port accepts connections now (the lines that say so)."""

    def serving_crash(self) -> None:
        """The engine died while serving (fault injection): log it, mark it fatal."""
        raise NotImplementedError

    def simulator_bug(self, text: str) -> None:
        """The simulator itself raised ``text`` (a traceback): report it as the engine would
        report an engine crash."""
        raise NotImplementedError

    def die(self) -> int:
        """End the process after a fatal error; returns the exit code if it does not kill
        itself."""
        raise NotImplementedError

    def shutdown_lines(self, pid: int, phase: str) -> None:
        """The lines of an orderly stop (``phase``: ``begin`` or ``end``)."""
