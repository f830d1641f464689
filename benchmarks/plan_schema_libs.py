"""msgspec against pydantic for the plan schema (issue 39): start-up cost, validation time and
the error texts each gives for the same bad plans, side by side in one run.

Why: a plan's shape is declared once with a schema library (``core.plans.schema``); the
choice is measured, not assumed. What matters here:

* **import + declaration cost**: ``validate``, ``sweep`` and the console's plan loader pay it
  on every start (the console's first frame never imports it; the start-up import test guards
  that). Each figure is a fresh interpreter importing the library and declaring the same
  shape (the plan's tables with an engine's ``[server]`` keys, built at run time as engines
  contribute them), minus a bare interpreter's start, median of ``--runs``.
* **validation time**: one plan document (as ``tomllib`` returns it) checked against the
  declared shape, median µs per document.
* **error texts**: what each library says for the same bad plans, before the product turns
  it into its own sentence (field, value, fix, did-you-mean): the location and the value
  must be recoverable from the error, or the product cannot say them.

The shape is described once below as data (table → key → type) and turned into each
library's declaration the way the product builds its own, so neither side is hand-tuned.

    .venv/bin/python benchmarks/plan_schema_libs.py [--runs 9]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
import timeit
import tomllib
from typing import Any

SHAPE_SOURCE = r"""
from typing import Literal
SHAPE = {
    "server": {
        "model_path": str, "speculative_algorithm": Literal["EAGLE", "EAGLE3", "NEXTN"],
        "speculative_num_steps": int, "speculative_eagle_topk": int,
        "speculative_num_draft_tokens": int, "mem_fraction_static": float,
        "cuda_graph_max_bs": int, "max_running_requests": int, "tp_size": int,
        "port": int, "host": str, "context_length": int, "dtype": str,
        "trust_remote_code": bool, "extra_args": list[str], "env": dict[str, str],
    },
    "sweep": {
        "strategy": Literal["grid", "boundary", "plateau", "optimize", "staged", "per_level"],
        "axis": str, "axes": dict[str, list[int | float | str | bool]],
        "min_gain_pct": float, "on_crash": Literal["pause", "auto"], "max_trials": int,
        "max_wall_minutes": float, "max_wall_s": float, "load_timeout": float,
        "skip_infeasible": bool, "min_kv_tokens": int, "patience": int, "seed": int,
        "prune": bool, "prune_margin_pct": float, "baseline": bool,
    },
    "bench": {
        "ladder": list[int], "requests_per_level": int, "input_len": int, "output_len": int,
        "duration_s": float, "temperature": float, "flush_cache": bool, "dataset": str,
        "percentiles": list[float], "placement": Literal["forward", "direct", "remote"],
        "url": str, "headers": dict[str, str],
    },
    "service": {"kind": Literal["systemd", "process", "docker", "slurm"], "unit": str},
    "host": {"transport": Literal["ssh", "local"], "alias": str},
}
"""

DECLARE = {
    "msgspec": SHAPE_SOURCE
    + r"""
import msgspec
def _struct(name, keys):
    return msgspec.defstruct(name, [(k, t | None, None) for k, t in keys.items()],
                             forbid_unknown_fields=True, kw_only=True)
_tables = {t: _struct(t.title(), keys) for t, keys in SHAPE.items()}
_fields = [("name", str, ""), *((t, s | None, None) for t, s in _tables.items())]
Plan = msgspec.defstruct("Plan", _fields, forbid_unknown_fields=True, kw_only=True)
def check(doc):
    return msgspec.convert(doc, Plan)
""",
    "pydantic": SHAPE_SOURCE
    + r"""
from pydantic import ConfigDict, create_model
_strict = ConfigDict(extra="forbid", strict=True)
def _model(name, keys):
    return create_model(name, __config__=_strict, **{k: (t | None, None) for k, t in keys.items()})
_tables = {t: _model(t.title(), keys) for t, keys in SHAPE.items()}
Plan = create_model("Plan", __config__=_strict, name=(str, ""),
                    **{t: (m | None, None) for t, m in _tables.items()})
def check(doc):
    return Plan.model_validate(doc)
