"""The vLLM box the end-to-end tests share: a hand-written ``vllm serve`` unit in the real
systemd container (the vLLM bed's venv and models bind-mounted read-only), its host profile,
the plans built from ``specconsole import``, and the checks of a trial's acceptance against
the server's own counters and log.

Why one place: the systemd sweep and the plain-process sweeps drive the same server with the
same workload — SmolLM2-135M on the CPU, n-gram speculation, prompts that repeat themselves
(examples/vllm-cpu-prompts.jsonl) so every level drafts — and check its figures the same way.
"""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

from tests.fixtures.nspawn import NspawnBox
from tests.fixtures.vllm import BASE_FLAGS, SERVED_NAME, SERVER_ENV, VllmBed
from tests.realengine.box import BACKUPS
from tests.realengine.box import profile_toml as box_profile

UNIT = "vllm-box.service"
UNIT_PATH = f"/etc/systemd/system/{UNIT}"
REPO = Path(__file__).resolve().parents[2]
PROMPTS = REPO / "examples" / "vllm-cpu-prompts.jsonl"
STATS_INTERVAL_S = "1"
"""``VLLM_LOG_STATS_INTERVAL``: vLLM's statistics and ``SpecDecoding metrics`` lines every
second while requests run (its default is 10 s)."""
LONG_CONTEXT = 65536
"""More than the bed's 1 GiB KV cache holds (46,592 tokens): with
``VLLM_ALLOW_LONG_MAX_MODEL_LEN=1`` (the model's own limit is 8,192) vLLM loads, then refuses
to start because one request of that length does not fit — the seed's crash in load."""
SPEC_LINE = re.compile(r"SpecDecoding metrics: .*Accepted: (\d+) tokens, Drafted: (\d+) tokens")
API_PID = re.compile(r"\(APIServer pid=(\d+)\)")


def unit_env() -> dict[str, str]:
    """The bed's environment, plus the statistics every second and the long context allowed."""
    return {
        **SERVER_ENV,
        "VLLM_LOG_STATS_INTERVAL": STATS_INTERVAL_S,
        "VLLM_ALLOW_LONG_MAX_MODEL_LEN": "1",
    }


STOP_DRAIN_S = 2
"""The unit's ``ExecStop=/bin/sleep``: a stop (every deploy restarts the unit) gives the server
two statistics intervals before systemd's SIGTERM, so its log has the figures of the interval
its last request ended in (vLLM logs an interval at its end, and not when it is stopped)."""


def users_unit(bed: VllmBed, port: int, k: int = 4) -> str:
    """A ``vllm serve`` unit as a user writes it: n-gram speculation in its JSON, the CPU
    backend's environment, a drain before the stop signal, no restarts."""
    spec = json.dumps({"method": "ngram", "num_speculative_tokens": k})
    env = "".join(f"Environment={key}={value}\n" for key, value in unit_env().items())
    return (
        "[Unit]\n"
        "Description=vLLM on the CPU with n-gram speculation (hand-written)\n"
        "After=network.target\n"
        "\n"
        "[Service]\n"
        f"{env}"
        f"ExecStart={bed.vllm} serve {bed.target} \\\n"
        f"    --speculative-config '{spec}' \\\n"
        f"    --max-model-len 2048 {' '.join(BASE_FLAGS)} --served-model-name {SERVED_NAME} \\\n"
        f"    --host 127.0.0.1 --port {port}\n"
        f"ExecStop=/bin/sleep {STOP_DRAIN_S}\n"
        "Restart=no\n"
        "TimeoutStopSec=30\n"
        "\n"
        "[Install]\n"
        "WantedBy=multi-user.target\n"
    )


def install(box: NspawnBox, text: str) -> None:
    """Write the unit, forget earlier backups, daemon-reload (the sweep starts it)."""
    box.ssh(
        f"printf %s {shlex.quote(text)} > {UNIT_PATH} && rm -rf {BACKUPS} && "
        "systemctl daemon-reload"
    )


def profile_toml(box: NspawnBox) -> str:
    """The host profile reaching the container, its service :data:`UNIT`."""
    return box_profile(box, UNIT)


