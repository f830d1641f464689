"""SGLang's log lines, formatted exactly as SGLang writes them.

The console follows the server's log live and reacts to it (load progress, capacity, decode
statistics, crashes), so the simulator's lines must be byte-compatible with SGLang's. The texts
live here, in one place, as pure functions of their values; the server only decides when to
print them. Two dialects are produced: ``latest`` (SGLang main, mid 2026) and ``v0.5.9``
(the February 2026 release), chosen from the version a profile claims. The sources are
SGLang's own (``sgl-project/sglang``): ``configure_logger`` in ``python/sglang/srt/utils/common.py``
for the prefix, ``python/sglang/srt/managers/scheduler_metrics_mixin.py`` (v0.5.9) and
``managers/scheduler_components/metrics_reporter.py`` (latest) for the batch lines,
``managers/scheduler.py`` for the capacity line.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

LATEST = "latest"
V059 = "v0.5.9"


def dialect_for_version(version: str) -> str:
    """``v0.5.9`` for SGLang releases up to 0.5.9, else ``latest``."""
    try:
        parts = tuple(int(p) for p in version.split(".")[:3])
    except ValueError:
        return LATEST
    return V059 if parts <= (0, 5, 9) else LATEST


def prefix(now: float | None = None, tp_rank: int | None = None) -> str:
    """``[YYYY-MM-DD HH:MM:SS] `` or ``[YYYY-MM-DD HH:MM:SS TP0] `` (tp_rank when tp > 1)."""
    stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(time.time() if now is None else now))
    if tp_rank is None:
        return f"[{stamp}] "
    return f"[{stamp} TP{tp_rank}] "


def _gb(x: float) -> str:
    return f"{x:.2f}"


def init_distributed_begin() -> str:
    return "Init torch distributed begin."


def init_distributed_end(elapsed: float, mem_usage_gb: float) -> str:
    return f"Init torch distributed ends. elapsed={elapsed:.2f} s, mem usage={_gb(mem_usage_gb)} GB"


def load_weight_begin(avail_gb: float) -> str:
    return f"Load weight begin. avail mem={_gb(avail_gb)} GB"


def load_weight_end(
    dialect: str,
    elapsed: float,
    model_type: str,
    quant: str,
    dtype: str,
    avail_gb: float,
    usage_gb: float,
) -> str:
    if dialect == V059:
        return (
            f"Load weight end. elapsed={elapsed:.2f} s, type={model_type}, dtype={dtype}, "
            f"avail mem={_gb(avail_gb)} GB, mem usage={_gb(usage_gb)} GB."
        )
    q = f"quant={quant}, " if quant else ""
    return (
        f"Load weight end. elapsed={elapsed:.2f} s, type={model_type}, {q}"
        f"avail mem={_gb(avail_gb)} GB, mem usage={_gb(usage_gb)} GB."
    )


def kv_cache_allocated(dialect: str, dtype: str, tokens: int, k_gb: float, v_gb: float) -> str:
    if dialect == V059:
        return (
            f"KV Cache is allocated. #tokens: {tokens}, K size: {k_gb:.2f} GB, "
            f"V size: {v_gb:.2f} GB"
        )
    return (
        f"KV Cache is allocated. dtype: {dtype}, #tokens: {tokens}, K size: {k_gb:.2f} GB, "
        f"V size: {v_gb:.2f} GB"
    )


def memory_pool_end(avail_gb: float) -> str:
    return f"Memory pool end. avail mem={_gb(avail_gb)} GB"


_V059_GRAPH_NAMES = {
    "target verify": "cuda graph",
    "target decode": "cuda graph",
    "draft decode": "draft cuda graph",
    "draft extend": "draft extend cuda graph",
}
"""v0.5.9's name for each capture role in its ``Capture ... begin/end`` lines."""


