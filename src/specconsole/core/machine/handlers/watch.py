"""The watch over a loading or serving server: log events, status polls and health answers
turned into the machine's events. Pure: the runtime reads the log, polls the service
manager and ``GET /health``, feeds what it got here and posts what comes back.

Why one module: "where is a crash detected?" has one answer. The parser
(``core.logs``) recognises lines; this module decides what they mean for the trial:

* **the one "is this fatal?" rule** — :func:`is_fatal` for a parsed event (what ends a
  trial as a crash) and :func:`looks_fatal` for one line out of context (what the console's
  journal marks fatal); both rest on the parser's fatal classifier;
* **load-stage ordering** — stages only advance (``STAGE_ORDER``), except that a second
  model's weights (the draft) may begin loading after the first one's weights ended, which
  had moved the trial to the KV-cache stage;
* **exit detection** — a status poll that says exited/failed (or inactive after it was seen
  running) is the server's exit; the runtime delays posting it until the log has drained
  (at most its grace period) so the fatal line that explains the exit is seen first;
* **readiness** — the ready line, or ``/health`` answering 200.

The machine (``core.machine``) then decides what a fatal line, an exit or the load timeout
does to the trial in each phase.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace

from specconsole.core.logs.dialect import classify_fatal
from specconsole.core.logs.events import (
    STAGE_ORDER,
    Capacity,
    CudaGraphBegin,
    FatalCause,
    FatalError,
    KVCacheAllocated,
    LoadStage,
    LogEvent,
    MemoryPoolEnd,
    Ready,
    ServiceExited,
    SpeculationOff,
    WeightsBegin,
    WeightsEnd,
)
from specconsole.core.machine import events as ev
from specconsole.core.ports import ServiceState, ServiceStatus

__all__ = [
    "STAGE_ORDER",
    "Watch",
    "is_fatal",
    "looks_fatal",
    "on_health",
    "on_log_events",
    "on_status",
    "translate",
]

_UP = (ServiceState.RUNNING, ServiceState.STARTING)
_DOWN = (ServiceState.EXITED, ServiceState.FAILED)


@dataclass(frozen=True, slots=True)
class Watch:
    """What one watch (one server start, or a reattach) has seen so far."""

    epoch: int
    """The epoch of the ``StartWatch`` effect: every event posted carries it."""
    stage: LoadStage = LoadStage.STARTING
    """The furthest load stage reported."""
    kv_inferred: bool = False
    """The KV stage was entered on a ``Load weight end``, no KV line seen yet."""
    seen_running: bool = False
    """A status poll saw the service running (so *inactive* now means it went away)."""
    ready: bool = False
    """Readiness was reported (ready line or health): health polling can stop."""


# --------------------------------------------------------------------------------------------
# The one "is this fatal?" rule
# --------------------------------------------------------------------------------------------


def is_fatal(event: LogEvent) -> bool:
    """A parsed log event that means the server is dying: a classified fatal error, or the
    service manager's exit line for an exit nobody asked for.

    A fatal error ends the trial as a crash at once (:func:`translate`); an unrequested
    exit line is reported through the status poll instead, which carries the exit status.
    """
    if isinstance(event, FatalError):
        return True
    return isinstance(event, ServiceExited) and not event.expected


def looks_fatal(line: str) -> bool:
    """One line, out of context, that shows a fatal error: a traceback header, a known fatal
    signature (the parser's classifier, over every registered engine's grammar), or an
    exception line such as ``RuntimeError: ...`` that ends a traceback. The console's journal
    highlights these."""
    if "Traceback (most recent call last)" in line:
        return True
    cause, _proof = classify_fatal([line])
    if cause != FatalCause.UNKNOWN_TRACEBACK:
        return True
    head = line.lstrip().split(":", 1)[0] if ":" in line else ""
    return head.endswith(("Error", "Exception")) and " " not in head


# --------------------------------------------------------------------------------------------
# Log events
# --------------------------------------------------------------------------------------------


def translate(event: LogEvent, epoch: int) -> list[ev.Outcome]:
    """Typed log events → the machine's outcomes (stage ordering aside)."""
    if isinstance(event, FatalError):
        lines = tuple(event.excerpt.splitlines()) if event.excerpt else ()
        message = event.summary or (lines[0] if lines else str(event.cause))
        return [
            ev.FatalSeen(
                cause=str(event.cause),
                message=message,
                excerpt=lines,
                fixes=tuple(event.fixes),
                epoch=epoch,
            )
        ]
    if isinstance(event, Ready):
        return [ev.ServerReady(via="log", epoch=epoch)]
    if isinstance(event, SpeculationOff):
        return [ev.SpeculationOffSeen(reason=event.reason, epoch=epoch)]
    if isinstance(event, Capacity):
        out: list[ev.Outcome] = []
        if event.max_total_num_tokens is not None:
            out.append(
                ev.CapacitySeen(
                    max_total_num_tokens=event.max_total_num_tokens,
                    max_running_requests=event.max_running_requests,
                    epoch=epoch,
                )
            )
        out.append(ev.LoadStageSeen(stage=event.then, epoch=epoch))
        return out
    if isinstance(event, WeightsBegin):
        return [ev.LoadStageSeen(stage=LoadStage.WEIGHTS, detail=event.role.value, epoch=epoch)]
    if isinstance(event, WeightsEnd):
        # the weights are in: SGLang sizes and allocates the KV pool next (a "Not enough
        # memory" after this line is a KV-cache failure, not a weight-loading one)
        return [ev.LoadStageSeen(stage=LoadStage.KV_CACHE, detail=event.role.value, epoch=epoch)]
    if isinstance(event, KVCacheAllocated | MemoryPoolEnd):
        return [ev.LoadStageSeen(stage=LoadStage.KV_CACHE, epoch=epoch)]
    if isinstance(event, CudaGraphBegin):
        return [ev.LoadStageSeen(stage=LoadStage.CUDA_GRAPH, detail=event.stage, epoch=epoch)]
    return []


