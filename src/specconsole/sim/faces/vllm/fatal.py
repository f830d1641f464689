"""How the simulator's vLLM face starts and dies: its banner, its refusals, its fatal texts.

Why apart from the face's life (:mod:`.server`): these are vLLM's words for what went wrong —
the engine core's ``EngineCore failed to start.`` record and traceback, multiprocessing's
``Process EngineCore_DP0:`` report, the front end's ``Engine core initialization failed. See
root cause above.`` — and for why: the release's own ``ValueError`` texts (no memory for the
cache blocks, a ``max_model_len`` the KV cache cannot hold, less free memory at start-up than
``gpu_memory_utilization`` asks), torch's out-of-memory message, CUDA's illegal memory access.
Each text is the release's (tests/oracle/test_vllm_face.py finds them in its source); the
frames name the release's files and functions. Pure but for the writer it is handed.
"""

from __future__ import annotations

import math
from typing import Any

from specconsole.sim.faces.vllm.text import SOURCES, VllmText
from specconsole.sim.physics.launch import ResolvedArgs
from specconsole.sim.physics.model import GIB, MemoryPlan
from specconsole.sim.profile import Profile

__all__ = [
    "ROUTES",
    "banner",
    "config_text",
    "kv_memory_args",
    "loaded_args",
    "no_memory",
    "oom",
    "refused",
    "serving_failure",
    "startup_failure",
    "startup_oom",
    "too_short",
]

_VLLM = "/usr/local/lib/python3.12/dist-packages/vllm"

ROUTES: tuple[tuple[str, str], ...] = (
    ("/health", "GET"),
    ("/metrics", "GET"),
    ("/version", "GET"),
    ("/v1/models", "GET"),
    ("/v1/chat/completions", "POST"),
    ("/v1/completions", "POST"),
)
"""The routes the face serves, as the front end lists them at start (vLLM lists more)."""

_FRAMES: dict[str, dict[str, tuple[tuple[str, int, str, str], ...]]] = {
    "0.11.0": {
        "core": (
            (
                "v1/engine/core.py",
                699,
                "run_engine_core",
                "engine_core = EngineCoreProc(*args, **kwargs)",
            ),
        ),
        "init_device": (("v1/worker/gpu_worker.py", 156, "init_device", "raise ValueError("),),
        "load_model": (
            (
                "v1/worker/gpu_model_runner.py",
                2597,
                "load_model",
                "self.model = model_loader.load_model(",
            ),
        ),
        "check_enough_kv_cache_memory": (
            (
                "v1/engine/core.py",
                199,
                "_initialize_kv_caches",
                "kv_cache_configs = get_kv_cache_configs(vllm_config, kv_cache_specs,",
            ),
            (
                "v1/core/kv_cache_utils.py",
                1243,
                "get_kv_cache_configs",
                "check_enough_kv_cache_memory(vllm_config, kv_cache_spec_one_worker,",
            ),
            ("v1/core/kv_cache_utils.py", 678, "check_enough_kv_cache_memory", "raise ValueError("),
        ),
        "capture_model": (
            ("v1/worker/gpu_model_runner.py", 3405, "capture_model", "self._capture_cudagraphs("),
        ),
        "front": (
            (
                "v1/engine/utils.py",
                785,
                "wait_for_engine_startup",
                'raise RuntimeError("Engine core initialization failed. "',
            ),
        ),
    },
    "0.34.0": {
        "core": (
            (
                "v1/engine/core.py",
                1728,
                "run_engine_core",
                "engine_core = EngineCoreProc(*args, engine_index=dp_rank, **kwargs)",
            ),
        ),
        "init_device": (("v1/worker/utils.py", 785, "request_memory", "raise ValueError("),),
        "load_model": (
            (
                "v1/worker/gpu/model_runner.py",
                430,
                "load_model",
                "self.model = model_loader.load_model(",
            ),
        ),
        "check_enough_kv_cache_memory": (
            (
                "v1/engine/core.py",
                273,
                "_initialize_kv_caches",
                "kv_cache_configs = get_kv_cache_configs(",
            ),
            (
                "v1/core/kv_cache_planning.py",
                224,
                "check_enough_kv_cache_memory",
                "_check_enough_kv_cache_memory(",
            ),
            (
                "v1/core/kv_cache_planning.py",
                99,
                "_check_enough_kv_cache_memory",
                "raise ValueError(",
            ),
        ),
        "capture_model": (
            (
                "v1/worker/gpu/model_runner.py",
                1200,
                "capture_model",
                "self.cudagraph_manager.capture(",
            ),
        ),
        "front": (("v1/engine/utils.py", 1478, "wait_for_engine_startup", "raise RuntimeError("),),
    },
}
"""The frames each failure's traceback shows, per release: (file under vllm/, line, function,
code)."""


