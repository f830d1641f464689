"""specconsole against a real llama-server (the test bed of docs/llamacpp-testbed.md).

Prints:

* crash to CRASHED: the controller deploys ``-c 20000000 -fit off`` (a KV cache no host
  holds) through the plain-process backend; the time from llama-server writing its fatal
  line (``exiting due to model loading error``, spotted by polling the run's log file every
  5 ms, independently of the controller) to the controller publishing CRASHED with the cause
  classified (target ≤ 0.5 s; the console's banner shows that snapshot); and, when the
  systemd container can run, the seed's case: the same crash of a llama-server unit over
  the real sshd, from the journal's stamp of the fatal line to the detection;
* the load generator's output tokens against the server's own counter
  (``llamacpp:tokens_predicted_total`` deltas), per level (target: equal), and its acceptance
  against the counters' (drafts, accepted);
* single-request decode tok/s: the load generator's against llama.cpp's own figures for the
  same configuration — ``llama-bench`` (``tg``: generation only, ``-t 1``) for the target
  alone, and the server's own ``tokens_predicted / tokens_predicted_seconds`` deltas (what
  its ``timings`` report) for the target alone and with the req_Q4_0 draft.

Every server gets ``-t 1``; run it on a quiet machine (llama.cpp busy-waits).

Then the same for the real vLLM (benchmarks/real_vllm.py: crash line → CRASHED per crash
recipe, output tokens against ``vllm:generation_tokens_total`` per level, acceptance length
against the server's own ``SpecDecoding metrics`` lines).
Run: ``.venv/bin/python benchmarks/real_engine.py [llamacpp|vllm]`` (both without an argument).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.fixtures.llamacpp import LlamaCppBuild, find_build, start  # noqa: E402
from tests.fixtures.nspawn import NspawnBox  # noqa: E402

from specconsole.bench.loadgen import run_ladder  # noqa: E402
from specconsole.controller.localplan import resolve_local_placeholders  # noqa: E402
from specconsole.controller.wiring import open_ports  # noqa: E402
from specconsole.core.engine.registry import get_engine  # noqa: E402
from specconsole.core.machine import events as ev  # noqa: E402
from specconsole.core.machine.state import ControllerState, Phase  # noqa: E402
from specconsole.core.measure.acceptance import parse_prometheus  # noqa: E402
from specconsole.core.plans.parse import loads_plan  # noqa: E402
from specconsole.core.ports import BenchApi, BenchSpec  # noqa: E402

RUNS = 3
FATAL = b"exiting due to model loading error"
COUNTERS = get_engine("llamacpp").endpoints.spec_counters
assert COUNTERS is not None


def crash_plan(build: LlamaCppBuild, run_dir: Path) -> str:
    return f"""
[host]
transport = "local"
[service]
kind = "process"
run_dir = "{run_dir}"
stop_timeout = 5
[server]
engine = "llamacpp"
launcher = "{build.server}"
model_path = "{build.target}"
threads = 1
metrics = true
fit = "off"
port = "auto"
[sweep]
on_crash = "pause"
[sweep.axes]
ctx_size = [20000000]
"""


def watch_file(
    run_dir: Path, seen: list[float], stop: threading.Event, needle: bytes = FATAL
) -> None:
    """Poll the run's log every 5 ms; the time ``needle`` (the fatal line) was first there."""
    while not stop.is_set() and not seen:
        for log in run_dir.glob("**/log"):
            try:
                if needle in log.read_bytes():
                    seen.append(time.time())
                    return
            except OSError:
                pass
        time.sleep(0.005)


