"""The async controller: performs the state machine's effects through the ports and feeds
their outcomes back as events.

Why it is shaped like this: every decision lives in the pure ``core.machine``; this module
only *does* things (deploy, restart, follow the log, poll health and status, benchmark,
record) and reports what happened. One inbox queue serialises every input (user intents and
outcomes of background work), so ``step()`` never runs concurrently with itself and every
transition is published, in order, to subscribers (the console, the headless printer, the
session recorder, tests) as ``callback(state, event)``.

Crash detection while a server loads or serves combines three sources in one *watch*:

* the log stream, parsed line by line (``core.logparse``): a fatal line is reported the
  moment it is read; a traceback ends at the next ordinary line or when the stream ends,
  and as a fallback after ``settle_after_s`` (1 s) of silence — long enough for a log
  delivered in bursts not to cut a traceback before the line that classifies it;
* the service status, polled every ``status_interval_s`` and immediately when the log
  stream ends (a process that exits closes its log): an exited/failed service is a crash,
  reported once the log has drained (at most ``exit_grace_s`` later) so the fatal line that
  explains it is seen first;
* ``GET /health`` every ``health_interval_s`` until the server answers, so readiness is
  seen even when the ready line is missed.

There is never a fixed sleep: the load timeout is a timer the machine asks for.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections.abc import Awaitable, Callable, Iterable
from contextlib import aclosing
from dataclasses import replace
from typing import Any, Protocol

import httpx

from specconsole.core import effects as fx
from specconsole.core import events as ev
from specconsole.core import validation
from specconsole.core.config import ServerConfig
from specconsole.core.log_events import (
    Capacity,
    CudaGraphBegin,
    FatalError,
    KVCacheAllocated,
    LogEvent,
    MemoryPoolEnd,
    Ready,
    WeightsBegin,
    WeightsEnd,
)
from specconsole.core.logparse import LogParser
from specconsole.core.machine import IllegalTransition, step
from specconsole.core.metrics import BenchResult, LevelMetrics
from specconsole.core.ports import (
    BenchmarkRunner,
    BenchProgress,
    LocatedService,
    ServiceBackend,
    ServiceState,
    ServiceStatus,
    Transport,
)
from specconsole.core.render import to_argv
from specconsole.core.secrets import redact_text
from specconsole.core.state import (
    ControllerState,
    LevelSummary,
    LoadStage,
    Notice,
    TrialRecord,
    close_open_stamp,
)

log = logging.getLogger(__name__)

Subscriber = Callable[[ControllerState, ev.Event], None]

STAGE_ORDER: tuple[LoadStage, ...] = (
    LoadStage.STARTING,
    LoadStage.WEIGHTS,
    LoadStage.KV_CACHE,
    LoadStage.CUDA_GRAPH,
    LoadStage.WARMUP,
)

SERVER_INFO_KEYS: tuple[str, ...] = (
    "version",
    "speculative_algorithm",
    "speculative_num_steps",
    "speculative_eagle_topk",
    "speculative_num_draft_tokens",
    "mem_fraction_static",
    "cuda_graph_max_bs",
    "max_running_requests",
    "max_total_num_tokens",
    "tp_size",
    "context_length",
    "chunked_prefill_size",
    "attention_backend",
    "avg_spec_accept_length",
)
"""Resolved server arguments kept in each trial record (from ``/server_info``)."""


class TrialRecorder(Protocol):
    """Where finished trials and captured logs go (``session.recorder.SessionRecorder``)."""

    def record(self, record: TrialRecord, bench: dict[str, Any] | None) -> TrialRecord:
        """Persist durably; may return the record with ``log_file`` filled in."""
        ...

    def save(self, state: ControllerState) -> None:
        """Rewrite the session's progress."""
        ...

    def log_lines(self, trial_index: int | None, lines: tuple[str, ...]) -> None:
        """Append captured server log lines for a trial."""
        ...


Validator = Callable[[ServerConfig], ev.Outcome]