@dataclass(frozen=True, slots=True)
class GraphCapture:
    """One CUDA-graph capture phase: its role and the texts that open and close it."""

    role: str
    """``target verify``, ``target decode``, ``draft decode`` or ``draft extend``."""
    tokens_per_req: int

    def begin(self, dialect: str, bs: Sequence[int], avail_gb: float) -> str:
        if dialect == V059:
            what = _V059_GRAPH_NAMES[self.role]
            return (
                f"Capture {what} begin. This can take up to several minutes. "
                f"avail mem={_gb(avail_gb)} GB"
            )
        return (
            f"Capture {self.role} CUDA graph begin. backend=full, "
            f"num_tokens_per_req={self.tokens_per_req}, bs={list(bs)}, "
            f"avail mem={_gb(avail_gb)} GB"
        )

    def end(self, dialect: str, elapsed: float, usage_gb: float, avail_gb: float) -> str:
        if dialect == V059:
            what = _V059_GRAPH_NAMES[self.role]
            return (
                f"Capture {what} end. Time elapsed: {elapsed:.2f} s. "
                f"mem usage={_gb(usage_gb)} GB. avail mem={_gb(avail_gb)} GB."
            )
        return (
            f"Capture {self.role} CUDA graph end. elapsed={elapsed:.2f} s, "
            f"mem usage={_gb(usage_gb)} GB, avail mem={_gb(avail_gb)} GB."
        )


def adaptive_initialized(steps: int, candidates: Sequence[int]) -> str:
    """The adaptive controller's first bucket, as the worker logs it at start
    (``adaptive_spec_params.py``)."""
    return (
        f"AdaptiveSpeculativeParams initialized: steps={steps}, candidate_steps={list(candidates)}"
    )


def adaptive_state_built(steps: int, elapsed: float, mem_gb: float) -> str:
    """One candidate's runtime state (its backends and CUDA graphs), built at load
    (``eagle_worker_v2.py``)."""
    return f"Built adaptive runtime state steps={steps}: elapsed={elapsed:.2f}s, mem={mem_gb:.2f}GB"


def adaptive_switch(steps: int, new_steps: int) -> str:
    """A decode step runs another candidate's state (``apply_runtime_state``)."""
    return (
        "Switch adaptive runtime state: "
        f"steps {steps} -> {new_steps}, draft_tokens {steps + 1} -> {new_steps + 1}"
    )


def adaptive_updated(steps: int, new_steps: int, ema: float) -> str:
    """A bucket's EMA moved its step (``AdaptiveStepSlot._apply_target_steps``)."""
    return f"Adaptive spec params updated: steps {steps} -> {new_steps} (ema_accept_len={ema:.2f})"


def capacity_line(
    max_total_num_tokens: int,
    chunked_prefill_size: int,
    max_prefill_tokens: int,
    max_running_requests: int,
    context_len: int,
    avail_gb: float,
) -> str:
    return (
        f"max_total_num_tokens={max_total_num_tokens}, "
        f"chunked_prefill_size={chunked_prefill_size}, "
        f"max_prefill_tokens={max_prefill_tokens}, "
        f"max_running_requests={max_running_requests}, "
        f"context_len={context_len}, "
        f"available_gpu_mem={avail_gb:.2f} GB"
    )


READY = "The server is fired up and ready to roll!"
CACHE_FLUSHED = "Cache flushed successfully!"
SIGQUIT = "Received sigquit from a child process. It usually means the child failed."


def cache_not_flushed(queue: int, running: int) -> str:
    return (
        f"Cache not flushed because there are pending requests. #queue-req: {queue}, "
        f"#running-req: {running}"
    )


def decode_batch(
    running: int,
    used_tokens: int,
    token_usage: float,
    accept_len: float | None,
    accept_rate: float | None,
    cuda_graph: bool,
    gen_throughput: float,
    queue: int,
) -> str:
    """The ``Decode batch`` line (v0.5.9 and latest share it: no trailing comma)."""
    msg = (
        f"Decode batch, #running-req: {running}, #token: {used_tokens}, "
        f"token usage: {token_usage:.2f}, "
    )
    if accept_len is not None:
        msg += f"accept len: {accept_len:.2f}, accept rate: {accept_rate or 0.0:.2f}, "
    msg += (
        f"cuda graph: {cuda_graph}, gen throughput (token/s): {gen_throughput:.2f}, "
        f"#queue-req: {queue}"
    )
    return msg