async def crash_latency(
    plan_text: str, run_dir: Path, needle: bytes, timeout: float = 120.0
) -> tuple[float, str]:
    """Run a one-trial plan whose server dies (plain-process backend, ``run_dir``): (seconds
    from ``needle`` appearing in its log to the controller publishing CRASHED, the cause)."""
    plan = resolve_local_placeholders(loads_plan(plan_text))
    controller = open_ports(plan.profile).controller(
        ControllerState(plan=plan, policy=plan.on_crash)
    )
    detected: list[tuple[float, str]] = []

    def on(state: ControllerState, event: ev.Event) -> None:
        if state.phase is Phase.CRASHED and not detected and state.trial is not None:
            cause = state.trial.crash.cause if state.trial.crash else "?"
            detected.append((time.time(), cause))
        if state.phase is Phase.AWAITING_DECISION:
            controller.send(ev.Quit(stop_server=True))

    controller.subscribe(on)
    seen: list[float] = []
    stop = threading.Event()
    poller = threading.Thread(target=watch_file, args=(run_dir, seen, stop, needle), daemon=True)
    poller.start()
    controller.send(ev.StartSweep())
    try:
        await asyncio.wait_for(controller.run(), timeout)
    finally:
        stop.set()
        poller.join(2)
    if not (seen and detected):
        raise SystemExit(f"the crash was not observed (log: {seen}, controller: {detected})")
    return detected[0][0] - seen[0], detected[0][1]


async def crash_run(build: LlamaCppBuild) -> tuple[float, str]:
    with tempfile.TemporaryDirectory() as tmp:
        run_dir = Path(tmp) / "run"
        return await crash_latency(crash_plan(build, run_dir), run_dir, FATAL)


@contextlib.contextmanager
def systemd_box(tmp: Path) -> Iterator[NspawnBox | None]:
    """The real systemd container over the real sshd, stopped on the way out; None (said so)
    where it cannot run."""
    from tests.fixtures.nspawn import NspawnUnavailable, start_box

    try:
        box = start_box(tmp / "nspawn")
    except (NspawnUnavailable, OSError, subprocess.SubprocessError) as exc:
        print(f"(no systemd container: {exc})")
        yield None
        return
    try:
        yield box
    finally:
        box.stop()


def boxed_crash(box: NspawnBox, folder: Path, profile: str, sweep: str, unit: str) -> float:
    """One crashing trial of the installed ``unit`` the seed's way: ``specconsole import`` of
    ``profile``, the plan's ``[sweep]`` (``sweep``: its keys and axes) paused on the crash, a
    headless sweep; the time from the journal's stamp of the fatal line to the controller's
    detection (``CrashInfo.detected_at - source_time``). Stops the unit."""
    from tests.realengine.box import cli

    folder.mkdir()
    (folder / "box.toml").write_text(profile)
    code, text = cli("import", str(folder / "box.toml"), "-o", str(folder / "p.toml"))
    assert code == 0, text
    plan = folder / "p.toml"
    plan.write_text(
        plan.read_text()
        + f'\n[sweep]\non_crash = "pause"\n{sweep}'
        + "[bench]\nladder = [1]\nrequests_per_level = 1\n"
    )
    code, text = cli("sweep", str(plan), "--headless", "--session", str(folder / "s"))
    assert code == 3, text
    (session,) = (folder / "s").iterdir()
    crash = json.loads((session / "trials.jsonl").read_text())["crash"]
    box.ssh(f"systemctl stop {unit}; true", timeout=60)
    return float(crash["detected_at"] - crash["source_time"])


def box_crashes(build: LlamaCppBuild) -> list[float]:
    """The same crash as a systemd unit in the real container over the real sshd (the seed's
    workflow): the time from the journal's stamp of the fatal line to the controller's
    detection, per run; [] without the container."""
    from tests.realengine.box import UNIT, install, profile_toml, users_unit

    sweep = "[sweep.axes]\nctx_size = [20000000]\n"
    with tempfile.TemporaryDirectory() as tmp, systemd_box(Path(tmp)) as box:
        if box is None:
            return []
        out: list[float] = []
        for run in range(RUNS):
            install(box, users_unit(build, 18600 + run))
            folder = Path(tmp) / f"run{run}"
            out.append(boxed_crash(box, folder, profile_toml(box), sweep, UNIT))
        return out


def server_rate(before: str, after: str) -> float:
    """The server's own decode tok/s over an interval: tokens / seconds it counted."""
    a, b = parse_prometheus(before), parse_prometheus(after)

    def d(name: str) -> float:
        return sum(b.get(name, {}).values()) - sum(a.get(name, {}).values())

    seconds = d("llamacpp:tokens_predicted_seconds_total")
    return d("llamacpp:tokens_predicted_total") / seconds if seconds > 0 else 0.0


