"""specconsole against a real vLLM (the test bed of docs/vllm-testbed.md: ``vllm serve`` 0.32.0
on the CPU, SmolLM2-135M, n-gram speculation). Run by ``benchmarks/real_engine.py`` after the
llama.cpp figures, or alone: ``.venv/bin/python benchmarks/real_vllm.py [crashes] [box]
[ladder]`` (all three without an argument; each alone is one bounded stretch).

Prints:

* ``crashes``: crash line → CRASHED, per crash recipe: the controller deploys each load-time
  death of tests/realengine/vllm_recipes.py that a ``[server]`` table can express, through
  the plain-process backend; the time from vLLM writing the root-cause line (spotted by
  polling the run's log file every 5 ms, independently of the controller) to the controller
  publishing CRASHED with the cause classified (target ≤ 1 s);
* ``box``: when the systemd container can run, the seed's case over the real sshd (a context
  the KV cache cannot hold: the journal's stamp of the fatal line → detection);
* ``ladder``: a server without speculation (c = 1, 4) and one with n-gram K = 4 (c = 1, 2,
  4): each one's time to ready, the output tok/s side by side, and per level the load
  generator's output tokens against ``vllm:generation_tokens_total``'s delta (target:
  equal), the counters' drafts and accepted tokens, and the acceptance length from the
  counters against the one the server's own ``SpecDecoding metrics`` lines give for the same
  window.

Every figure is from one run on a shared 2-core box: the latencies are noisy, the counts exact.
"""

from __future__ import annotations

import asyncio
import json
import re
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import tomli_w

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.fixtures.vllm import (  # noqa: E402
    SERVER_ENV,
    VllmBed,
    find_bed,
    launch,
)
from tests.realengine.vllm_box import local_plan, logged_past_last_read  # noqa: E402
from tests.realengine.vllm_recipes import BY_NAME, MISSING_DRAFT  # noqa: E402

from real_engine import boxed_crash, crash_latency, systemd_box  # noqa: E402  (the crash harness)
from specconsole.bench.loadgen import run_ladder  # noqa: E402
from specconsole.core.engine.registry import get_engine  # noqa: E402
from specconsole.core.ports import BenchApi, BenchSpec  # noqa: E402

COUNTERS = get_engine("vllm").endpoints.spec_counters
assert COUNTERS is not None
PROMPTS = ROOT / "examples" / "vllm-cpu-prompts.jsonl"
SPEC_LINE = re.compile(
    r"SpecDecoding metrics: Mean acceptance length: ([0-9.]+), .*Accepted: (\d+) tokens, "
    r"Drafted: (\d+) tokens"
)


def crash_cases(bed: VllmBed) -> list[tuple[str, dict[str, Any], dict[str, str]]]:
    """(recipe, ``[server]`` keys, env) for each death a plan can express."""
    base_env = dict(SERVER_ENV)
    no_space = {k: v for k, v in base_env.items() if k != "VLLM_CPU_KVCACHE_SPACE"}
    draft = {"method": "draft_model", "num_speculative_tokens": 4}
    return [
        ("crash-context-beyond-model", {"max_model_len": 65536}, base_env),
        (
            "crash-missing-draft",
            {**draft, "speculative_model": str(bed.cache / "models" / MISSING_DRAFT)},
            base_env,
        ),
        ("crash-mem-util", {"gpu_memory_utilization": 0.99}, no_space),
        (
            "crash-broken-draft",
            {**draft, "speculative_model": str(bed.model("draft-broken"))},
            base_env,
        ),
        (
            "crash-long-context",
            {"max_model_len": 65536},
            {**base_env, "VLLM_ALLOW_LONG_MAX_MODEL_LEN": "1"},
        ),
    ]


def crash_plan(bed: VllmBed, run_dir: Path, server: dict[str, Any], env: dict[str, str]) -> str:
    """The one-trial plan of a death: the bed's server with ``server``'s keys and ``env``."""
    return tomli_w.dumps(local_plan(bed, run_dir, env, server, {"on_crash": "pause"}))