def prefill_batch(
    dialect: str,
    new_seq: int,
    new_token: int,
    cached_token: int,
    token_usage: float,
    running: int,
    queue: int,
    pending_token: int,
    cuda_graph: bool,
    input_throughput: float,
) -> str:
    head = (
        f"Prefill batch, #new-seq: {new_seq}, #new-token: {new_token}, "
        f"#cached-token: {cached_token}, token usage: {token_usage:.2f}, "
        f"#running-req: {running}, #queue-req: {queue}, "
    )
    if dialect == V059:
        return head + (
            f"input throughput (token/s): {input_throughput:.2f}, cuda graph: {cuda_graph}"
        )
    return head + (
        f"#pending-token: {pending_token}, cuda graph: {cuda_graph}, "
        f"input throughput (token/s): {input_throughput:.2f}"
    )


def uvicorn_info(text: str) -> str:
    """Uvicorn's own lines (``INFO:     ...``) as SGLang's logger shows them."""
    return f"INFO:     {text}"


# ---------------------------------------------------------------------------------------------
# Failures
# ---------------------------------------------------------------------------------------------

_SGL = "/usr/local/lib/python3.12/dist-packages/sglang/srt"


def not_enough_memory_message(dialect: str, mem_fraction_static: float) -> str:
    if dialect == V059:
        return (
            "Not enough memory. Please try to increase --mem-fraction-static. Current value: "
            f"self.server_args.mem_fraction_static={mem_fraction_static}"
        )
    return (
        "Not enough memory. Please try to increase --mem-fraction-static. Current value: "
        f"mem_fraction_static={mem_fraction_static}"
    )


def capture_failed_solutions(dialect: str) -> str:
    if dialect == V059:
        return (
            "Possible solutions:\n"
            "1. set --mem-fraction-static to a smaller value (e.g., 0.8 or 0.7)\n"
            "2. set --cuda-graph-max-bs to a smaller value (e.g., 16)\n"
            "3. disable torch compile by not using --enable-torch-compile\n"
            "4. disable CUDA graph by --disable-cuda-graph. "
            "(Not recommended. Huge performance loss)\n"
            "Open an issue on GitHub https://github.com/sgl-project/sglang/issues/new/choose \n"
        )
    return (
        "Possible solutions:\n"
        "1. set --mem-fraction-static to a smaller value (e.g., 0.8 or 0.7)\n"
        "2. set --cuda-graph-max-bs-decode to a smaller value (e.g., 16)\n"
        "3. disable decode CUDA graph by --cuda-graph-backend-decode=disabled. "
        "(Not recommended. Huge performance loss)\n"
        "Open an issue on GitHub https://github.com/sgl-project/sglang/issues/new/choose \n"
    )


def scheduler_exception(frames: Sequence[tuple[str, int, str, str]], final: str) -> str:
    """``Scheduler hit an exception: Traceback ...`` with the given frames
    ``(file under sglang/srt, line, function, code)`` and final ``Type: message`` text."""
    lines = ["Scheduler hit an exception: Traceback (most recent call last):"]
    for path, line, func, code in frames:
        lines.append(f'  File "{_SGL}/{path}", line {line}, in {func}')
        lines.append(f"    {code}")
    lines.append(final)
    return "\n".join(lines)


