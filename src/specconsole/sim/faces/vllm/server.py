"""The simulated vLLM server (the simulator's vLLM face): its log and its life — the engine
core's start-up records spread over ``--sim-load-seconds`` in the release's memory order, the
front end's routes and uvicorn's lines once the engine is up, the periodic ``Engine 000`` and
``SpecDecoding metrics`` statistics, and its deaths (the engine core's traceback, the front
end's ``Engine core initialization failed``, exit 1). Every line is flushed as it is written.

The statistics interval is vLLM's ``VLLM_LOG_STATS_INTERVAL`` (seconds, default 10); the log
level its ``VLLM_LOGGING_LEVEL``. Before it sizes anything, 0.11 refuses to start when less
of the GPU is free than ``--gpu-memory-utilization`` asks (``Free memory on device ... less
than desired GPU memory utilization``); 0.34 has no such check (its KV cache is sized last).
The texts are :mod:`.text`'s and :mod:`.fatal`'s, the routes :mod:`.http`'s.
"""

from __future__ import annotations

import asyncio
import os
import sys
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from specconsole.sim.arguments import ParsedArgs
from specconsole.sim.box import SimBox, SimOptions
from specconsole.sim.faces.vllm import fatal
from specconsole.sim.faces.vllm.text import SOURCES, VllmText, text_for
from specconsole.sim.physics.launch import KvSizing, ResolvedArgs
from specconsole.sim.physics.model import SHORT_OF_CONTEXT, LoadFailure
from specconsole.sim.profile import Profile

if TYPE_CHECKING:
    from specconsole.sim.scheduler import Scheduler

__all__ = ["API", "CORE", "VllmLog", "VllmServer", "VllmSteps"]

LEVELS = {"DEBUG": 10, "INFO": 20, "WARNING": 30, "ERROR": 40, "CRITICAL": 50}

API, CORE = "APIServer", "EngineCore_DP0"
"""The processes whose lines the face prints (one process plays both)."""


class VllmLog:
    """vLLM's records and raw stream lines, each flushed as written: the API server's and the
    engine core's (the simulator is one process; the engine core gets a pid of its own)."""

    def __init__(self, text: VllmText, stream: Any = None) -> None:
        self.text = text
        self.stream = stream if stream is not None else sys.stdout
        self.min_level = LEVELS.get(os.environ.get("VLLM_LOGGING_LEVEL", "INFO").upper(), 20)
        self.pids = {API: os.getpid(), CORE: os.getpid() + 1}

    def record(self, who: str, key: str, *args: object, level: str = "INFO") -> None:
        """One logger record of ``who`` (``API`` or ``CORE``)."""
        if LEVELS[level] >= self.min_level:
            self.lines(who, self.text.record(key, args, level=level), record=True)

    def message(self, who: str, filename: str, line: int, text: str, level: str) -> None:
        """A record whose text is not a format string of the release (a traceback)."""
        if LEVELS[level] >= self.min_level:
            lines = self.text.header_lines(filename, line, text, level)
            self.lines(who, lines, record=True)

    def lines(self, who: str, lines: Sequence[str], *, record: bool = False) -> None:
        """Lines on ``who``'s stdout/stderr: prefixed by its process name when they are a
        logger record, or always on 0.11 (``decorate_logs`` wraps the streams)."""
        if record or self.text.decorates_streams:
            prefix = self.text.process(who, self.pids[who])
            lines = [prefix + line for line in lines]
        try:
            self.stream.write("\n".join(lines) + "\n")
            self.stream.flush()
        except (BrokenPipeError, ValueError):
            pass

    def uvicorn(self, text: str) -> None:
        """uvicorn's own lines (its default format, on the API server's stream)."""
        self.lines(API, [f"INFO:     {text}"])


class VllmSteps:
    """The scheduler's reporter for the vLLM face: it only counts; the statistics lines are
    printed every ``VLLM_LOG_STATS_INTERVAL`` seconds by :meth:`VllmServer.stats_loop`."""

    def __init__(self) -> None:
        self.prompt_tokens = 0

    def prefill(self, sched: Scheduler, batch: int, tokens: int, seconds: float) -> None:
        self.prompt_tokens += tokens

    def decode(self, sched: Scheduler, batch: int) -> None:
        return None