def on_log_events(watch: Watch, events: Iterable[LogEvent]) -> tuple[Watch, tuple[ev.Outcome, ...]]:
    """Parsed log events → the outcomes to post, in order, with load stages that only move
    forward (a repeated or earlier stage is dropped)."""
    stage, kv_inferred, ready = watch.stage, watch.kv_inferred, watch.ready
    out: list[ev.Outcome] = []
    for event in events:
        if isinstance(event, KVCacheAllocated | MemoryPoolEnd):
            kv_inferred = False  # the pool is really being sized now
        for outcome in translate(event, watch.epoch):
            if isinstance(outcome, ev.LoadStageSeen):
                # a second model's weights (the draft) may begin after the first one's ended
                again = kv_inferred and outcome.stage is LoadStage.WEIGHTS
                if STAGE_ORDER.index(outcome.stage) <= STAGE_ORDER.index(stage) and not again:
                    continue
                stage = outcome.stage
                kv_inferred = isinstance(event, WeightsEnd)
            elif isinstance(outcome, ev.ServerReady):
                ready = True
            out.append(outcome)
    new = replace(watch, stage=stage, kv_inferred=kv_inferred, ready=ready)
    return new, tuple(out)


# --------------------------------------------------------------------------------------------
# Status polls and health answers
# --------------------------------------------------------------------------------------------


def on_status(watch: Watch, status: ServiceStatus) -> tuple[Watch, tuple[ev.Outcome, ...]]:
    """One status poll → the outcomes to post. A ``ServerExited`` among them ends the watch's
    polling; the runtime posts it once the log has drained (or its grace period passed)."""
    if status.state is ServiceState.STARTING and status.detail.startswith("queued"):
        # a batch job waiting for a node: "queued: Resources"
        return watch, (
            ev.LoadStageSeen(stage=LoadStage.QUEUED, detail=status.detail, epoch=watch.epoch),
        )
    if status.state in _UP:
        return replace(watch, seen_running=True), ()
    if status.state in _DOWN or (status.state is ServiceState.INACTIVE and watch.seen_running):
        return watch, (ev.ServerExited(status=status, epoch=watch.epoch),)
    return watch, ()


def on_health(watch: Watch, status_code: int) -> tuple[Watch, tuple[ev.Outcome, ...]]:
    """One ``GET /health`` answer → ``ServerReady`` the first time it is 200."""
    if status_code != 200 or watch.ready:
        return watch, ()
    return replace(watch, ready=True), (ev.ServerReady(via="health", epoch=watch.epoch),)