def _traceback(frames: tuple[tuple[str, int, str, str], ...], final: str, head: str = "") -> str:
    lines = [head + "Traceback (most recent call last):"]
    for path, line, func, code in frames:
        where = path if path.startswith("/") else f"{_VLLM}/{path}"
        lines.append(f'  File "{where}", line {line}, in {func}')
        lines.append(f"    {code}")
    lines.append(final)
    return "\n".join(lines)


def _gib(x: float) -> str:
    """vLLM 0.34's ``format_gib`` (two decimals, trailing zeros dropped)."""
    return f"{round(x, 2)}"


_METHOD_WORDS = {
    "EAGLE": "eagle",
    "EAGLE3": "eagle3",
    "NGRAM": "ngram",
    "STANDALONE": "draft_model",
}
"""vLLM's word for each method (when the command line gave none the face could echo)."""


def config_text(a: ResolvedArgs) -> str:
    """The engine's configuration in its start-up record (abridged: the fields a tuner reads)."""
    given = a.server_args.get("speculative_config") or {}
    method = given.get("method") or _METHOD_WORDS.get(a.algorithm or "", "")
    k = a.num_steps or given.get("num_speculative_tokens")  # n-gram: given, not modelled
    draft = f"'{a.draft_model_path}'" if a.draft_model_path else "None"
    spec = (
        f"SpeculativeConfig(method='{str(method).lower()}', model={draft}, num_spec_tokens={k})"
        if a.algorithm and k
        else "None"
    )
    return (
        f"model='{a.model_path}', speculative_config={spec}, tokenizer='{a.model_path}', "
        f"max_seq_len={a.context_length}, tensor_parallel_size={a.tp_size}, "
        f"enforce_eager={not a.capture_bs}, served_model_name={a.served_model_name}"
    )


def loaded_args(t: VllmText, weights_gb: float, seconds: float) -> tuple[object, ...]:
    return (weights_gb if t.release == "0.11.0" else _gib(weights_gb), seconds)


def kv_memory_args(t: VllmText, plan: MemoryPlan) -> tuple[object, ...]:
    per_token = plan.target_kv_bytes_per_token + plan.draft_kv_bytes_per_token
    gib = max(plan.max_total_num_tokens, 0) * per_token / GIB
    return (gib if t.release == "0.11.0" else _gib(gib),)


def startup_oom(t: VllmText, free_gb: float, profile: Profile, a: ResolvedArgs) -> str:
    """Less free memory at start-up than the utilization asks (0.11's ``init_device``)."""
    total = profile.gpu.memory_gb
    return (
        f"Free memory on device ({round(free_gb, 2)}/{round(total, 2)} GiB) on startup is less "
        f"than desired GPU memory utilization ({a.memory_fraction}, "
        f"{round(total * a.memory_fraction, 2)} GiB). Decrease GPU memory utilization or "
        "reduce GPU memory used by other processes."
    )


def oom(plan: MemoryPlan, tried_gb: float) -> str:
    """torch's out-of-memory message."""
    free = max(plan.avail_after_kv_gb - plan.activation_reserve_gb, 0.0)
    return (
        f"CUDA out of memory. Tried to allocate {tried_gb:.2f} GiB. GPU 0 has a total capacity "
        f"of {plan.total_gb:.2f} GiB of which {free * 1024:.2f} MiB is free."
    )


def _hint(t: VllmText, a: ResolvedArgs) -> str:
    if t.release == "0.11.0":
        return ""
    return (
        "The KV cache gets what is left after the model, its activations, CUDA graphs and "
        f"warmup within `gpu_memory_utilization`={a.memory_fraction}; increase it (with the "
        "extensible KV cache it defaults to 1.0) or decrease `max_model_len` or `max_num_seqs`. "
        "CUDA graphs take less with fewer or smaller capture sizes in the compilation config."
    )


def no_memory(t: VllmText, a: ResolvedArgs) -> str:
    """The KV cache would be empty."""
    if t.release == "0.11.0":
        return (
            "No available memory for the cache blocks. Try increasing `gpu_memory_utilization` "
            "when initializing the engine."
        )
    return (
        f"No available memory for the cache blocks. {_hint(t, a)} See "
        "https://docs.vllm.ai/en/latest/configuration/conserving_memory/ for more details."
    )


