"""The GPU telemetry's I/O: stream ``nvidia-smi`` from the box while a trial runs and post
every sample of every GPU to the controller.

Why a module of its own (like ``controller.watcher``): the sampling is a long-running loop
over the transport, and none of it decides anything — where a sample counts is
``core.machine.handlers.telemetry``'s, reading it ``core.measure.gpu``'s. One command runs per
trial, over the transport that carries everything else: ``nvidia-smi --query-gpu=...
--format=csv,noheader,nounits -lms 1000`` streamed line by line (``Transport.stream``), not
one command per sample. It is bounded on both ends — on the box by ``timeout`` (when the
box has it) and on this side by :data:`MAX_LINES` lines a run and :data:`MAX_RESTARTS`
restarts a trial — and stopped with the trial (``StopTelemetry``). A box without
``nvidia-smi`` or without a device is told once (``GpuTelemetryAbsent``) and never asked
again; a batch job's GPUs are on its node, not on the box the transport reaches. A run that
stops printing for :data:`SILENT_TICKS` intervals (a hung driver) or exits after it sampled is
said to be lost (``GpuTelemetryLost``: the live line drops its last sample rather than show it
as current, the trial's record says why its figures end) and restarted, a bounded number of
times.
"""

from __future__ import annotations

import asyncio
import logging
import shlex
from collections.abc import Callable
from contextlib import aclosing

from specconsole.core.machine import effects as fx
from specconsole.core.machine import events as ev
from specconsole.core.measure.gpu import GpuSample, parse_sample, query_args
from specconsole.core.ports import LocatedService, ServiceBackend, Transport

log = logging.getLogger(__name__)

INTERVAL_MS = 1000
"""How often the box's ``nvidia-smi`` prints a sample of every GPU: once a second is what a
person watching the line can follow, and what the console can afford (each tick is an SSH
packet to decrypt and a redraw of the line: ``benchmarks/telemetry.py``)."""
BOX_LIMIT_S = 12 * 3600
"""The longest one ``nvidia-smi`` may run on the box (``timeout``): a lost link cannot leave
it running for ever."""
MAX_LINES = 2_000_000
"""Lines read from one run (about 55 hours of 4 GPUs at 2 Hz) before it is ended."""
MAX_RESTARTS = 3
"""Runs restarted in one trial after the stream ended early (a dropped link)."""
RESTART_AFTER_S = 1.0
NO_SMI = "__specconsole_no_nvidia_smi__"
SILENT_TICKS = 5
"""Intervals without a line after which a running ``nvidia-smi`` is taken as stalled (a
hung driver): its run is ended and restarted, and the GPU figures are said to be lost
meanwhile — never left on screen as if they were current."""
MIN_SILENCE_S = 5.0


def command(interval_ms: int = INTERVAL_MS) -> str:
    """The shell command run on the box: the query, bounded in time where ``timeout`` is
    there, and a marker instead of an error when ``nvidia-smi`` is not."""
    query = shlex.join(query_args(interval_ms))
    return (
        f"command -v nvidia-smi >/dev/null 2>&1 || {{ echo {NO_SMI}; exit 0; }}; "
        f"if command -v timeout >/dev/null 2>&1; "
        f"then exec timeout -k 5 {BOX_LIMIT_S} {query} 2>&1; else exec {query} 2>&1; fi"
    )


def absent_reason(lines: list[str]) -> str:
    """Why a run that printed no sample found no GPU, from what it printed."""
    if NO_SMI in lines:
        return "no nvidia-smi"
    text = " ".join(lines).strip()
    if "No devices were found" in text:
        return "nvidia-smi found no device"
    return f"nvidia-smi: {lines[-1][:160]}" if lines else "nvidia-smi printed nothing"


class Batcher:
    """Groups a tick's lines (one per GPU) into one sample of every GPU: a tick is complete
    once as many GPUs as the first tick had were read, or when a GPU index comes round again
    (a GPU gone). Until the first tick has shown how many GPUs there are, each line goes out
    on its own, so the first sample is not held back a whole interval."""

    def __init__(self) -> None:
        self._batch: list[GpuSample] = []
        self._first: list[int] = []
        self._gpus: int | None = None

    def add(self, sample: GpuSample) -> tuple[GpuSample, ...]:
        """The samples ready to go out with this line (() while a tick is incomplete)."""
        if self._gpus is None:
            if self._first and sample.index <= self._first[-1]:
                self._gpus = len(self._first)  # the second tick began: now it is known
            else:
                self._first.append(sample.index)
                return (sample,)
        done: tuple[GpuSample, ...] = ()
        if self._batch and sample.index <= self._batch[-1].index:
            done, self._batch = tuple(self._batch), []
        self._batch.append(sample)
        if not done and len(self._batch) >= self._gpus:
            done, self._batch = tuple(self._batch), []
        return done