""",
}

GOOD_PLAN = """
name = "steps sweep"
[host]
transport = "ssh"
alias = "gpu-box"
[service]
kind = "systemd"
unit = "sglang.service"
[server]
model_path = "Qwen/Qwen3.5-122B-A10B"
speculative_algorithm = "EAGLE3"
speculative_num_steps = 3
speculative_eagle_topk = 1
mem_fraction_static = 0.85
tp_size = 4
[sweep]
strategy = "per_level"
on_crash = "pause"
max_trials = 20
max_wall_minutes = 240
load_timeout = 900
[sweep.axes]
speculative_num_steps = [1, 2, 3, 4, 5, 10]
speculative_eagle_topk = [1]
[bench]
ladder = [1, 4, 16, 32, 64]
placement = "forward"
"""

BAD_PLANS: dict[str, str] = {
    "misspelt table key": '[sweep]\nmax_trails = 20\n[server]\nmodel_path = "m"\n',
    "float for an integer": "[sweep]\nmax_trials = 2.5\n",
    "quoted number": '[sweep]\nmax_trials = "20"\n',
    "unknown choice": '[sweep]\nstrategy = "bogus"\n',
    "bad list item": "[bench]\nladder = [1, 4, true]\n",
    "two mistakes": '[sweep]\nmax_trials = "x"\n[bench]\nladder = 4\n',
}


def _child(lib: str, mode: str, runs: int) -> None:
    """In a fresh interpreter: declare (and for ``validate`` time the check)."""
    t0 = time.perf_counter()
    scope: dict[str, Any] = {"__name__": f"plan_schema_{lib}"}
    exec(compile(DECLARE[lib], lib, "exec"), scope)
    declared = time.perf_counter() - t0
    if mode == "declare":
        print(f"{declared * 1e3:.3f}")
        return
    check = scope["check"]
    if mode == "validate":
        doc = tomllib.loads(GOOD_PLAN)
        check(doc)
        n = 2000
        per = min(timeit.repeat(lambda: check(doc), number=n, repeat=max(3, runs))) / n
        print(f"{per * 1e6:.2f}")
        return
    for title, text in BAD_PLANS.items():
        try:
            check(tomllib.loads(text))
        except Exception as exc:
            message = " | ".join(str(exc).splitlines())
            print(f"{title}\t{type(exc).__name__}: {message}")
        else:
            print(f"{title}\taccepted")


def _run(args: list[str]) -> tuple[float, str]:
    t0 = time.perf_counter()
    out = subprocess.run(
        [sys.executable, *args], capture_output=True, text=True, check=True, timeout=120
    ).stdout
    return time.perf_counter() - t0, out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--child", nargs=2, metavar=("LIB", "MODE"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        _child(args.child[0], args.child[1], args.runs)
        return
    libs = list(DECLARE)
    bare: list[float] = []
    startup: dict[str, list[float]] = {lib: [] for lib in libs}
    declare: dict[str, list[float]] = {lib: [] for lib in libs}
    _run(["-c", "pass"])  # warm the file cache and bytecode for every side alike
    for lib in libs:
        _run([__file__, "--child", lib, "declare"])
    for _ in range(args.runs):  # in turns, so a burst of load touches every side alike
        bare.append(_run(["-c", "pass"])[0])
        for lib in libs:
            wall, out = _run([__file__, "--child", lib, "declare"])
            startup[lib].append(wall)
            declare[lib].append(float(out))
    base = statistics.median(bare)
    # the harness itself (this file's imports) counted once for both: subtract a bare child
    harness = statistics.median(
        _run(["-c", "import argparse, statistics, subprocess, timeit, tomllib"])[0]
        for _ in range(args.runs)
    )
    print(
        f"bare interpreter: {base * 1e3:.1f} ms, harness imports: {(harness - base) * 1e3:.1f} ms"
        f" (median of {args.runs})"
    )
    print(f"{'':22}" + "".join(f"{lib:>14}" for lib in libs))
    row = "start-up cost (ms)"
    print(
        f"{row:22}"
        + "".join(f"{(statistics.median(startup[lib]) - harness) * 1e3:14.1f}" for lib in libs)
    )
    row = "  of which declare"
    print(f"{row:22}" + "".join(f"{statistics.median(declare[lib]):14.1f}" for lib in libs))
    validate = {
        lib: float(_run([__file__, "--runs", str(args.runs), "--child", lib, "validate"])[1])
        for lib in libs
    }
    row = "validate a plan (µs)"
    print(f"{row:22}" + "".join(f"{validate[lib]:14.2f}" for lib in libs))
    ratio = statistics.median(startup["pydantic"]) - harness
    ratio /= max(statistics.median(startup["msgspec"]) - harness, 1e-9)
    print(
        f"pydantic / msgspec: start-up {ratio:.1f}x, validation "
        f"{validate['pydantic'] / validate['msgspec']:.1f}x"
    )
    print("\nerror texts for the same bad plans:")
    for lib in libs:
        for line in _run([__file__, "--child", lib, "errors"])[1].splitlines():
            title, text = line.split("\t", 1)
            print(f"  [{lib}] {title}: {text}")


if __name__ == "__main__":
    main()