def too_short(t: VllmText, plan: MemoryPlan, a: ResolvedArgs) -> str:
    """The KV cache cannot hold one request of ``max_model_len``."""
    per_token = plan.target_kv_bytes_per_token + plan.draft_kv_bytes_per_token
    needed = a.context_length * per_token / GIB
    available = plan.max_total_num_tokens * per_token / GIB
    estimated = plan.max_total_num_tokens
    if t.release == "0.11.0":
        return (
            f"To serve at least one request with the models's max seq len ({a.context_length}), "
            f"({needed:.2f} GiB KV cache is needed, which is larger than the available KV cache "
            f"memory ({available:.2f} GiB). Based on the available memory, the estimated maximum "
            f"model length is {estimated}. Try increasing `gpu_memory_utilization` or decreasing "
            "`max_model_len` when initializing the engine."
        )
    return (
        f"To serve at least one request with the model's max seq len ({a.context_length}), "
        f"({_gib(needed)} GiB KV cache is needed, which is larger than the available KV cache "
        f"memory ({_gib(available)} GiB). Based on the available memory, the estimated maximum "
        f"model length is {estimated}. {_hint(t, a)} Decreasing `max_model_len` also reduces "
        "what is needed. See https://docs.vllm.ai/en/latest/configuration/conserving_memory/ "
        "for more details."
    )


def startup_failure(log: Any, release: str, exc_type: str, message: str, where: str) -> None:
    """The engine core's failure at start-up, then its process's report, then the front
    end's (``Failed core proc(s): {}``: the core exits by its exception, not by a signal)."""
    frames = _FRAMES[release]
    core = frames["core"] + frames[where]
    final = f"{exc_type}: {message}"
    path, line, text = SOURCES[release]["failed"]
    log.message(
        "EngineCore_DP0",
        path.rsplit("/", 1)[-1],
        line,
        text + "\n" + _traceback(core, final),
        "ERROR",
    )
    mp = (("/usr/lib/python3.12/multiprocessing/process.py", 314, "_bootstrap", "self.run()"),)
    log.lines(
        "EngineCore_DP0",
        ["Process EngineCore_DP0:", *_traceback(mp + core, final).split("\n")],
    )
    refused(
        log,
        "RuntimeError",
        "Engine core initialization failed. See root cause above. Failed core proc(s): {}",
        frames["front"],
    )


def refused(
    log: Any,
    exc_type: str,
    message: str,
    frames: tuple[tuple[str, int, str, str], ...] = (),
) -> None:
    """The front end's uncaught exception: ``vllm serve`` exits 1 with its traceback."""
    head = (
        ("/usr/local/bin/vllm", 10, "<module>", "sys.exit(main())"),
        ("entrypoints/cli/main.py", 54, "main", "args.dispatch_function(args)"),
    )
    text = _traceback(head + frames, f"{exc_type}: {message}")
    log.lines("APIServer", text.split("\n"))


def serving_failure(log: Any, release: str) -> None:
    """The engine core dies while serving (an illegal memory access in a verify step); the
    front end's output handler reports the engine dead."""
    path, line, text = SOURCES[release]["fatal"]
    step = (("v1/engine/core.py", 754, "run_busy_loop", "self._process_engine_step()"),)
    cuda = (
        "RuntimeError: CUDA error: an illegal memory access was encountered\n"
        "CUDA kernel errors might be asynchronously reported at some other API call, so the "
        "stacktrace below might be incorrect.\n"
        "For debugging consider passing CUDA_LAUNCH_BLOCKING=1\n"
        "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions."
    )
    log.message(
        "EngineCore_DP0",
        path.rsplit("/", 1)[-1],
        line,
        text + "\n" + _traceback(step, cuda),
        "ERROR",
    )
    path, line, text = SOURCES[release]["handler"]
    dead = (
        "vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue. See stack "
        "trace (above) for the root cause."
    )
    handler = (
        (
            "v1/engine/async_llm.py",
            line - 41,
            "output_handler",
            "outputs = await engine_core.get_output_async()",
        ),
    )
    log.message(
        "APIServer", path.rsplit("/", 1)[-1], line, text + "\n" + _traceback(handler, dead), "ERROR"
    )


def banner(log: Any, a: ResolvedArgs) -> None:
    """The front end's first records: its release (0.34: its logo) and the arguments that
    differ from vLLM's defaults."""
    for line in log.text.version_lines(log.text.release, a.model_path):
        log.lines("APIServer", [line], record=True)
    shown = {k: v for k, v in a.server_args.items() if v is not None}
    log.record("APIServer", "args", shown)


def capacity_ratio(tokens: int, max_model_len: int) -> float:
    """How many requests of ``max_model_len`` the KV cache holds (the concurrency line)."""
    return tokens / max_model_len if max_model_len else math.inf