def default_validator(config: ServerConfig) -> ev.Outcome:
    """Validate with SGLang's rules, normalize, render the argv (``core.validation``,
    ``core.render``)."""

    issues = validation.validate(config)
    blocking = validation.errors(issues)
    warnings = tuple(
        f"{i.field or 'config'}: {i.message} ({i.fix})" for i in issues if not i.blocking
    )
    if blocking:
        return ev.ConfigInvalid(
            errors=tuple(f"{i.field or 'config'}: {i.message} Fix: {i.fix}" for i in blocking),
            warnings=warnings,
        )
    normalized, notes = validation.normalize(config)
    argv = tuple(to_argv(normalized))
    note_text = tuple(f"{i.field or 'config'}: {i.message}" for i in notes)
    return ev.ConfigValidated(config=normalized, argv=argv, warnings=warnings + note_text)


def level_summary(lv: LevelMetrics) -> LevelSummary:
    """The render-friendly figures of one measured level."""
    return LevelSummary(
        concurrency=lv.max_concurrency,
        output_tok_s=lv.output_throughput,
        per_request_tok_s=lv.mean_decode_tok_s,
        completed=lv.completed,
        failed=lv.failed,
        ttft_p50_ms=lv.latency_ms.get("median_ttft_ms"),
        itl_p50_ms=lv.latency_ms.get("median_itl_ms"),
        accept_length=(
            lv.accept_length if lv.accept_length is not None else lv.request_accept_length
        ),
        duration_s=lv.duration,
        ttft_p99_ms=lv.latency_ms.get("p99_ttft_ms"),
        itl_p99_ms=lv.latency_ms.get("p99_itl_ms"),
        tpot_p50_ms=lv.latency_ms.get("median_tpot_ms"),
        tpot_p99_ms=lv.latency_ms.get("p99_tpot_ms"),
        request_goodput=lv.request_goodput,
    )


def level_summaries(result: BenchResult) -> tuple[LevelSummary, ...]:
    """The render-friendly per-level figures from a benchmark result."""
    return tuple(level_summary(lv) for lv in result.levels)


def mean_accept_length(levels: Iterable[LevelSummary]) -> float | None:
    values = [lv.accept_length for lv in levels if lv.accept_length is not None]
    return sum(values) / len(values) if values else None