class GpuTelemetry:
    """Performs ``StartTelemetry`` / ``StopTelemetry``; posts ``GpuSampled`` and, once,
    ``GpuTelemetryAbsent``."""

    def __init__(
        self,
        transport: Transport,
        backend: ServiceBackend,
        post: Callable[[ev.Event], None],
        *,
        interval_ms: int = INTERVAL_MS,
    ) -> None:
        self._transport = transport
        self._backend = backend
        self._post = post
        self.interval_ms = interval_ms
        self.task: asyncio.Task[None] | None = None
        """The run sampling for the trial in progress (None between trials)."""
        self.absent = ""
        """Why the box's GPUs cannot be sampled, once known."""
        self.sampled = False
        """Whether this trial's runs printed a sample (a run that then stops is lost)."""

    def perform(self, effect: fx.Effect) -> None:
        if isinstance(effect, fx.StartTelemetry):
            self.stop()
            if not self.absent:
                self.task = asyncio.ensure_future(self._run(effect.trial_index, effect.epoch))
        elif isinstance(effect, fx.StopTelemetry):
            self.stop()

    def stop(self) -> None:
        if self.task is not None:
            self.task.cancel()
            self.task = None

    def _say_absent(self, reason: str, epoch: int) -> None:
        self.absent = reason
        self._post(ev.GpuTelemetryAbsent(reason=reason, epoch=epoch))

    @property
    def silence_s(self) -> float:
        """How long a running ``nvidia-smi`` may print nothing before it is stalled."""
        return max(MIN_SILENCE_S, SILENT_TICKS * self.interval_ms / 1000)

    def _say_lost(self, reason: str, trial_index: int, epoch: int) -> None:
        self._post(ev.GpuTelemetryLost(reason=reason, trial_index=trial_index, epoch=epoch))

    async def _run(self, trial_index: int, epoch: int) -> None:
        if isinstance(self._backend, LocatedService):
            self._say_absent("the GPUs are on the batch job's node", epoch)
            return
        self.sampled = False
        why = ""
        for attempt in range(MAX_RESTARTS + 1):
            if attempt:
                await asyncio.sleep(RESTART_AFTER_S)
            said: list[str] = []
            silent = False
            try:
                await self._stream(trial_index, epoch, said)
                why = f"nvidia-smi exited{f' ({said[-1][:120]})' if said else ''}"
            except TimeoutError:
                silent, why = True, f"nvidia-smi printed nothing for {self.silence_s:g} s"
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # a dropped link, an error status: try again, a few times
                log.debug("telemetry: the nvidia-smi stream ended with %s", exc)
                why = (  # what nvidia-smi said before it failed, never the shell's command
                    f"nvidia-smi exited ({said[-1][:120]})"
                    if said
                    else f"the nvidia-smi stream ended: {str(exc)[:160] or type(exc).__name__}"
                )
                if self.sampled:
                    self._say_lost(why, trial_index, epoch)
                continue
            if not self.sampled:
                self._say_absent(why if silent else absent_reason(said), epoch)
                return
            self._say_lost(why, trial_index, epoch)  # a sample again clears it
        if self.sampled:
            gone = f"{why}; not restarted after {MAX_RESTARTS} restarts"
            self._say_lost(gone, trial_index, epoch)

    async def _stream(self, trial_index: int, epoch: int, said: list[str]) -> None:
        """One run of ``nvidia-smi``: post its samples (:attr:`sampled` once it printed one).
        The first lines that are not samples, and the latest, are kept in ``said`` (why there
        is no GPU, what it said as it died);
        ``TimeoutError`` when it prints nothing for :attr:`silence_s`."""
        batcher = Batcher()
        lines = 0
        async with aclosing(self._transport.stream(command(self.interval_ms))) as stream:
            while True:
                try:  # a line every interval, or the run is stalled (TimeoutError)
                    async with asyncio.timeout(self.silence_s):
                        line = await anext(stream)
                except StopAsyncIteration:
                    break
                lines += 1
                if lines > MAX_LINES:
                    break
                sample = parse_sample(line)
                if sample is None:  # the first lines and the latest: why it has no GPU or died
                    said[min(len(said), 7) :] = [line.strip()[:400]]
                    continue
                self.sampled = True
                tick = batcher.add(sample)
                if tick:
                    self._post(ev.GpuSampled(samples=tick, trial_index=trial_index, epoch=epoch))