async def crash_run(
    bed: VllmBed, recipe: str, server: dict[str, Any], env: dict[str, str]
) -> tuple[float, str]:
    """(seconds from the fatal line in the log to CRASHED, the cause classified)."""
    with tempfile.TemporaryDirectory() as tmp:
        run_dir = Path(tmp) / "run"
        needle = BY_NAME[recipe].fatal_text.encode()
        plan = crash_plan(bed, run_dir, server, env)
        return await crash_latency(plan, run_dir, needle, timeout=900.0)


def box_crash(bed: VllmBed) -> float | None:
    """The seed's case as a systemd unit in the real container over the real sshd: a context
    the 1 GiB KV cache cannot hold; journal stamp of the fatal line → detection (None without
    the container)."""
    from tests.realengine.vllm_box import UNIT, install, profile_toml, users_unit

    sweep = "load_timeout = 900\n[sweep.axes]\nmax_model_len = [65536]\n"
    with tempfile.TemporaryDirectory() as tmp, systemd_box(Path(tmp)) as box:
        if box is None:
            return None
        install(box, users_unit(bed, 18700))
        return boxed_crash(box, Path(tmp) / "run", profile_toml(box), sweep, UNIT)


def spec_lines(log: str, start: int) -> list[tuple[float, int, int]]:
    """(mean acceptance length, accepted, drafted) of every SpecDecoding line after ``start``."""
    return [(float(m[1]), int(m[2]), int(m[3])) for m in SPEC_LINE.finditer(log, start)]


def logged_length(lines: list[tuple[float, int, int]]) -> float | None:
    """The acceptance length the server's lines give for their window together: each line's
    drafts are accepted / (length − 1) (two decimals, so approximate)."""
    drafts = sum(a / (length - 1) for length, a, _d in lines if length > 1)
    accepted = sum(a for length, a, _d in lines if length > 1)
    return 1 + accepted / drafts if drafts else None


def logged_after(server: Any, start: int, timeout_s: float = 30.0) -> bool:
    """Wait (bounded) until the server's statistics lines account for everything it counted
    at its last ``/metrics`` read (the level's final counter snapshot): one of them follows
    that read. False if none came in ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if logged_past_last_read(server.log_text()[start:].splitlines()):
            time.sleep(0.5)  # its SpecDecoding line: written right after, in the same call
            return True
        time.sleep(0.2)
    return False


@dataclass(frozen=True)
class Level:
    """One level against one server: the load generator's figures and the server's own."""

    concurrency: int
    output_tokens: int
    """Completion tokens the load generator counted."""
    server_tokens: int | None
    """``vllm:generation_tokens_total``'s delta over the level."""
    output_tok_s: float
    """The load generator's aggregate output tok/s (bench_serving's ``output_throughput``)."""
    drafts: int
    accepted: int
    counted_length: float | None
    """Acceptance length from the counters: 1 + accepted / drafts."""
    logged_length: float | None
    """The same from the server's own ``SpecDecoding metrics`` lines of the level."""
    logged_accepted: int
    covered: bool
    """A statistics line followed the level's last counter read (the log has every draft)."""


def measure(
    bed: VllmBed, spec: dict[str, Any] | None, ladder: tuple[int, ...]
) -> tuple[float, list[Level]]:
    """A fresh server with ``spec`` (``--speculative-config``; None: none), then the ladder:
    (seconds from launch to ``/health`` 200, each level)."""
    flags = ("--speculative-config", json.dumps(spec)) if spec else ()
    with tempfile.TemporaryDirectory() as tmp:
        server = launch(bed, Path(tmp) / "server.log", *flags, env={"VLLM_LOG_STATS_INTERVAL": "1"})
        try:
            server.wait_ready()
            assert server.ready_after_s is not None
            return server.ready_after_s, [level_of(server, c) for c in ladder]
        finally:
            server.stop()


