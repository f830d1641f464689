"""The simulated SGLang server (the simulator's SGLang face): its log and its life — the load
sequence (weights, KV pools, CUDA-graph capture, capacity line, ready line) spread over
``--sim-load-seconds``, its statistics lines, faults, and dying the way SGLang dies (scheduler
traceback, ``Received sigquit ...``, the process tree killed) when the memory model or a fault
flag says so. Every log line is flushed as it is written because the console follows this log
live and must see a fatal line the moment it appears.

The box it runs on (memory plan, scheduler, options) is :mod:`specconsole.sim.box`; SGLang's
HTTP API is :mod:`.http` (its native stream :mod:`.generate`, the OpenAI-compatible one
:mod:`specconsole.sim.faces.streams`), its texts :mod:`.log`, the process entry point
:mod:`specconsole.sim.process`.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import os
import signal
import sys
from typing import Any

from specconsole.sim.arguments import ParsedArgs
from specconsole.sim.box import SimBox, SimOptions
from specconsole.sim.faces.sglang import log as logfmt
from specconsole.sim.faces.sglang.args import imitated_engine
from specconsole.sim.faces.sglang.steps import SGLangSteps
from specconsole.sim.physics.adaptive import graph_states
from specconsole.sim.physics.launch import ResolvedArgs
from specconsole.sim.physics.model import LoadFailure, uses_cuda_graph
from specconsole.sim.profile import Profile

LOG_LEVELS: dict[str, int] = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "warning": logging.WARNING,
    "error": logging.ERROR,
    "critical": logging.CRITICAL,
}


class LogWriter:
    """Writes SGLang-formatted records to stdout, one flushed write per record.

    Records below ``--log-level`` are dropped, as SGLang's logger drops them: with
    ``warning`` the load lines, Decode/Prefill statistics and even the ready line disappear.
    """

    def __init__(self, tp_size: int, stream: Any = None, level: str = "info") -> None:
        self.tp_size = tp_size
        self.stream = stream if stream is not None else sys.stdout
        self.min_level = LOG_LEVELS.get(str(level).lower(), logging.INFO)
        self.lines_written = 0

    def main(self, message: str, level: int = logging.INFO) -> None:
        """A record from the launcher / tokenizer manager / HTTP server (no TP tag)."""
        if level >= self.min_level:
            self._write(logfmt.prefix() + message)

    def rank(self, message: str, rank: int = 0, level: int = logging.INFO) -> None:
        """A record from a scheduler rank (``TP<n>`` tag when tp > 1)."""
        if level >= self.min_level:
            self._write(logfmt.prefix(tp_rank=rank if self.tp_size > 1 else None) + message)

    def all_ranks(self, message: str, level: int = logging.INFO) -> None:
        for r in range(self.tp_size):
            self.rank(message, r, level)

    def scheduler(self, message: str, from_scheduler: bool = True) -> None:
        """The scheduler loop's statistics lines (info level)."""
        if from_scheduler:
            self.rank(message, 0)
        else:
            self.main(message)

    def raw(self, text: str) -> None:
        """Text printed outside the logger (a launcher traceback): always shown."""
        self._write(text)

    def _write(self, text: str) -> None:
        try:
            self.stream.write(text + "\n")
            self.stream.flush()
        except (BrokenPipeError, ValueError):
            pass
        self.lines_written += 1