def metrics(url: str) -> str:
    import urllib.request

    with urllib.request.urlopen(f"{url}/metrics", timeout=10) as response:
        return response.read().decode()


def measure(build: LlamaCppBuild, flags: tuple[str, ...], ladder: tuple[int, ...]) -> list:
    """The ladder against a fresh server with ``flags``: per level (c, counted tokens, the
    server's tokens, drafts, accepted, our decode tok/s, the server's decode tok/s)."""
    with tempfile.TemporaryDirectory() as tmp:
        server = start(build, Path(tmp) / "server.log", *flags, "--parallel", str(max(ladder)))
        try:
            rows = []
            for c in ladder:
                spec = BenchSpec(
                    ladder=(c,),
                    requests_per_level=max(4, 2 * c),
                    warmup_requests=1,
                    input_len=64,
                    output_len=64,
                    api=BenchApi.CHAT,
                    spec_counters=COUNTERS,
                )
                before = metrics(server.url)
                result = asyncio.run(run_ladder(spec, server.url))
                after = metrics(server.url)
                (level,) = result.levels
                counters = level.counters
                assert counters is not None
                rows.append(
                    (
                        c,
                        level.total_output_tokens,
                        counters.output_tokens,
                        counters.drafts,
                        counters.accepted,
                        level.mean_decode_tok_s,
                        server_rate(before, after),
                    )
                )
            return rows
        finally:
            server.stop()


def llama_bench(build: LlamaCppBuild) -> float:
    """``llama-bench`` generation tok/s for the target alone (``tg64``, ``-t 1``)."""
    done = subprocess.run(
        [str(build.bin_dir / "llama-bench"), "-m", str(build.target), "-p", "0", "-n", "64",
         "-t", "1", "-r", "3", "-o", "json"],
        capture_output=True, text=True, timeout=600, check=True,
    )  # fmt: skip
    (test,) = json.loads(done.stdout)
    return float(test["avg_ts"])


def main() -> None:
    which = sys.argv[1:2] or ["both"]
    if which[0] in ("both", "llamacpp"):
        llamacpp_main()
    if which[0] in ("both", "vllm"):
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        from real_vllm import main as vllm_main

        vllm_main()


def llamacpp_main() -> None:
    build = find_build()
    runs = [asyncio.run(crash_run(build)) for _ in range(RUNS)]
    latencies = [max(0.0, latency) for latency, _cause in runs]
    print(
        f"crash -> CRASHED (fatal line written -> controller published, cause "
        f"{runs[0][1]}), {RUNS} runs: median {statistics.median(latencies) * 1000:.0f} ms, "
        f"max {max(latencies) * 1000:.0f} ms (resolution 5 ms; target <= 500 ms)"
    )
    boxed = box_crashes(build)
    if boxed:
        print(
            f"crash -> CRASHED in the systemd container over sshd (journal stamp of the fatal "
            f"line -> detection), {len(boxed)} runs: median "
            f"{statistics.median(boxed) * 1000:.0f} ms, max {max(boxed) * 1000:.0f} ms "
            "(target <= 500 ms)"
        )
    draft = ("-md", str(build.draft("req_Q4_0")), "--spec-type", "draft-simple",
             "--spec-draft-n-max", "4")  # fmt: skip
    for name, flags in (("target alone", ()), ("req_Q4_0 draft, n_max 4", draft)):
        print(f"\n{name}: c | tokens counted / server counter | drafts, accepted | "
              "decode tok/s ours / server's own")  # fmt: skip
        for c, counted, server, drafts, accepted, ours, theirs in measure(build, flags, (1, 2, 4)):
            same = "equal" if counted == server else "DIFFERENT"
            print(
                f"  c={c}: {counted} / {server} ({same}) | {drafts}, {accepted} | "
                f"{ours:.1f} / {theirs:.1f}"
            )
    print(f"\nllama-bench tg64 -t 1 (target alone): {llama_bench(build):.1f} tok/s")


if __name__ == "__main__":
    main()