class Controller:
    """Runs the machine: ``await controller.run()``; feed intents with ``send``."""

    def __init__(
        self,
        *,
        transport: Transport,
        backend: ServiceBackend,
        runner: BenchmarkRunner,
        state: ControllerState | None = None,
        recorder: TrialRecorder | None = None,
        validator: Validator = default_validator,
        clock: Callable[[], float] = time.time,
        health_interval_s: float = 0.5,
        status_interval_s: float = 0.5,
        log_batch_s: float = 0.05,
        settle_after_s: float = 1.0,
        exit_grace_s: float = 1.0,
        http_timeout_s: float = 10.0,
        stop_on_finish: bool = False,
    ) -> None:
        self.transport = transport
        self.backend = backend
        self.runner = runner
        self.recorder = recorder
        self.validator = validator
        self.clock = clock
        self.health_interval_s = health_interval_s
        self.status_interval_s = status_interval_s
        self.log_batch_s = log_batch_s
        self.settle_after_s = settle_after_s
        self.exit_grace_s = exit_grace_s
        self.http_timeout_s = http_timeout_s
        self.stop_on_finish = stop_on_finish
        self._state = state or ControllerState()
        self._subscribers: list[Subscriber] = []
        self._inbox: asyncio.Queue[ev.Event] = asyncio.Queue()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._ops: set[asyncio.Task[None]] = set()
        self._watch: asyncio.Task[None] | None = None
        self._watch_cursor: str | None = None
        self._bench: asyncio.Task[None] | None = None
        self._stopper: asyncio.Task[None] | None = None
        self._timers: dict[str, asyncio.TimerHandle] = {}
        self._bench_results: dict[int, dict[str, Any]] = {}
        self._http: httpx.AsyncClient | None = None
        self._urls: dict[tuple[str, int], str] = {}
        self._stopping = False
        self._stop_on_exit = False
        self.finished: asyncio.Event = asyncio.Event()
        self.finish_reason: str = ""
        self.exit_code: int = 0

    # -- public API ---------------------------------------------------------------------------

    @property
    def state(self) -> ControllerState:
        return self._state

    def subscribe(self, callback: Subscriber) -> Callable[[], None]:
        """Call ``callback(state, event)`` after every transition; returns an unsubscriber."""
        self._subscribers.append(callback)

        def unsubscribe() -> None:
            with contextlib.suppress(ValueError):
                self._subscribers.remove(callback)

        return unsubscribe

    def send(self, event: ev.Event) -> None:
        """Queue an event (intent) from the controller's own loop; stamps ``at`` if unset."""
        if event.at == 0.0:
            event = replace(event, at=self.clock())
        self._inbox.put_nowait(event)

    def send_threadsafe(self, event: ev.Event) -> None:
        """Queue an event from another thread."""
        loop = self._loop
        if loop is None:
            raise RuntimeError("the controller is not running")
        loop.call_soon_threadsafe(self.send, event)

    async def run(self) -> None:
        """Process events until a ``Quit`` (or, with ``stop_on_finish``, the sweep's end)."""
        self._loop = asyncio.get_running_loop()
        self._http = httpx.AsyncClient(timeout=httpx.Timeout(self.http_timeout_s))
        try:
            while not self._stopping:
                event = await self._inbox.get()
                self._dispatch(event)
                # let effect tasks start before the next event
                await asyncio.sleep(0)
        finally:
            await self._teardown()

    # -- dispatch -----------------------------------------------------------------------------

    def _dispatch(self, event: ev.Event) -> None:
        try:
            state, effects = step(self._state, event)
        except IllegalTransition as exc:
            level = "warning" if isinstance(event, ev.Intent) else "error"
            if level == "error":
                log.error("controller: %s", exc)
            state = replace(self._state, notice=Notice(level, str(exc), event.at or self.clock()))
            effects = ()
        except Exception as exc:  # a bug in the machine must not kill the controller
            log.exception("controller: step failed on %r", event)
            text = f"internal error handling {type(event).__name__}: {exc}"
            state = replace(self._state, notice=Notice("error", text, event.at or self.clock()))
            effects = ()
        self._state = state
        self._publish(event)
        for effect in effects:
            try:
                self._perform(effect)
            except Exception as exc:  # a bug in an effect handler must not kill the loop
                log.exception("controller: effect %s failed", type(effect).__name__)
                self._post(
                    ev.OperationFailed(
                        operation=type(effect).__name__, message=str(exc), epoch=effect.epoch
                    )
                )

    def _publish(self, event: ev.Event) -> None:
        for callback in list(self._subscribers):
            try:
                callback(self._state, event)
            except Exception:
                log.exception("controller: subscriber %r failed", callback)

    def _post(self, event: ev.Event) -> None:
        if event.at == 0.0:
            event = replace(event, at=self.clock())
        self._inbox.put_nowait(event)

    def _spawn(
        self, coro: Awaitable[None], *, group: set[asyncio.Task[None]] | None = None
    ) -> asyncio.Task[None]:
        task: asyncio.Task[None] = asyncio.ensure_future(coro)
        if group is not None:
            group.add(task)
            task.add_done_callback(group.discard)
        return task

    async def _guard(
        self, operation: str, epoch: int, body: Callable[[], Awaitable[ev.Outcome]]
    ) -> None:
        """Run one operation; post its outcome, or OperationFailed naming it."""
        try:
            outcome = await body()
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            message = str(exc) or type(exc).__name__
            self._post(ev.OperationFailed(operation=operation, message=message, epoch=epoch))
            return
        self._post(replace(outcome, epoch=epoch))

    # -- effects ------------------------------------------------------------------------------

    def _perform(self, effect: fx.Effect) -> None:
        e = effect.epoch
        if isinstance(effect, fx.Validate):
            try:
                outcome = self.validator(effect.config)
            except Exception as exc:
                outcome = ev.OperationFailed(operation="validate", message=str(exc))
            self._post(replace(outcome, epoch=e))
        elif isinstance(effect, fx.CheckReattach):
            cfg = effect.config
            self._spawn(
                self._guard("reattach", e, lambda: self._check_reattach(cfg)), group=self._ops
            )
        elif isinstance(effect, fx.Deploy):
            cfg = effect.config
            self._spawn(self._guard("deploy", e, lambda: self._deploy(cfg)), group=self._ops)
        elif isinstance(effect, fx.Restart):
            self._spawn(self._guard("restart", e, self._restart), group=self._ops)
        elif isinstance(effect, fx.StartWatch):
            self._start_watch(effect)
        elif isinstance(effect, fx.StopWatch):
            self._stop_watch()
        elif isinstance(effect, fx.StartTimer):
            self._start_timer(effect)
        elif isinstance(effect, fx.CancelTimer):
            handle = self._timers.pop(effect.key, None)
            if handle is not None:
                handle.cancel()
        elif isinstance(effect, fx.FetchServerInfo):
            self._spawn(self._guard("server_info", e, self._server_info), group=self._ops)
        elif isinstance(effect, fx.FlushCache):
            self._spawn(self._guard("flush_cache", e, self._flush), group=self._ops)
        elif isinstance(effect, fx.RunBenchmark):
            spec = effect.spec
            self._bench = self._spawn(self._guard("benchmark", e, lambda: self._benchmark(spec)))
        elif isinstance(effect, fx.CancelBenchmark):
            if self._bench is not None:
                self._bench.cancel()
                self._bench = None
        elif isinstance(effect, fx.AbortOperations):
            for task in list(self._ops):
                task.cancel()
        elif isinstance(effect, fx.RecordTrial):
            self._record(effect)
        elif isinstance(effect, fx.SaveSession):
            if self.recorder is not None:
                try:
                    self.recorder.save(self._state)
                except Exception:
                    log.exception("controller: saving the session failed")
        elif isinstance(effect, fx.StopServer):
            self._stopper = self._spawn(self._guard("stop", e, self._stop_server))
        elif isinstance(effect, fx.Notify):
            log.info("%s: %s", effect.level, effect.text)
        elif isinstance(effect, fx.Finish):
            self.finish_reason = effect.reason
            self.exit_code = effect.exit_code
            self.finished.set()
            if self.stop_on_finish:
                self._stopping = True
        elif isinstance(effect, fx.Shutdown):
            self._stopping = True
            if effect.stop_server:
                self._stop_on_exit = True
        else:  # pragma: no cover - every effect type is handled above
            raise TypeError(f"unknown effect {effect!r}")

    def _record(self, effect: fx.RecordTrial) -> None:
        # The machine opened the ``recording`` stamp; it ends now, as the record is written,
        # so the record on disk carries a complete, ordered set of phases.
        record = effect.record
        record = replace(record, phases=close_open_stamp(record.phases, self.clock()))
        bench = self._bench_results.pop(record.index, None)
        if self.recorder is not None:
            try:
                record = self.recorder.record(record, bench)
            except Exception as exc:
                log.exception("controller: recording trial %d failed", record.index + 1)
                self._post(
                    ev.OperationFailed(operation="record", message=str(exc), epoch=effect.epoch)
                )
                return
        if self._state.trial is not None and self._state.trial.index == record.index:
            self._state = replace(self._state, trial=record)
        self._post(ev.TrialRecorded(index=record.index, epoch=effect.epoch))

    # -- operations ---------------------------------------------------------------------------

    async def _url(self, config: ServerConfig | None = None) -> str:
        """A locally reachable URL of the deployed server (an SSH forward when remote)."""
        cfg = config or self._state.deployed_config or self._state.current_config
        if cfg is None:
            raise RuntimeError("no configuration is deployed")
        host = await self._server_host(cfg)
        key = (host, cfg.port)
        url = self._urls.get(key)
        if url is None:
            forward = await self.transport.forward_local_port(cfg.port, host)
            url = forward.url
            self._urls[key] = url
        return url

    async def _server_host(self, cfg: ServerConfig) -> str:
        """Where the server listens as the box sees it: ``[server] host``, or the node of a
        batch job (a :class:`LocatedService` backend knows it once the job runs)."""
        if isinstance(self.backend, LocatedService):
            host = await self.backend.server_host(cfg)
            if host is None:
                raise RuntimeError("the server's node is not known yet (the job is queued)")
            return host
        return cfg.host if cfg.host not in ("0.0.0.0", "::", "") else "127.0.0.1"

    async def _deploy(self, config: ServerConfig) -> ev.Outcome:
        preview = await self.backend.preview(config)
        diff = redact_text(preview.diff, [name for name, _ in config.env])
        self._post(ev.DeployPreviewed(diff=diff, epoch=self._state.epoch))
        receipt = await self.backend.deploy(config)
        return ev.DeployDone(
            artifact_hash=receipt.artifact_hash,
            backup_path=receipt.backup_path,
            location=receipt.location,
        )

    async def _restart(self) -> ev.Outcome:
        await self.backend.start()
        return ev.Restarted()

    async def _check_reattach(self, config: ServerConfig) -> ev.Outcome:
        preview = await self.backend.preview(config)
        deployed = await self.backend.deployed_hash()
        if deployed != preview.artifact_hash:
            return ev.ReattachChecked(
                attached=False, detail="a different configuration is deployed"
            )
        if await self.backend.running_hash() != preview.artifact_hash:
            return ev.ReattachChecked(
                attached=False, detail="the running server predates the deploy"
            )
        status = await self.backend.status()
        if status.state is not ServiceState.RUNNING:
            return ev.ReattachChecked(attached=False, detail=f"the service is {status.state.value}")
        assert self._http is not None
        try:
            response = await self._http.get(f"{await self._url(config)}/health", timeout=5.0)
        except httpx.HTTPError as exc:
            return ev.ReattachChecked(attached=False, detail=f"health check failed: {exc}")
        if response.status_code != 200:
            return ev.ReattachChecked(
                attached=False, detail=f"health answered {response.status_code}"
            )
        return ev.ReattachChecked(
            attached=True, artifact_hash=preview.artifact_hash, detail="same configuration, healthy"
        )

    async def _server_info(self) -> ev.Outcome:
        assert self._http is not None
        response = await self._http.get(f"{await self._url()}/server_info")
        response.raise_for_status()
        data = response.json()
        items: list[tuple[str, str]] = []
        flat: dict[str, Any] = {}
        if isinstance(data, dict):
            flat.update(data)
            for nested in ("server_args", "internal_states"):
                inner = data.get(nested)
                if isinstance(inner, dict):
                    flat.update({k: v for k, v in inner.items() if k not in flat})
                elif isinstance(inner, list) and inner and isinstance(inner[0], dict):
                    flat.update({k: v for k, v in inner[0].items() if k not in flat})
        for key in SERVER_INFO_KEYS:
            if key in flat and flat[key] is not None:
                items.append((key, json.dumps(flat[key])))
        return ev.ServerInfoFetched(items=tuple(items))

    async def _flush(self) -> ev.Outcome:
        assert self._http is not None
        response = await self._http.post(f"{await self._url()}/flush_cache")
        if response.status_code >= 400:
            raise RuntimeError(
                f"/flush_cache answered {response.status_code}: {response.text[:200]}"
            )
        return ev.CacheFlushed()

    async def _benchmark(self, spec: Any) -> ev.Outcome:
        cfg = self._state.deployed_config or self._state.current_config
        if cfg is None:
            raise RuntimeError("no configuration is deployed")
        trial = self._state.trial
        epoch = self._state.epoch

        def progress(p: BenchProgress) -> None:
            self._post(ev.BenchProgressed(progress=p, epoch=epoch))
            if p.level_result is not None:  # a level finished: its numbers, live
                self._post(
                    ev.BenchLevelFinished(
                        level_index=p.level_index,
                        level=level_summary(p.level_result),
                        epoch=epoch,
                    )
                )

        url = f"http://{await self._server_host(cfg)}:{cfg.port}"
        result = await self.runner.run(spec, url, on_progress=progress)
        if not isinstance(result, BenchResult):
            raise TypeError(f"the benchmark runner returned {type(result).__name__}")
        if trial is not None:
            self._bench_results[trial.index] = result.to_dict()
        levels = level_summaries(result)
        return ev.BenchFinished(
            levels=levels,
            accept_length=mean_accept_length(levels),
            partial=result.partial,
            error=result.error,
        )

    async def _stop_server(self) -> ev.Outcome:
        await self.backend.stop()
        status: ServiceStatus | None
        try:
            status = await self.backend.status()
        except Exception:
            status = None
        return ev.ServerStopped(status=status)

    # -- timers -------------------------------------------------------------------------------

    def _start_timer(self, effect: fx.StartTimer) -> None:
        old = self._timers.pop(effect.key, None)
        if old is not None:
            old.cancel()
        loop = asyncio.get_running_loop()
        self._timers[effect.key] = loop.call_later(
            effect.seconds, lambda: self._post(ev.TimerFired(key=effect.key, epoch=effect.epoch))
        )

    # -- the watch ----------------------------------------------------------------------------

    def _start_watch(self, effect: fx.StartWatch) -> None:
        after = self._watch_cursor if effect.continue_previous else None
        self._stop_watch()
        if not effect.continue_previous:
            self._watch_cursor = None
        self._watch = self._spawn(self._watch_server(effect.epoch, effect.trial_index, after))

    def _stop_watch(self) -> None:
        if self._watch is not None:
            self._watch.cancel()
            self._watch = None

    async def _watch_server(self, epoch: int, trial_index: int | None, after: str | None) -> None:
        """Log stream + status polling + health polling, until cancelled."""
        lines: asyncio.Queue[tuple[str, str | None] | None] = asyncio.Queue(maxsize=10_000)
        exited = asyncio.Event()
        log_done = asyncio.Event()
        ready = asyncio.Event()
        tasks = [
            asyncio.ensure_future(self._read_logs(lines, after)),
            asyncio.ensure_future(self._poll_status(epoch, exited, log_done)),
            asyncio.ensure_future(self._poll_health(epoch, ready)),
        ]
        try:
            await self._consume_logs(epoch, trial_index, lines, exited, ready)
            log_done.set()
            # The log of a run ends when its process exits: wait for the status poller to
            # confirm and report it (it polls at once, see ``exited``).
            tasks[2].cancel()
            await tasks[1]
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

    async def _read_logs(
        self, out: asyncio.Queue[tuple[str, str | None] | None], after: str | None
    ) -> None:
        try:
            async with aclosing(self.backend.logs(after=after)) as records:
                async for record in records:
                    await out.put((record.text, record.cursor))
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            log.warning("controller: log stream ended with %s", exc)
        finally:
            with contextlib.suppress(asyncio.QueueFull):
                out.put_nowait(None)

    async def _poll_status(
        self, epoch: int, exited: asyncio.Event, log_done: asyncio.Event
    ) -> None:
        """Report an exited/failed service once; poll now whenever the log stream ends.

        A dying server writes its fatal lines and then exits (SGLang kills its own process
        tree), and the manager may report the exit before the log has been read. So the
        exit is reported once the log stream has ended (its last lines parsed, the fatal
        event posted first) or after ``exit_grace_s``, whichever comes first.
        """
        seen_running = False
        while True:
            try:
                status = await self.backend.status()
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                log.debug("controller: status poll failed: %s", exc)
                status = None
            if status is not None:
                if status.state is ServiceState.STARTING and status.detail.startswith("queued"):
                    # a batch job waiting for a node: "queued: Resources"
                    self._post(
                        ev.LoadStageSeen(stage=LoadStage.QUEUED, detail=status.detail, epoch=epoch)
                    )
                elif status.state in (ServiceState.RUNNING, ServiceState.STARTING):
                    seen_running = True
                elif status.state in (ServiceState.EXITED, ServiceState.FAILED) or (
                    status.state is ServiceState.INACTIVE and seen_running
                ):
                    with contextlib.suppress(TimeoutError):
                        async with asyncio.timeout(self.exit_grace_s):
                            await log_done.wait()
                    self._post(ev.ServiceExited(status=status, epoch=epoch))
                    return
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self.status_interval_s):
                    await exited.wait()
                    exited.clear()

    async def _poll_health(self, epoch: int, ready: asyncio.Event) -> None:
        """GET /health until it answers 200 once (then readiness is known)."""
        assert self._http is not None
        while not ready.is_set():
            try:
                url = await self._url()
                response = await self._http.get(f"{url}/health", timeout=2.0)
                if response.status_code == 200:
                    ready.set()
                    self._post(ev.ServerReady(via="health", epoch=epoch))
                    return
            except asyncio.CancelledError:
                raise
            except Exception:
                pass
            await asyncio.sleep(self.health_interval_s)

    async def _consume_logs(
        self,
        epoch: int,
        trial_index: int | None,
        lines: asyncio.Queue[tuple[str, str | None] | None],
        exited: asyncio.Event,
        ready: asyncio.Event,
    ) -> None:
        parser = LogParser(
            self._state.current_config.engine if self._state.current_config else None
        )
        batch: list[str] = []
        stage_index = 0
        kv_inferred = False  # the KV stage was entered on a "Load weight end", no KV line yet
        batch_started = 0.0
        loop = asyncio.get_running_loop()

        def flush() -> None:
            nonlocal batch
            if batch:
                chunk = tuple(batch)
                batch = []
                if self.recorder is not None:
                    try:
                        self.recorder.log_lines(trial_index, chunk)
                    except Exception:
                        log.exception("controller: writing the captured log failed")
                self._post(ev.LogLines(lines=chunk, trial_index=trial_index, epoch=epoch))

        def handle(events: list[LogEvent]) -> None:
            nonlocal stage_index, kv_inferred
            for event in events:
                if isinstance(event, KVCacheAllocated | MemoryPoolEnd):
                    kv_inferred = False  # the pool is really being sized now
                outcome = self._translate(event, epoch)
                for out in outcome:
                    if isinstance(out, ev.LoadStageSeen):
                        idx = STAGE_ORDER.index(out.stage)
                        # stages only advance, except that a second model's weights (the
                        # draft) may begin loading after the first one's weights ended
                        again = kv_inferred and out.stage is LoadStage.WEIGHTS
                        if idx <= stage_index and not again:
                            continue
                        stage_index = idx
                        kv_inferred = isinstance(event, WeightsEnd)
                    if isinstance(out, ev.ServerReady):
                        ready.set()
                    flush()  # lines before the event they explain
                    self._post(out)

        last_line = loop.time()
        while True:
            timeout = None
            if parser.in_traceback:
                timeout = max(0.0, self.settle_after_s - (loop.time() - last_line))
            if batch:
                remaining = self.log_batch_s - (loop.time() - batch_started)
                timeout = remaining if timeout is None else min(timeout, remaining)
            try:
                if timeout is None:
                    item = await lines.get()
                else:
                    async with asyncio.timeout(max(0.0, timeout)):
                        item = await lines.get()
            except TimeoutError:
                flush()
                if parser.in_traceback and loop.time() - last_line >= self.settle_after_s:
                    handle(parser.settle())  # a traceback followed by silence: it is over
                    flush()
                continue
            if item is None:  # the stream ended: the process is gone (or the link dropped)
                handle(parser.flush())
                flush()
                exited.set()
                return
            text, cursor = item
            last_line = loop.time()
            if cursor is not None:
                self._watch_cursor = cursor
            if not batch:
                batch_started = loop.time()
            batch.append(text)
            handle(parser.feed(text))

    def _translate(self, event: LogEvent, epoch: int) -> list[ev.Outcome]:
        """Typed log events → the machine's outcomes."""
        if isinstance(event, FatalError):
            lines = tuple(event.excerpt.splitlines()) if event.excerpt else ()
            message = event.summary or (lines[0] if lines else event.cause.value)
            return [
                ev.FatalSeen(
                    cause=event.cause.value,
                    message=message,
                    excerpt=lines,
                    fixes=tuple(f.text for f in event.fixes),
                    epoch=epoch,
                )
            ]
        if isinstance(event, Ready):
            return [ev.ServerReady(via="log", epoch=epoch)]
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
            out.append(ev.LoadStageSeen(stage=LoadStage.WARMUP, epoch=epoch))
            return out
        if isinstance(event, WeightsBegin):
            return [ev.LoadStageSeen(stage=LoadStage.WEIGHTS, detail=event.role.value, epoch=epoch)]
        if isinstance(event, WeightsEnd):
            # the weights are in: SGLang sizes and allocates the KV pool next (a "Not enough
            # memory" after this line is a KV-cache failure, not a weight-loading one)
            return [
                ev.LoadStageSeen(stage=LoadStage.KV_CACHE, detail=event.role.value, epoch=epoch)
            ]
        if isinstance(event, KVCacheAllocated | MemoryPoolEnd):
            return [ev.LoadStageSeen(stage=LoadStage.KV_CACHE, epoch=epoch)]
        if isinstance(event, CudaGraphBegin):
            return [ev.LoadStageSeen(stage=LoadStage.CUDA_GRAPH, detail=event.stage, epoch=epoch)]
        return []

    # -- teardown -----------------------------------------------------------------------------

    async def _teardown(self) -> None:
        for handle in self._timers.values():
            handle.cancel()
        self._timers.clear()
        tasks = [t for t in (*self._ops, self._watch, self._bench) if t is not None]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        if self._stopper is not None and not self._stopper.done():
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._stopper, 30.0)
        if self._stop_on_exit:
            with contextlib.suppress(Exception):
                await self.backend.stop()
        if self._http is not None:
            await self._http.aclose()
            self._http = None
        if self.recorder is not None:
            with contextlib.suppress(Exception):
                self.recorder.save(self._state)