def not_enough_memory_traceback(dialect: str, mem_fraction_static: float) -> str:
    frames = [
        ("managers/scheduler.py", 2964, "run_scheduler_process", "scheduler = Scheduler("),
        ("managers/scheduler.py", 352, "__init__", "self.init_model_worker()"),
        ("managers/tp_worker.py", 247, "__init__", "self.model_runner = ModelRunner("),
        ("model_executor/model_runner.py", 389, "__init__", "self.initialize(min_per_gpu_memory)"),
        ("model_executor/model_runner.py", 512, "initialize", "self.init_memory_pool("),
        (
            "model_executor/pool_configurator.py"
            if dialect == LATEST
            else "model_executor/model_runner_kv_cache_mixin.py",
            214,
            "init_memory_pool",
            "raise RuntimeError(",
        ),
    ]
    return scheduler_exception(
        frames, "RuntimeError: " + not_enough_memory_message(dialect, mem_fraction_static)
    )


def capture_failed_traceback(
    dialect: str, role: str, tried_gb: float, total_gb: float, free_gb: float
) -> str:
    runner = (
        "speculative/eagle_draft_cuda_graph_runner.py"
        if role.startswith("draft")
        else "model_executor/cuda_graph_runner.py"
        if dialect == V059
        else "model_executor/runner/decode_cuda_graph_runner.py"
    )
    oom = (
        f"CUDA out of memory. Tried to allocate {tried_gb:.2f} GiB. GPU 0 has a total "
        f"capacity of {total_gb:.2f} GiB of which {free_gb * 1024:.2f} MiB is free."
    )
    frames = [
        ("managers/scheduler.py", 2964, "run_scheduler_process", "scheduler = Scheduler("),
        ("managers/scheduler.py", 352, "__init__", "self.init_model_worker()"),
        (
            "model_executor/model_runner.py",
            1873,
            "init_device_graphs",
            "self.graph_runner = graph_runners[self.device](self)",
        ),
        (runner, 411, "__init__", "raise Exception("),
    ]
    return scheduler_exception(
        frames,
        f"Exception: Capture cuda graph failed: {oom}\n"
        + capture_failed_solutions(dialect).rstrip("\n"),
    )


def weights_oom_traceback(tried_gb: float, total_gb: float, free_gb: float) -> str:
    frames = [
        ("managers/scheduler.py", 2964, "run_scheduler_process", "scheduler = Scheduler("),
        ("model_executor/model_runner.py", 389, "__init__", "self.initialize(min_per_gpu_memory)"),
        (
            "model_executor/model_runner.py",
            702,
            "load_model",
            "self.model = get_model(model_config=self.model_config, load_config=self.load_config)",
        ),
    ]
    return scheduler_exception(
        frames,
        f"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate {tried_gb:.2f} GiB. "
        f"GPU 0 has a total capacity of {total_gb:.2f} GiB of which {max(free_gb, 0) * 1024:.2f} "
        "MiB is free.",
    )


def serving_crash_traceback() -> str:
    frames = [
        ("managers/scheduler.py", 2971, "run_scheduler_process", "scheduler.event_loop_normal()"),
        ("managers/scheduler.py", 1012, "event_loop_normal", "result = self.run_batch(batch)"),
        (
            "speculative/eagle_worker.py",
            318,
            "forward_batch_generation",
            "logits_output, verify_output, model_worker_batch, _ = self.verify(",
        ),
        (
            "speculative/eagle_worker.py",
            702,
            "verify",
            "res: EagleVerifyOutput = spec_info.verify(",
        ),
    ]
    return scheduler_exception(
        frames,
        "RuntimeError: CUDA error: an illegal memory access was encountered\n"
        "CUDA kernel errors might be asynchronously reported at some other API call, so the "
        "stacktrace below might be incorrect.\n"
        "For debugging consider passing CUDA_LAUNCH_BLOCKING=1\n"
        "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.",
    )


def argument_error_traceback(exception_type: str, message: str) -> str:
    """What the launcher prints when ServerArgs refuses an argument (before any rank starts)."""
    return (
        "Traceback (most recent call last):\n"
        '  File "<frozen runpy>", line 198, in _run_module_as_main\n'
        f'  File "{_SGL}/server_args.py", line 612, in __post_init__\n'
        "    self._handle_speculative_decoding()\n"
        f"{exception_type}: {message}"
    )
