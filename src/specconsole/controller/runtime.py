"""The async controller: performs the state machine's effects through the ports and feeds
their outcomes back as events.

Why it is shaped like this: every decision lives in the pure ``core.machine``; this module
only *does* things (deploy, restart, follow the log, poll health and status, benchmark,
record) and reports what happened. One inbox queue serialises every input (user intents and
outcomes of background work), so ``step()`` never runs concurrently with itself and every
transition is published, in order, to subscribers (the console, the headless printer, the
session recorder, tests) as ``callback(state, event)``.

What the watch over a loading server sees (log, status, health) is turned into events by
the pure ``core.machine.handlers.watch`` (the one home of crash detection); its I/O is in
``controller.watcher``. What an operation's raw result means (validation, benchmark figures,
``/server_info``) is decided by the pure ``core.machine.results``.

There is never a fixed sleep: the load timeout is a timer the machine asks for.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import replace
from typing import Any

from specconsole.controller.probe.boxprobe import probe_box
from specconsole.controller.probe.endpoint import ServerEndpoint
from specconsole.controller.probe.engine_detect import EngineVersionInfo, EngineVersionKeeper, noted
from specconsole.controller.probe.modelfacts import ModelFactsKeeper, plan_configs
from specconsole.controller.reattach import check_reattach
from specconsole.controller.recording import HaltingSink, TrialRecorder
from specconsole.controller.telemetry import GpuTelemetry
from specconsole.controller.timers import Timers
from specconsole.controller.watcher import ServerWatch, WatchTiming, drain
from specconsole.core.boxfacts import BoxProbe
from specconsole.core.config.model import ServerConfig
from specconsole.core.engine.registry import engine_for
from specconsole.core.machine import effects as fx
from specconsole.core.machine import events as ev
from specconsole.core.machine import results
from specconsole.core.machine.common import IllegalTransition
from specconsole.core.machine.state import ControllerState, Notice, close_open_stamp
from specconsole.core.machine.table import step
from specconsole.core.measure.result import BenchResult
from specconsole.core.ports import (
    REACH_FAILURES,
    BenchmarkRunner,
    BenchProgress,
    ServiceBackend,
    ServiceStatus,
    Transport,
)
from specconsole.remote.sidefiles import ask_side_dir, placed

log = logging.getLogger(__name__)

Subscriber = Callable[[ControllerState, ev.Event], None]


Validator = Callable[[ServerConfig], ev.Outcome]
"""Checks a configuration: ``ConfigValidated`` or ``ConfigInvalid`` (``core.machine.results``)."""


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
        validator: Validator = results.validate_config,
        clock: Callable[[], float] = time.time,
        health_interval_s: float = 0.5,
        status_interval_s: float = 0.5,
        log_batch_s: float = 0.05,
        settle_after_s: float = 1.0,
        exit_grace_s: float = 1.0,
        http_timeout_s: float = 10.0,
        stop_on_finish: bool = False,
        detect_engine: bool = False,
        on_engine_version: Callable[[EngineVersionInfo], None] | None = None,
        probe: bool = False,
        on_probe: Callable[[BoxProbe], None] | None = None,
    ) -> None:
        self.transport = transport
        self.backend = backend
        self.runner = runner
        self.recorder = recorder
        self.validator = validator
        self.clock = clock
        self.timing = WatchTiming(
            health_interval_s, status_interval_s, log_batch_s, settle_after_s, exit_grace_s
        )
        self.stop_on_finish = stop_on_finish
        self._state = state or ControllerState()
        self._subscribers: list[Subscriber] = []
        self._inbox: asyncio.Queue[ev.Event] = asyncio.Queue()
        self._ops: set[asyncio.Task[None]] = set()
        self._watch: asyncio.Task[None] | None = None
        self._watcher: ServerWatch | None = None
        self._retired: asyncio.Task[None] | None = None
        """The previous watch, writing its trial's last lines (``watcher.drain``)."""
        self._bench: asyncio.Task[None] | None = None
        self._stopper: asyncio.Task[None] | None = None
        self._timers = Timers()
        self._bench_results: dict[int, dict[str, Any]] = {}
        self.endpoint = ServerEndpoint(transport, backend, timeout_s=http_timeout_s)
        self.telemetry = GpuTelemetry(transport, backend, self._post)  # the GPUs, per trial
        self._stopping = False
        self._stop_on_exit = False
        self.finished: asyncio.Event = asyncio.Event()
        self.finish_reason: str = ""
        self.exit_code: int = 0
        self.halted: str = ""  # why the run stopped itself at once (a write error, reach)
        self._on_engine_version = on_engine_version
        self.side_dir: str | None = None  # the backend's folder for side files, once asked
        self.engine_versions: EngineVersionKeeper | None = None  # the box's release, asked
        if detect_engine:
            self.engine_versions = EngineVersionKeeper(transport, on_change=self._engine_known)
        self.probe, self._on_probe = probe, on_probe  # probe the box before the first event
        self.stop_if_unreachable = False  # headless: an unreachable box stops the run
        self.preflight: Callable[[Controller], Awaitable[str]] | None = None  # why it can't run
        self.model_facts: ModelFactsKeeper | None = None  # the models' own limits, for forecasts

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

    def apply(self, event: ev.Event) -> None:
        """Step ``event`` now, not queued: a pool updates a box's view of the others first."""
        if event.at == 0.0:
            event = replace(event, at=self.clock())
        self._dispatch(event)

    async def run(self) -> None:
        """Process events until a ``Quit`` (or, with ``stop_on_finish``, the sweep's end)."""
        self.endpoint.open()
        try:
            plan = self._state.plan
            config = plan.base if plan is not None else self._state.current_config
            if self.probe and config is not None:
                await self._probe_box(config)
            elif self.engine_versions is not None:  # bounded; unknown is recorded, not fatal
                await self.engine_versions.ensure(config)
            if self.model_facts is not None and config is not None:  # bounded, never fatal
                await self.model_facts.ensure(plan_configs(plan) if plan else [config])
            self.side_dir = await ask_side_dir(self.backend)  # trial 1's argv names it
            if self.preflight is not None and not self._stopping:  # before the first deploy
                self.halted = await self.preflight(self) or self.halted
                self._stopping = self._stopping or bool(self.halted)
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
        except REACH_FAILURES as exc:  # not a result: no trial is recorded for it
            self.halt(f"{operation}: {exc}")
            return
        except Exception as exc:
            message = str(exc) or type(exc).__name__
            self._post(ev.OperationFailed(operation=operation, message=message, epoch=epoch))
            return
        self._post(replace(outcome, epoch=epoch))

    async def _probe_box(self, config: ServerConfig) -> None:
        """Probe the box, deliver the result to the machine, record it; a box that cannot be
        reached stops a headless run here, before its first trial (no trial is recorded)."""
        probe = await probe_box(
            self.transport, self.backend, config, self.endpoint.health_problem,
            self.engine_versions, self.clock, server_info=self.endpoint.server_info,
        )  # fmt: skip
        self._dispatch(ev.BoxProbed(probe=probe, at=probe.at))
        try:
            if self._on_probe is not None:
                self._on_probe(probe)
        except Exception as exc:
            log.exception("controller: recording the box probe failed")
            self.halted, self._stopping = f"could not write the session: {exc}", True
        if not probe.reachable and self.stop_if_unreachable and not self.halted:
            word = "used" if probe.error_kind == "sudo" else "reached"  # the probe said why
            self.halted, self._stopping = f"the box cannot be {word} ({probe.error_kind})", True

    def _engine_known(self, info: EngineVersionInfo) -> None:
        log.info("controller: engine version %s (%s)", info.version or "unknown", info.source)
        started, preflight = bool(self._state.trial or self._state.trials), bool(self.preflight)
        note = info.note(started=started, preflight=preflight)
        self._post(ev.EngineVersionKnown(version=info.version, source=info.source, note=note))
        if self._on_engine_version is not None:
            try:
                self._on_engine_version(info)
            except Exception as exc:
                log.exception("controller: recording the engine version failed")
                self.halt(f"could not write session.toml: {exc}")

    def versioned(self, config: ServerConfig) -> ServerConfig:
        """``config`` for the box: its release's flags (portable while unknown), side files."""
        config = placed(config, self.side_dir) if self.side_dir else config
        return config if self.engine_versions is None else self.engine_versions.apply(config)

    async def _for_box(self, config: ServerConfig) -> ServerConfig:
        if self.engine_versions is not None:  # resolved by run(); here if it had no config
            await self.engine_versions.ensure(config)
        self.side_dir = self.side_dir or await ask_side_dir(self.backend)
        return self.versioned(config)

    def halt(self, reason: str) -> None:
        """Stop the run at once (the first reason is kept): the session cannot be written or
        the box cannot be reached, so going on would lose records or blame a configuration.
        The server is left as it is; the driver reports ``halted`` with a non-zero exit."""
        if not self.halted:
            self.halted = reason
            log.error("controller: stopping: %s", reason)
            self.send(ev.Quit())

    # -- effects ------------------------------------------------------------------------------

    def _perform(self, effect: fx.Effect) -> None:
        e = effect.epoch
        if isinstance(effect, fx.Validate):
            try:
                outcome = self.validator(self.versioned(effect.config))
                outcome = noted(self.engine_versions, outcome, effect.config)
                if isinstance(outcome, ev.ConfigValidated) and self.model_facts is not None:
                    facts = self.model_facts.facts_for(effect.config)
                    outcome = replace(outcome, model_facts=facts)
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
        elif isinstance(effect, fx.StartTelemetry | fx.StopTelemetry):
            self.telemetry.perform(effect)
        elif isinstance(effect, fx.StartTimer):
            fired = ev.TimerFired(key=effect.key, epoch=e)
            self._timers.start(effect.key, effect.seconds, lambda: self._post(fired))
        elif isinstance(effect, fx.CancelTimer):
            self._timers.cancel(effect.key)
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
                except Exception as exc:
                    log.exception("controller: saving the session failed")
                    self.halt(f"could not write session.toml: {exc}")
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
                self.halt(f"could not record trial {record.index + 1}: {exc}")
                return
        self._post(ev.TrialRecorded(index=record.index, record=record, epoch=effect.epoch))

    # -- operations ---------------------------------------------------------------------------

    def _serving_config(self, config: ServerConfig | None = None) -> ServerConfig:
        cfg = config or self._state.deployed_config or self._state.current_config
        if cfg is None:
            raise RuntimeError("no configuration is deployed")
        return cfg

    async def _url(self, config: ServerConfig | None = None) -> str:
        """A locally reachable URL of the deployed server (an SSH forward when remote)."""
        return await self.endpoint.url(self._serving_config(config))

    async def _deploy(self, config: ServerConfig) -> ev.Outcome:
        config = await self._for_box(config)
        preview = await self.backend.preview(config)
        self._post(replace(results.deploy_previewed(config, preview.diff), epoch=self._state.epoch))
        receipt = await self.backend.deploy(config)
        return ev.DeployDone(
            artifact_hash=receipt.artifact_hash,
            backup_path=receipt.backup_path,
            location=receipt.location,
        )

    async def _restart(self) -> ev.Outcome:
        await self._drained()  # the old server's last lines, before a new one writes
        await self.backend.start()
        return ev.Restarted()

    async def _check_reattach(self, config: ServerConfig) -> ev.Outcome:
        return await check_reattach(self.backend, self.endpoint, await self._for_box(config))

    async def _server_info(self) -> ev.Outcome:
        try:
            body = await self.endpoint.server_info(self._serving_config())
        except ValueError as exc:  # an answer not read (a proxy's HTML): why the release is not
            if self.engine_versions is not None:
                self.engine_versions.server_info_refused(str(exc))
            raise
        if self.engine_versions is not None:  # the fallback when the box could not be asked
            self.engine_versions.from_server_info(body, self._serving_config())
        endpoints = engine_for(self._serving_config()).endpoints
        items = results.server_info_items(
            body, endpoints.server_info_keys, endpoints.server_info_nested
        )
        return ev.ServerInfoFetched(items=items)

    async def _flush(self) -> ev.Outcome:
        await self.endpoint.flush_cache(self._serving_config())
        return ev.CacheFlushed()

    async def _benchmark(self, spec: Any) -> ev.Outcome:
        cfg = self._serving_config()
        trial = self._state.trial
        epoch = self._state.epoch

        def progress(p: BenchProgress) -> None:
            self._post(ev.BenchProgressed(progress=p, epoch=epoch))
            if p.level_result is not None:  # a level finished: its numbers, live
                self._post(
                    ev.BenchLevelFinished(
                        level_index=p.level_index,
                        level=results.level_summary(p.level_result),
                        repeat=p.repeat,
                        epoch=epoch,
                    )
                )

        url = f"http://{await self.endpoint.host(cfg)}:{cfg.port}"
        result = await self.runner.run(spec, url, on_progress=progress)
        if not isinstance(result, BenchResult):
            raise TypeError(f"the benchmark runner returned {type(result).__name__}")
        if trial is not None:
            self._bench_results[trial.index] = result.to_dict()
        return results.bench_finished(result)

    async def _stop_server(self) -> ev.Outcome:
        await self._drained()
        await self.backend.stop()
        status: ServiceStatus | None
        try:
            status = await self.backend.status()
        except Exception:
            status = None
        return ev.ServerStopped(status=status)

    # -- the watch ----------------------------------------------------------------------------

    def _start_watch(self, effect: fx.StartWatch) -> None:
        previous = self._watcher
        after = previous.cursor if effect.continue_previous and previous is not None else None
        self._stop_watch(retire=after is None)  # a continuing watch reads on from its cursor
        cfg = self._state.current_config
        self._watcher = ServerWatch(
            epoch=effect.epoch,
            trial_index=effect.trial_index,
            after=after,
            config=cfg,
            backend=self.backend,
            http=self.endpoint.http,
            url=self._url,
            post=self._post,
            sink=None if self.recorder is None else HaltingSink(self.recorder, self.halt),
            timing=self.timing,
        )
        self._watch = self._spawn(self._watcher.run())

    def _stop_watch(self, *, retire: bool = True) -> None:
        if self._watch is not None:
            if retire and self._watcher is not None:
                self._watcher.retire()
                self._retired = self._spawn(drain(self._watch, self.timing.drain_max_s))
            else:
                self._watch.cancel()
            self._watch = None

    async def _drained(self) -> None:
        if self._retired is not None:
            await asyncio.shield(self._retired)

    # -- teardown -----------------------------------------------------------------------------

    async def _teardown(self) -> None:
        self._timers.cancel_all()
        self._stop_watch()
        tasks = [t for t in (*self._ops, self._bench, self.telemetry.task) if t]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        with contextlib.suppress(Exception):
            await self._drained()  # bounded: the last trial's last lines reach its log
        if self._stopper is not None and not self._stopper.done():
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._stopper, 30.0)
        if self._stop_on_exit:
            with contextlib.suppress(Exception):
                await self.backend.stop()
        await self.endpoint.close()
        if self.recorder is not None:
            with contextlib.suppress(Exception):
                self.recorder.save(self._state)