class VllmServer(SimBox):
    """vLLM's face on the box: its load, its statistics, its deaths."""

    listens_while_loading = False

    def __init__(
        self,
        args: ResolvedArgs,
        parsed: ParsedArgs,
        profile: Profile,
        opts: SimOptions,
        log: VllmLog,
        release: str,
    ) -> None:
        self.release = release
        self.text = text_for(release)
        self.steps = VllmSteps()
        super().__init__(args, parsed, profile, opts, log, self.steps)
        self.log: VllmLog = log
        self.interval = float(os.environ.get("VLLM_LOG_STATS_INTERVAL", "10") or 10)
        self.log_stats = not parsed.values.get("disable_log_stats")
        self._stats_task: asyncio.Task[None] | None = None

    # -- load -----------------------------------------------------------------------------------

    def _fail(self, exc_type: str, message: str, where: str) -> None:
        """The engine core dies while starting: its record and traceback, multiprocessing's
        report, then the front end's."""
        fatal.startup_failure(self.log, self.release, exc_type, message, where)
        self.mark_fatal()

    async def load(self) -> bool:
        a, p, plan, log, t = self.args, self.profile, self.plan, self.log, self.text
        shares, total = p.load, self.opts.load_seconds
        log.record(CORE, "engine", t.release, fatal.config_text(a))
        await self.phase(shares.distributed, p.memory.cuda_context_gb)
        if a.kv_sizing is KvSizing.STATIC_BUDGET:
            free = p.gpu.memory_gb - p.memory.cuda_context_gb  # the CUDA context taken
            wanted = p.gpu.memory_gb * a.memory_fraction
            if wanted > free:
                self._fail("ValueError", fatal.startup_oom(t, free, p, a), "init_device")
                return False
        if t.has("load"):
            log.record(CORE, "load", a.model_path)
        if self.opts.hang_during_load:
            await self.phase(shares.target_weights / 2, plan.target_weights_gb / 2)
            await asyncio.Event().wait()  # never ready; SIGTERM still stops us
        await self.phase(shares.target_weights, plan.target_weights_gb)
        if plan.failure is LoadFailure.WEIGHTS_OOM and plan.failed_graph == "target":
            await self.gpus.fail_at(plan.total_gb)
            self._fail("torch.OutOfMemoryError", fatal.oom(plan, 1.25), "load_model")
            return False
        log.record(CORE, "weights", total * shares.target_weights)
        if a.speculative:
            if t.has("drafter"):
                log.record(CORE, "drafter")
            await self.phase(shares.draft_weights, plan.draft_weights_gb)
            if plan.failure is LoadFailure.WEIGHTS_OOM:
                await self.gpus.fail_at(plan.total_gb)
                self._fail(
                    "torch.OutOfMemoryError", fatal.oom(plan, plan.draft_weights_gb), "load_model"
                )
                return False
            log.record(CORE, "weights", total * shares.draft_weights)
        weights = plan.target_weights_gb + plan.draft_weights_gb
        took = total * (shares.target_weights + shares.draft_weights)
        log.record(CORE, "loaded", *fatal.loaded_args(t, weights, took))
        if t.graphs_before_kv and not await self._graphs():
            return False
        pool_gb = plan.spec_workspace_gb + plan.target_kv_gb + plan.draft_kv_gb
        await self.phase(shares.kv_cache, pool_gb)
        if plan.failure is LoadFailure.NOT_ENOUGH_MEMORY:
            await self.gpus.fail_at(self.gpus.used_gb)
        if not self._kv():
            return False
        if not t.graphs_before_kv and not await self._graphs():
            return False
        await self.phase(shares.warmup)
        log.record(CORE, "init", total)
        return True

    def _kv(self) -> bool:
        a, plan, log, t = self.args, self.plan, self.log, self.text
        log.record(CORE, "kv_memory", *fatal.kv_memory_args(t, plan))
        if plan.failure is LoadFailure.NOT_ENOUGH_MEMORY:
            if plan.failed_graph == SHORT_OF_CONTEXT:
                self._fail(
                    "ValueError", fatal.too_short(t, plan, a), "check_enough_kv_cache_memory"
                )
            else:
                self._fail("ValueError", fatal.no_memory(t, a), "check_enough_kv_cache_memory")
            return False
        tokens = plan.max_total_num_tokens
        log.lines(
            CORE, t.kv_lines(tokens, a.context_length, tokens / a.context_length), record=True
        )
        return True

    async def _graphs(self) -> bool:
        a, p, plan, log = self.args, self.profile, self.plan, self.log
        if not a.capture_bs:
            return True
        graphs_gb = plan.graph_target_gb + plan.graph_draft_gb
        await self.phase(p.load.graph_target + p.load.graph_draft, graphs_gb)
        if plan.failure is LoadFailure.CUDA_GRAPH_CAPTURE:
            await self.gpus.fail_at(plan.total_gb)
            self._fail(
                "torch.OutOfMemoryError", fatal.oom(plan, plan.graph_target_gb), "capture_model"
            )
            return False
        graphs = plan.graph_target_gb + plan.graph_draft_gb
        log.record(
            CORE,
            "graphs",
            self.opts.load_seconds * (p.load.graph_target + p.load.graph_draft),
            graphs,
        )
        return True

    def on_listening(self) -> None:
        """The front end serves: its address, its routes, uvicorn's start — ready."""
        log, t = self.log, self.text
        address = f"http://{self.args.host}:{self.port}"
        if t.has("tasks"):
            log.record(API, "tasks", "['generate']")  # a list once it crossed the IPC
            log.record(API, "serving", address)
        else:
            log.record(API, "serving", 0, address)
        log.record(API, "routes")
        for path, methods in fatal.ROUTES:
            log.record(API, "route", path, methods)
        log.uvicorn(f"Started server process [{self.log.pids[API]}]")
        log.uvicorn("Waiting for application startup.")
        self.ready = True
        log.uvicorn("Application startup complete.")
        if self.log_stats:
            self._stats_task = asyncio.get_running_loop().create_task(self.stats_loop())

    # -- statistics -----------------------------------------------------------------------------

    async def stats_loop(self) -> None:
        """vLLM's logging loop: every interval, the engine's throughput and, with speculation,
        the drafts of the interval; an idle engine logs once more, then is quiet (its lines go
        to debug)."""
        s, steps, counters = self.scheduler, self.steps, self.scheduler.draft_counters
        last = time.monotonic()
        prompt = generated = drafts = drafted = accepted = 0
        positions: list[int] = counters.per_position(self.args.num_steps)
        was_idle = True
        while True:
            await asyncio.sleep(self.interval)
            now = time.monotonic()
            span = max(now - last, 1e-9)
            last = now
            d_prompt = steps.prompt_tokens - prompt
            d_gen = s.total_generated_tokens - generated
            prompt, generated = steps.prompt_tokens, s.total_generated_tokens
            idle = d_prompt == 0 and d_gen == 0
            if not (idle and was_idle):
                usage = 100.0 * s.used_tokens / max(s.capacity, 1)
                lines = self.text.stats_line(
                    d_prompt / span,
                    d_gen / span,
                    len(s.running),
                    len(s.waiting),
                    usage,
                    hit_rate=0.0 if prompt else None,  # the prefix cache looked up, never hit
                )
                self.log.lines(API, lines, record=True)  # the front end's stat loggers
            was_idle = idle
            d_drafts = counters.drafts - drafts
            if self.args.speculative and d_drafts > 0:
                per_pos = counters.per_position(self.args.num_steps)
                d_acc, d_tok = counters.accepted - accepted, counters.draft_tokens - drafted
                rates = tuple((b - a) / d_drafts for a, b in zip(positions, per_pos, strict=True))
                self.log.lines(
                    API,
                    self.text.spec_line(
                        1 + d_acc / d_drafts,
                        d_acc / span,
                        d_tok / span,
                        d_acc,
                        d_tok,
                        rates,
                        100.0 * d_acc / d_tok if d_tok else float("nan"),
                    ),
                    record=True,
                )
                positions = per_pos
            drafts, drafted, accepted = counters.drafts, counters.draft_tokens, counters.accepted

    # -- deaths and stops -------------------------------------------------------------------------

    def serving_crash(self) -> None:
        self.scheduler.crashed = True
        fatal.serving_failure(self.log, self.release)
        self.mark_fatal()

    def simulator_bug(self, text: str) -> None:
        self.log.message(CORE, "core.py", int(SOURCES[self.release]["fatal"][1]), text, "ERROR")
        self.mark_fatal()

    def die(self) -> int:
        """The front end exits 1 once its engine core is gone (at once: the requests in
        flight die with it, as their engine did)."""
        sys.stdout.flush()
        os._exit(1)

    def shutdown_lines(self, pid: int, phase: str) -> None:
        if self._stats_task is not None:
            self._stats_task.cancel()
        if phase == "begin":
            self.log.uvicorn("Shutting down")
            return
        self.log.uvicorn("Waiting for application shutdown.")
        self.log.uvicorn("Application shutdown complete.")
        self.log.uvicorn(f"Finished server process [{self.log.pids[API]}]")
