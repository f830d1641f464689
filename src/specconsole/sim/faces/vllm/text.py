"""vLLM's log texts, as the releases the simulator plays print them.

Why it exists: the console follows a vLLM server's log and reacts to it, so the simulator's
vLLM face must print vLLM's own lines — the same format strings, the same headers, the same
process prefixes — for the release it plays. Every text here is a format string read from that
release's source (the sdists ``scripts/fetch-vllm-sdists.py`` caches), recorded with the file
and line that logs it; ``tests/oracle/test_vllm_face.py`` finds each one in that file of that
release. Nothing is copied but the words: the values are the simulator's.

Two releases are played: ``0.11.0`` (V1 engine, ``decorate_logs`` prefixing every stdout and
stderr line with a coloured ``(APIServer pid=N)``; KV cache sized before CUDA graphs) and
``0.34.0`` (the process name inside the log format, no colour off a terminal; the KV size and
the concurrency on one line; the KV cache sized after the graphs). Pure: no I/O.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

__all__ = ["RELEASES", "SOURCES", "VllmText", "text_for"]

RELEASES: tuple[str, ...] = ("0.11.0", "0.34.0")
"""The releases the face plays (the oracle's, tests/oracle/vllm-versions.txt)."""

_SPEC = (
    "SpecDecoding metrics: Mean acceptance length: %.2f, Accepted throughput: %.2f "
    "tokens/s, Drafted throughput: %.2f tokens/s, Accepted: %d tokens, Drafted: %d "
    "tokens, Per-position acceptance rate: %s, Avg Draft acceptance rate: %.1f%%"
)
"""The speculative-decoding statistics (the same in both releases)."""

SOURCES: dict[str, dict[str, tuple[str, int, str]]] = {
    "0.11.0": {
        "version": ("vllm/entrypoints/openai/api_server.py", 1839, "vLLM API server version %s"),
        "args": ("vllm/entrypoints/utils.py", 233, "non-default args: %s"),
        "engine": (
            "vllm/v1/engine/core.py",
            77,
            "Initializing a V1 LLM engine (v%s) with config: %s",
        ),
        "load": ("vllm/v1/worker/gpu_model_runner.py", 2602, "Starting to load model %s..."),
        "drafter": ("vllm/v1/worker/gpu_model_runner.py", 2641, "Loading drafter model..."),
        "weights": (
            "vllm/model_executor/model_loader/default_loader.py",
            268,
            "Loading weights took %.2f seconds",
        ),
        "loaded": (
            "vllm/v1/worker/gpu_model_runner.py",
            2653,
            "Model loading took %.4f GiB and %.6f seconds",
        ),
        "kv_memory": ("vllm/v1/worker/gpu_worker.py", 298, "Available KV cache memory: %.2f GiB"),
        "kv_size": ("vllm/v1/core/kv_cache_utils.py", 1087, "GPU KV cache size: %s tokens"),
        "concurrency": (
            "vllm/v1/core/kv_cache_utils.py",
            1091,
            "Maximum concurrency for %s tokens per request: %.2fx",
        ),
        "graphs": (
            "vllm/v1/worker/gpu_model_runner.py",
            3480,
            "Graph capturing finished in %.0f secs, took %.2f GiB",
        ),
        "init": (
            "vllm/v1/engine/core.py",
            210,
            "init engine (profile, create kv cache, warmup model) took %.2f seconds",
        ),
        "serving": (
            "vllm/entrypoints/openai/api_server.py",
            1912,
            "Starting vLLM API server %d on %s",
        ),
        "routes": ("vllm/entrypoints/launcher.py", 34, "Available routes are:"),
        "route": ("vllm/entrypoints/launcher.py", 42, "Route: %s, Methods: %s"),
        "stats": (
            "vllm/v1/metrics/loggers.py",
            127,
            "Engine %03d: Avg prompt throughput: %.1f tokens/s, Avg generation throughput: "
            "%.1f tokens/s, Running: %d reqs, Waiting: %d reqs, GPU KV cache usage: %.1f%%, "
            "Prefix cache hit rate: %.1f%%",
        ),
        "spec": ("vllm/v1/spec_decode/metrics.py", 96, _SPEC),
        "failed": ("vllm/v1/engine/core.py", 708, "EngineCore failed to start."),
        "fatal": ("vllm/v1/engine/core.py", 710, "EngineCore encountered a fatal error."),
        "handler": ("vllm/v1/engine/async_llm.py", 480, "AsyncLLM output_handler failed."),
    },
    "0.34.0": {
        "version": (
            "vllm/entrypoints/common/startup.py",
            37,
            "vLLM server version %s, serving model %s",
        ),
        "args": ("vllm/entrypoints/common/startup.py", 96, "non-default args: %s"),
        "engine": (
            "vllm/v1/engine/core.py",
            154,
            "Initializing a V1 LLM engine (v%s) with config: %s",
        ),
        "weights": (
            "vllm/model_executor/model_loader/default_loader.py",
            544,
            "Loading weights took %.2f seconds",
        ),
        "loaded": (
            "vllm/v1/worker/gpu/model_runner.py",
            442,
            "Model loading took %s GiB memory and %.6f seconds",
        ),
        "graphs": (
            "vllm/v1/worker/gpu/model_runner.py",
            1217,
            "Graph capturing finished in %.0f secs, took %.2f GiB",
        ),
        "kv_memory": ("vllm/v1/worker/gpu_worker.py", 796, "Available KV cache memory: %s GiB"),
        "kv_size": (
            "vllm/v1/core/kv_cache_utils.py",
            1169,
            "%s KV cache size: %s tokens, Maximum concurrency for %s tokens per request: %.2fx",
        ),
        "init": (
            "vllm/v1/engine/core.py",
            459,
            "init engine (profile, create kv cache, warmup model) took %.2f s",
        ),
        "tasks": (
            "vllm/entrypoints/launchers/api_server/entry.py",
            135,
            "Supported tasks: %s",
        ),
        "serving": (
            "vllm/entrypoints/launchers/api_server/entry.py",
            139,
            "Starting vLLM server on %s",
        ),
        "routes": ("vllm/entrypoints/launchers/launcher.py", 188, "Available routes are:"),
        "route": ("vllm/entrypoints/launchers/launcher.py", 197, "Route: %s, Methods: %s"),
        "stats": (
            "vllm/v1/metrics/loggers.py",
            336,
            "Engine %03d: Avg prompt throughput: %.1f tokens/s, Avg generation throughput: "
            "%.1f tokens/s, Running: %d reqs, Waiting: %d reqs, %s KV cache usage: %.1f%%",
        ),
        "hit_rate": ("vllm/v1/metrics/loggers.py", 322, "Prefix cache hit rate: %.1f%%"),
        "spec": ("vllm/v1/spec_decode/metrics.py", 120, _SPEC),
        "failed": ("vllm/v1/engine/core.py", 1757, "EngineCore failed to start."),
        "fatal": ("vllm/v1/engine/core.py", 1759, "EngineCore encountered a fatal error."),
        "handler": ("vllm/v1/engine/async_llm.py", 957, "AsyncLLM output_handler failed."),
        "schedule": (
            "vllm/config/speculative.py",
            570,
            "num_speculative_tokens_per_batch_size",
        ),
    },
}
"""Per release: text key -> (source file, line of the logging call, its format string). The
0.34.0 statistics line is assembled from parts by its logger (``", ".join(log_parts)`` after
the ``Engine 000: `` prefix); its key-by-key form is checked part by part."""

_CYAN, _RESET = "\033[1;36m", "\033[0;0m"
"""0.11's ``decorate_logs`` colours the process prefix, terminal or not (vllm/utils)."""


@dataclass(frozen=True, slots=True)
class VllmText:
    """The lines of one release, with its headers and process prefixes."""

    release: str

    @property
    def decorates_streams(self) -> bool:
        """0.11: ``decorate_logs`` prefixes every stdout/stderr line (tracebacks and uvicorn
        included); 0.34: only the logger's records carry the process name."""
        return self.release == "0.11.0"

    @property
    def one_kv_line(self) -> bool:
        """0.34 logs the KV size and the concurrency as one line."""
        return self.release != "0.11.0"

    @property
    def graphs_before_kv(self) -> bool:
        """0.34 sizes its (extensible) KV cache after capturing CUDA graphs."""
        return self.release != "0.11.0"

    def has(self, key: str) -> bool:
        return key in SOURCES[self.release]

    def process(self, name: str, pid: int) -> str:
        """The process prefix of a stdout/stderr line (``(EngineCore_DP0 pid=7) ``)."""
        if self.decorates_streams:
            return f"{_CYAN}({name} pid={pid}){_RESET} "
        return f"({name} pid={pid}) "

    def record(
        self, key: str, args: tuple[object, ...], *, level: str = "INFO", now: float | None = None
    ) -> list[str]:
        """One logger record, one string per printed line: ``LEVEL MM-DD HH:MM:SS [file:N]
        message`` (without the process prefix, which :meth:`process` gives); a multi-line
        message repeats the header on every line, as vLLM's ``NewLineFormatter`` does."""
        path, line, fmt = SOURCES[self.release][key]
        return self.header_lines(path.rsplit("/", 1)[-1], line, fmt % args, level, now)

    @staticmethod
    def header_lines(
        filename: str, line: int, message: str, level: str = "INFO", now: float | None = None
    ) -> list[str]:
        stamp = time.strftime("%m-%d %H:%M:%S", time.localtime(time.time() if now is None else now))
        head = f"{level} {stamp} [{filename}:{line}] "
        return [head + part for part in message.split("\n")]

    def spec_line(
        self,
        mean_length: float,
        accepted_tput: float,
        drafted_tput: float,
        accepted: int,
        drafted: int,
        per_position: tuple[float, ...],
        rate_pct: float,
    ) -> list[str]:
        """The periodic ``SpecDecoding metrics`` line (``spec_decode/metrics.py``)."""
        rates = ", ".join(f"{p:.3f}" for p in per_position)
        return self.record(
            "spec",
            (mean_length, accepted_tput, drafted_tput, accepted, drafted, rates, rate_pct),
        )

    def stats_line(
        self,
        prompt_tput: float,
        gen_tput: float,
        running: int,
        waiting: int,
        usage: float,
        hit_rate: float | None = None,
    ) -> list[str]:
        """The periodic ``Engine 000: ...`` statistics (``v1/metrics/loggers.py``): 0.11
        always shows the prefix-cache hit rate; 0.34 once its prefix cache (on by default)
        has been looked up, i.e. from the first request on (``hit_rate``; the simulator's
        cache never hits) — as the real 0.32 does."""
        if self.release == "0.11.0":
            args: tuple[object, ...] = (0, prompt_tput, gen_tput, running, waiting, usage, 0.0)
            return self.record("stats", args)
        args = (0, prompt_tput, gen_tput, running, waiting, "GPU", usage)
        lines = self.record("stats", args)
        if hit_rate is not None:
            _path, _line, fmt = SOURCES[self.release]["hit_rate"]
            lines[-1] += ", " + fmt % hit_rate
        return lines

    def version_lines(self, version: str, model: str) -> list[str]:
        """The first record of the API server: its release (0.34 draws its logo, monochrome
        off a terminal, with the version and the model)."""
        if self.release == "0.11.0":
            return self.record("version", (version,))
        logo = (
            "\n       █     █     █▄   ▄█\n"
            " ▄▄ ▄█ █     █     █ ▀▄▀ █  version %s\n"
            "  █▄█▀ █     █     █     █  model   %s\n"
            "   ▀▀  ▀▀▀▀▀ ▀▀▀▀▀ ▀     ▀\n"
        )
        path, line, _fmt = SOURCES[self.release]["version"]
        return self.header_lines(path.rsplit("/", 1)[-1], line, logo % (version, model))

    def kv_lines(self, tokens: int, max_model_len: int, concurrency: float) -> list[str]:
        """The KV cache's size and how many full-length requests it holds (thousands
        separators: vLLM formats both counts with ``f"{n:,}"``)."""
        if self.one_kv_line:
            return self.record("kv_size", ("GPU", f"{tokens:,}", f"{max_model_len:,}", concurrency))
        return [
            *self.record("kv_size", (f"{tokens:,}",)),
            *self.record("concurrency", (f"{max_model_len:,}", concurrency)),
        ]


_TEXTS = {release: VllmText(release) for release in RELEASES}


def text_for(release: str) -> VllmText:
    """The texts of ``release`` (one of :data:`RELEASES`)."""
    return _TEXTS[release]