BENCH = {
    "ladder": [1, 2],
    "api": "completions",
    "dataset": f"jsonl:{PROMPTS}",
    "output_len": 32,
    "requests_per_level": 2,
    "warmup_requests": 0,
    "stall_timeout_s": 180,
}
"""Two levels of two requests each, 32 tokens out, prompts that repeat themselves (every
level drafts): enough for exact counter deltas, short on a shared 2-core box."""


def local_plan(bed: VllmBed, run_dir: Path, env: dict[str, str], server: dict, sweep: dict) -> dict:
    """A plan (as a dict) running the bed's ``vllm serve`` on this machine through the
    plain-process backend (``run_dir``): the bed's flags, ``server``'s keys over them, ``env``
    as the server's whole environment, ``sweep``'s keys, :data:`BENCH`."""
    return {
        "name": "vLLM on this machine",
        "host": {"transport": "local"},
        "service": {"kind": "process", "run_dir": str(run_dir), "stop_timeout": 20},
        "server": {
            "engine": "vllm",
            "launcher": f"{bed.vllm} serve",
            "model_path": str(bed.target),
            "max_model_len": 2048,
            "host": "127.0.0.1",
            "port": "auto",
            "extra_args": [*BASE_FLAGS, "--served-model-name", SERVED_NAME],
            "env": env,
            **server,
        },
        "sweep": {"strategy": "grid", "load_timeout": 600, "finally": "stop", **sweep},
        "bench": BENCH,
    }


STATS_LINE = "] Engine 000: "
"""vLLM's periodic statistics line (``v1/metrics/loggers.py``): written at each tick of
``VLLM_LOG_STATS_INTERVAL`` after an interval with traffic, followed by that interval's
``SpecDecoding metrics`` line when it drafted."""
METRICS_READ = '"GET /metrics HTTP/'
"""uvicorn's access line for a ``/metrics`` read (the load generator's counter snapshots)."""


def server_lines(box: NspawnBox, pid: int) -> list[str]:
    """Everything one life of the unit's server wrote to the journal, in the order it wrote
    it: the entries of its main process ``pid`` (the API server; its engine core writes
    through the same stream)."""
    return box.ssh(f"journalctl -u {UNIT} _PID={pid} -o cat --no-pager", timeout=60).splitlines()


def spec_totals(lines: list[str]) -> tuple[int, int]:
    """(accepted, drafted) summed over the ``SpecDecoding metrics`` lines among ``lines``."""
    found = [(int(a), int(d)) for line in lines for a, d in SPEC_LINE.findall(line)]
    return sum(a for a, _d in found), sum(d for _a, d in found)


def logged_past_last_read(lines: list[str]) -> bool:
    """Whether the server's statistics lines account for every draft it had counted at its
    last ``/metrics`` read: one of its statistics lines follows that read.

    vLLM logs an interval's figures at the interval's end, never when it stops: a server
    stopped (the next trial's deploy restarts the unit) before the tick after its last
    request leaves that request's last drafts out of its log, while its counters — read
    right after the level — have them. Both lines are written by the API server's one event
    loop, which also records every step's statistics, so their order in its output is the
    order it did them in."""
    reads = [i for i, line in enumerate(lines) if METRICS_READ in line]
    return bool(reads) and any(STATS_LINE in line for line in lines[reads[-1] + 1 :])


def api_pid(log: str) -> int:
    """The API server's PID a trial's log names."""
    found = API_PID.search(log)
    assert found, log[:2000]
    return int(found[1])


def check_acceptance(record: dict) -> dict[str, int]:
    """Every level's acceptance is the counters' deltas exactly (length, rate, per position),
    and the tokens the server counted are the load generator's; the trial's totals."""
    bench = {lv["max_concurrency"]: lv for lv in record["bench"]["levels"]}
    totals = {"drafts": 0, "draft_tokens": 0, "accepted": 0}
    for level in record["levels"]:
        counters = level["spec_counters"]
        assert counters["drafts"] > 0, level
        assert level["accept_length"] == 1 + counters["accepted"] / counters["drafts"]
        assert counters["acceptance_rate"] == counters["accepted"] / counters["draft_tokens"]
        assert sum(counters["per_position"]) == counters["accepted"]
        assert counters["output_tokens"] == bench[level["concurrency"]]["total_output_tokens"]
        for key in totals:
            totals[key] += counters[key]
    return totals