def level_of(server: Any, c: int) -> Level:
    """One level of ``max(4, 2c)`` requests of 64 tokens at concurrency ``c``."""
    bench = BenchSpec(
        ladder=(c,),
        requests_per_level=max(4, 2 * c),
        warmup_requests=0,
        output_len=64,
        prompts=f"jsonl:{PROMPTS}",
        flush_cache=False,
        stall_timeout_s=180.0,
        api=BenchApi.COMPLETIONS,
        spec_counters=COUNTERS,
    )
    start = len(server.log_text())
    result = asyncio.run(run_ladder(bench, server.url))
    (level,) = result.levels
    counters = level.counters
    assert counters is not None
    covered = logged_after(server, start) if counters.drafts else True
    lines = spec_lines(server.log_text(), start)
    return Level(
        concurrency=c,
        output_tokens=level.total_output_tokens,
        server_tokens=counters.output_tokens,
        output_tok_s=level.output_throughput,
        drafts=counters.drafts,
        accepted=counters.accepted,
        counted_length=1 + counters.accepted / counters.drafts if counters.drafts else None,
        logged_length=logged_length(lines),
        logged_accepted=sum(a for _l, a, _d in lines),
        covered=covered,
    )


def crash_figures(bed: VllmBed) -> None:
    latencies = []
    for recipe, server, env in crash_cases(bed):
        latency, cause = asyncio.run(crash_run(bed, recipe, server, env))
        latencies.append(max(0.0, latency))
        print(
            f"crash -> CRASHED, {recipe}: {max(0.0, latency) * 1000:.0f} ms "
            f"(fatal line written -> controller published; cause {cause}; target <= 1 s)"
        )
    print(
        f"crash -> CRASHED over {len(latencies)} recipes: median "
        f"{statistics.median(latencies) * 1000:.0f} ms, max {max(latencies) * 1000:.0f} ms "
        "(resolution 5 ms)"
    )


def box_figures(bed: VllmBed) -> None:
    boxed = box_crash(bed)
    if boxed is not None:
        print(
            "crash -> CRASHED in the systemd container over sshd (journal stamp of the fatal "
            f"line -> detection), the seed's long context: {boxed * 1000:.0f} ms (target <= 1 s)"
        )


NGRAM4 = {"method": "ngram", "num_speculative_tokens": 4, "prompt_lookup_max": 4}


def ladder_figures(bed: VllmBed) -> None:
    base_ready, base = measure(bed, None, (1, 4))
    ngram_ready, ngram = measure(bed, NGRAM4, (1, 2, 4))
    print(
        f"ready (launch -> /health 200, --enforce-eager): none {base_ready:.1f} s, "
        f"ngram K=4 {ngram_ready:.1f} s"
    )
    rate = {lv.concurrency: lv.output_tok_s for lv in ngram}
    for lv in base:
        spec = rate.get(lv.concurrency)
        ratio = f", x{spec / lv.output_tok_s:.2f}" if spec and lv.output_tok_s else ""
        print(
            f"output tok/s c={lv.concurrency}: none {lv.output_tok_s:.1f} | "
            f"ngram K=4 {spec or 0:.1f}{ratio}"
        )
    print(
        "\nc | output tokens ours / vllm:generation_tokens_total | drafts, accepted | "
        "acceptance length counters / server's SpecDecoding lines (accepted in them)"
    )
    for name, levels in (("none", base), ("ngram K=4", ngram)):
        for lv in levels:
            same = "equal" if lv.output_tokens == lv.server_tokens else "DIFFERENT"
            shown = f"{lv.logged_length:.2f}" if lv.logged_length is not None else "-"
            if not lv.covered:
                shown += " (no statistics line after the level's last counter read in 30 s)"
            counted = f"{lv.counted_length:.2f}" if lv.counted_length is not None else "-"
            print(
                f"  {name} c={lv.concurrency}: {lv.output_tokens} / {lv.server_tokens} ({same})"
                f" | {lv.drafts}, {lv.accepted} | {counted} / {shown} ({lv.logged_accepted})"
            )


PARTS = {"crashes": crash_figures, "box": box_figures, "ladder": ladder_figures}
"""Each part alone (``real_vllm.py ladder``) is one bounded stretch of the shared machine."""


def main(parts: list[str] | None = None) -> None:
    chosen = parts or [a for a in sys.argv[1:] if a in PARTS] or list(PARTS)
    bed = find_bed()
    print("\n== the real vLLM (vllm serve 0.32.0, CPU, SmolLM2-135M)")
    for part in chosen:
        PARTS[part](bed)


if __name__ == "__main__":
    main()