class SGLangServer(SimBox):
    """SGLang's face on the box: its load sequence, hot updates, ``/server_info`` and
    ``/metrics``."""

    def __init__(
        self,
        args: ResolvedArgs,
        parsed: ParsedArgs,
        profile: Profile,
        opts: SimOptions,
        log: LogWriter,
    ) -> None:
        self.dialect = logfmt.dialect_for_version(profile.sim.version)
        interval = int(args.server_args["decode_log_interval"])
        super().__init__(args, parsed, profile, opts, log, SGLangSteps(log, self.dialect, interval))

    # ------------------------------------------------------------------ load sequence

    async def load(self) -> bool:
        """Print the load sequence; returns False when the load failed (already logged)."""
        a, p, plan, log, d = self.args, self.profile, self.plan, self.log, self.dialect
        shares = p.load
        total = self.opts.load_seconds
        log.all_ranks(logfmt.init_distributed_begin())
        await self.phase(shares.distributed, p.memory.cuda_context_gb)
        log.all_ranks(
            logfmt.init_distributed_end(total * shares.distributed, p.memory.cuda_context_gb)
        )
        # Target weights.
        log.all_ranks(logfmt.load_weight_begin(plan.avail_start_gb))
        if self.opts.hang_during_load:
            await self.phase(shares.target_weights / 2, plan.target_weights_gb / 2)
            await asyncio.Event().wait()  # never ready; SIGTERM still stops us
        await self.phase(shares.target_weights, plan.target_weights_gb)
        if plan.failure is LoadFailure.WEIGHTS_OOM and plan.failed_graph == "target":
            await self.gpus.fail_at(plan.total_gb)
            self._fatal_log(
                logfmt.weights_oom_traceback(
                    1.25, plan.total_gb, max(plan.avail_start_gb, 0.0) % 1.0
                )
            )
            return False
        log.all_ranks(
            logfmt.load_weight_end(
                d,
                total * shares.target_weights,
                p.model.architecture,
                p.model.quantization,
                "torch.bfloat16",
                plan.avail_after_target_gb,
                plan.target_weights_gb,
            )
        )
        if a.adaptive is not None:
            first = a.adaptive.buckets[0]
            start = (
                a.num_steps
                if a.num_steps in first.candidates
                else first.candidates[len(first.candidates) // 2]
            )
            log.rank(logfmt.adaptive_initialized(start, first.candidates))
        if a.speculative:
            log.all_ranks(logfmt.load_weight_begin(plan.avail_after_target_gb))
            await self.phase(shares.draft_weights, plan.draft_weights_gb)
            if plan.failure is LoadFailure.WEIGHTS_OOM:
                await self.gpus.fail_at(plan.total_gb)
                self._fatal_log(
                    logfmt.weights_oom_traceback(
                        plan.draft_weights_gb, plan.total_gb, max(plan.avail_after_target_gb, 0.0)
                    )
                )
                return False
            log.all_ranks(
                logfmt.load_weight_end(
                    d,
                    total * shares.draft_weights,
                    p.model.draft_architecture,
                    "",
                    "torch.bfloat16",
                    plan.avail_after_draft_gb,
                    plan.draft_weights_gb,
                )
            )
        pool_gb = plan.spec_workspace_gb + plan.target_kv_gb + plan.draft_kv_gb
        await self.phase(shares.kv_cache, pool_gb)  # the workspace, then the KV pool
        if plan.failure is LoadFailure.NOT_ENOUGH_MEMORY:
            await self.gpus.fail_at(self.gpus.used_gb)  # past the static budget: refused
            self._fatal_log(logfmt.not_enough_memory_traceback(d, a.memory_fraction))
            return False
        half_t = plan.target_kv_gb / 2
        log.all_ranks(
            logfmt.kv_cache_allocated(
                d, p.model.kv_dtype, plan.max_total_num_tokens, half_t, half_t
            )
        )
        if a.speculative:
            half_d = plan.draft_kv_gb / 2
            log.all_ranks(
                logfmt.kv_cache_allocated(
                    d, p.model.kv_dtype, plan.max_total_num_tokens, half_d, half_d
                )
            )
        log.all_ranks(logfmt.memory_pool_end(plan.avail_after_kv_gb))
        if a.capture_bs:
            ok = await self._capture()
            if not ok:
                return False
        avail = plan.avail_after_graph_gb if a.capture_bs else plan.avail_after_kv_gb
        log.rank(
            logfmt.capacity_line(
                plan.max_total_num_tokens,
                a.chunked_prefill_size,
                a.max_prefill_tokens,
                a.max_running,
                a.context_length,
                avail,
            )
        )
        await self.phase(shares.warmup)
        # Warmup request, as SGLang's launcher sends one before announcing readiness.
        log.rank(logfmt.prefill_batch(d, 1, 6, 0, 0.0, 0, 0, 0, False, 0.0))
        log.main(logfmt.uvicorn_info(f'127.0.0.1:{self.port} - "POST /generate HTTP/1.1" 200 OK'))
        log.main(logfmt.READY)
        self.ready = True
        return True

    async def _capture(self) -> bool:
        a, p, plan, log, d = self.args, self.profile, self.plan, self.log, self.dialect
        shares = p.load
        total = self.opts.load_seconds
        bs = list(a.capture_bs)
        if a.speculative:
            target = logfmt.GraphCapture("target verify", a.num_draft_tokens)
            drafts = [
                logfmt.GraphCapture("draft decode", a.topk),
                logfmt.GraphCapture("draft extend", a.num_draft_tokens),
            ]
        else:
            target = logfmt.GraphCapture("target decode", 1)
            drafts = []
        log.all_ranks(target.begin(d, bs, plan.avail_after_kv_gb))
        await self.phase(shares.graph_target, plan.graph_target_gb)
        if plan.failure is LoadFailure.CUDA_GRAPH_CAPTURE and plan.failed_graph == "target":
            await self.gpus.fail_at(plan.total_gb)
            self._fatal_log(
                logfmt.capture_failed_traceback(
                    d,
                    "target",
                    plan.graph_target_gb,
                    plan.total_gb,
                    max(plan.avail_after_kv_gb - plan.activation_reserve_gb, 0.0),
                )
            )
            return False
        log.all_ranks(
            target.end(
                d,
                total * shares.graph_target,
                plan.graph_target_gb,
                plan.avail_after_target_graph_gb,
            )
        )
        avail = plan.avail_after_target_graph_gb
        for i, g in enumerate(drafts):
            share_gb = plan.graph_draft_gb / len(drafts)
            log.all_ranks(g.begin(d, bs, avail))
            await self.phase(shares.graph_draft / len(drafts), share_gb)
            if plan.failure is LoadFailure.CUDA_GRAPH_CAPTURE and i == 0:
                await self.gpus.fail_at(plan.total_gb)
                self._fatal_log(
                    logfmt.capture_failed_traceback(
                        d,
                        "draft",
                        share_gb,
                        plan.total_gb,
                        max(avail - plan.activation_reserve_gb, 0.0),
                    )
                )
                return False
            avail -= share_gb
            log.all_ranks(g.end(d, total * shares.graph_draft / len(drafts), share_gb, avail))
        if a.adaptive is not None:
            await self._adaptive_states()
        return True

    async def _adaptive_states(self) -> None:
        """SGLang's adaptive worker builds a runtime state per other candidate after the
        graphs: its backends and its own CUDA graphs (the time and memory are the load's)."""
        a, p, log = self.args, self.profile, self.log
        assert a.adaptive is not None
        seconds = self.opts.load_seconds * p.load.graph_draft / 2
        for steps, bs in graph_states(a.adaptive, a.capture_bs):
            if steps == a.num_steps:
                continue
            mem_gb = p.memory.graph_mb_per_slot * bs * (steps + 1) / 1024.0
            await self.phase(p.load.graph_draft / 2)
            log.rank(logfmt.adaptive_state_built(steps, seconds, mem_gb))

    def _fatal_log(self, traceback_text: str) -> None:
        """A scheduler rank died: its traceback, then the launcher's SIGQUIT line."""
        self.log.rank(traceback_text, level=logging.ERROR)
        self.log.main(logfmt.SIGQUIT, level=logging.ERROR)
        self.mark_fatal()

    def on_listening(self) -> None:
        """uvicorn's start lines: SGLang listens from the start (``/health`` answers 503)."""
        log = self.log
        log.main(logfmt.uvicorn_info(f"Started server process [{os.getpid()}]"))
        log.main(logfmt.uvicorn_info("Waiting for application startup."))
        log.main(logfmt.uvicorn_info("Application startup complete."))
        log.main(
            logfmt.uvicorn_info(
                f"Uvicorn running on http://{self.args.host}:{self.port} (Press CTRL+C to quit)"
            )
        )

    def serving_crash(self) -> None:
        self.scheduler.crashed = True
        self._fatal_log(logfmt.serving_crash_traceback())

    def simulator_bug(self, text: str) -> None:
        self._fatal_log("Scheduler hit an exception: " + text)

    def die(self) -> int:
        """The launcher kills its whole process tree after SIGQUIT: the process ends by
        SIGKILL."""
        sys.stdout.flush()
        os.kill(os.getpid(), signal.SIGKILL)
        return -9  # pragma: no cover - not reached

    def shutdown_lines(self, pid: int, phase: str) -> None:
        """uvicorn's and SGLang's report of an orderly stop."""
        log = self.log
        if phase == "begin":
            log.main(logfmt.uvicorn_info("Shutting down"))
            return
        log.main(logfmt.uvicorn_info("Waiting for application shutdown."))
        log.main(logfmt.uvicorn_info("Application shutdown complete."))
        log.main(logfmt.uvicorn_info(f"Finished server process [{pid}]"))

    # ------------------------------------------------------------------ hot updates

    HOT_KEYS: tuple[str, ...] = (
        "speculative_accept_threshold_single",
        "speculative_accept_threshold_acc",
        "pp_max_micro_batch_size",
    )
    """The only arguments SGLang lets ``/set_internal_state`` change."""

    def set_internal_state(self, updates: dict[str, Any]) -> dict[str, Any]:
        """Apply ``/set_internal_state`` like SGLang: refuse any other key, else update, log
        the lifetime accept length and reset the speculative counters."""
        for key, value in updates.items():
            if key not in self.HOT_KEYS:
                self.log.rank(f"Updating {key} is not supported.", level=logging.WARNING)
                return {"updated": False, "server_args": dict(self.args.server_args)}
            if key.startswith("speculative_accept_threshold") and (
                isinstance(value, bool)
                or not isinstance(value, int | float)
                or not 0.0 < float(value) <= 1.0
            ):
                self.log.rank(
                    f"Updating {key} failed: {value!r} is not in (0, 1].", level=logging.WARNING
                )
                return {"updated": False, "server_args": dict(self.args.server_args)}
        server_args = {**self.args.server_args, **updates}
        self.args = dataclasses.replace(
            self.args,
            accept_threshold_single=float(server_args["speculative_accept_threshold_single"]),
            accept_threshold_acc=float(server_args["speculative_accept_threshold_acc"]),
            server_args=server_args,
        )
        self.scheduler.set_args(self.args)
        avg = self.scheduler.spec.avg_accept_length
        self.log.rank(f"avg_spec_accept_length={avg}")
        self.scheduler.reset_spec_counters()
        return {"updated": True, "server_args": dict(server_args)}

    # ------------------------------------------------------------------ info

    def memory_usage(self) -> dict[str, float]:
        plan = self.plan
        return {
            "weight": round(plan.target_weights_gb + plan.draft_weights_gb, 2),
            "kvcache": round(plan.target_kv_gb + plan.draft_kv_gb, 2),
            "token_capacity": plan.max_total_num_tokens,
            "graph": round(plan.graph_target_gb + plan.graph_draft_gb, 2),
        }

    def server_info(self) -> dict[str, Any]:
        sched = self.scheduler
        args = {**self.args.server_args, "port": self.port}
        state: dict[str, Any] = {
            **args,
            "last_gen_throughput": sched.last_gen_throughput,
            "memory_usage": self.memory_usage(),
            "effective_max_running_requests_per_dp": self.args.max_running,
        }
        if self.args.speculative and sched.spec.forward_ct > 0:
            state["avg_spec_accept_length"] = sched.spec.avg_accept_length
        return {
            **args,
            "max_total_num_tokens": self.plan.max_total_num_tokens,
            "max_req_input_len": self.args.context_length - 1,
            "internal_states": [state],
            "version": self.profile.sim.version,
            "sim": {
                "profile": self.opts.profile_path,
                "unrecognized_args": dict(self.args.unknown_args),
                "unthrottled": self.opts.unthrottled,
            },
        }

    def _verify_calls(self, name: str) -> list[tuple[str, str, float]]:
        """The verify-step counter (from 0.5.14 on; 0.5.9 has none)."""
        if not self._release_at_least((0, 5, 14)):
            return []
        return [(name, "counter", self.scheduler.finished_verify_ct)]

    def _steps_gauge(self, name: str | None) -> list[tuple[str, str, float]]:
        """``sglang:spec_num_steps`` (0.5.14+): the draft length the scheduler runs now — the
        adaptive controller's active step, else the launch's (0 without speculation)."""
        if name is None or not self._release_at_least((0, 5, 14)):
            return []
        s, a = self.scheduler, self.args
        steps = s.adaptive.active if s.adaptive is not None else a.num_steps
        return [(name, "gauge", float(steps if a.speculative else 0))]

    def _release_at_least(self, release: tuple[int, int, int]) -> bool:
        try:
            mine = tuple(int(p) for p in self.profile.sim.version.split(".")[:3])
        except ValueError:
            mine = (0, 5, 14)
        return mine >= release

    def metrics_text(self) -> str:
        """``/metrics``: SGLang's gauges and counters; the speculative ones under the names the
        SGLang engine reads them by (its ``Endpoints.spec_counters``, through the registry)."""
        s = self.scheduler
        names = imitated_engine().endpoints.spec_counters
        assert names is not None and names.output_tokens is not None and names.gauge is not None
        labels = f'model_name="{self.args.served_model_name}",engine_type="unified",tp_rank="0"'
        rows: list[tuple[str, str, float]] = [
            ("sglang:num_running_reqs", "gauge", len(s.running)),
            ("sglang:num_queue_reqs", "gauge", len(s.waiting)),
            ("sglang:gen_throughput", "gauge", s.last_gen_throughput),
            ("sglang:token_usage", "gauge", s.used_tokens / s.capacity),
            ("sglang:num_used_tokens", "gauge", s.used_tokens),
            ("sglang:max_total_num_tokens", "gauge", self.plan.max_total_num_tokens),
            ("sglang:context_len", "gauge", self.args.context_length),
            (
                "sglang:is_cuda_graph",
                "gauge",
                1.0 if uses_cuda_graph(self.args, max(len(s.running), 1)) else 0.0,
            ),
            (  # the scheduler's last interval (its Decode batch lines'), as SGLang sets it
                names.gauge,
                "gauge",
                s.interval_accept.avg_accept_length
                if s.interval_accept.forward_ct
                else s.spec.avg_accept_length,
            ),
            (
                "sglang:spec_accept_rate",
                "gauge",
                (s.spec.avg_accept_length - 1) / max(self.args.num_draft_tokens - 1, 1)
                if s.spec.forward_ct
                else 0.0,
            ),
            *self._steps_gauge(names.steps_gauge),
            # the tokenizer's counters: added as each request finishes, never reset
            *self._verify_calls(names.drafts),
            ("sglang:prompt_tokens_total", "counter", s.total_prompt_tokens),
            (names.output_tokens, "counter", s.finished_output_tokens),
            ("sglang:num_requests_total", "counter", s.total_requests),
        ]
        out: list[str] = []
        for name, kind, value in rows:
            out.append(f"# HELP {name} {name.split(':', 1)[1].replace('_', ' ')}.")
            out.append(f"# TYPE {name} {kind}")
            out.append(f"{name}{{{labels}}} {float(value)}")
        out += s.ttft.exposition(
            "sglang:time_to_first_token_seconds",
            "Histogram of time to first token in seconds.",
            labels,
        )
        out += s.e2e.exposition(
            "sglang:e2e_request_latency_seconds",
            "Histogram of End-to-end request latency in seconds",
            labels,
        )
        return "\n".join(out) + "\n"
