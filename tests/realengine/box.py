"""The llama.cpp box the end-to-end tests share: a hand-written ``llama-server`` unit in the
real systemd container, its host profile, the seed's plan built from ``specconsole import``,
and the checks every deploy must pass (the user's other unit lines byte-identical).

Why one place: the headless workflow and the console's pilot test run the same plan against
the same unit; the unit is what a user of llama.cpp writes (short flags, a draft with
``--spec-type``, ``-fit off``, an ``Environment=`` line, limits, ``Restart=no``).
"""

from __future__ import annotations

import contextlib
import io
import re
import shlex
import tomllib
from pathlib import Path

import tomli_w

from specconsole.cli import main as cli_main
from tests.fixtures.llamacpp import LlamaCppBuild
from tests.fixtures.nspawn import NspawnBox

UNIT = "llama-box.service"
UNIT_PATH = f"/etc/systemd/system/{UNIT}"
BACKUPS = "/var/backups/specconsole"
N_MAX = [1, 2, 4, 8, 16]
CRASH_CTX = 20_000_000
"""2e7 tokens x 23,040 B of f16 KV = 460 GB: refused by malloc on any test box in ~0.6 s."""
SWEPT = re.compile(r"--spec-draft-n-max (\d+) -c (\d+)")


def cli(*argv: str) -> tuple[int, str]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        code = cli_main(list(argv))
    return code, out.getvalue()


def users_unit(build: LlamaCppBuild, port: int) -> str:
    """A llama-server unit as a user writes it (one thread: a shared 2-core box)."""
    return (
        "[Unit]\n"
        "Description=llama.cpp server with a draft (hand-written)\n"
        "After=network.target\n"
        "\n"
        "[Service]\n"
        "Environment=LLAMA_LOG_COLORS=off\n"
        f"ExecStart={build.server} -m {build.target} \\\n"
        f"    -md {build.draft('req_Q4_0')} --spec-type draft-simple \\\n"
        "    --spec-draft-n-max 4 -c 2048 -np 2 -t 1 -fit off \\\n"
        f"    --metrics --host 127.0.0.1 --port {port}\n"
        "Restart=no\n"
        "LimitNOFILE=65536\n"
        "TimeoutStopSec=15\n"
        "\n"
        "[Install]\n"
        "WantedBy=multi-user.target\n"
    )


def install(box: NspawnBox, text: str) -> None:
    box.ssh(
        f"printf %s {shlex.quote(text)} > {UNIT_PATH} && rm -rf {BACKUPS} && "
        f"systemctl daemon-reload && systemctl start {UNIT}"
    )


def profile_toml(box: NspawnBox, unit: str = UNIT) -> str:
    """The host profile reaching ``box`` over its sshd as root, its service the ``unit``."""
    host = {
        "transport": "ssh",
        "hostname": box.host,
        "port": box.port,
        "user": "root",
        "identity_files": [str(box.client_key)],
        "known_hosts": str(box.known_hosts),
        "ssh_config": "",
        "use_agent": False,
        "reconnect_max_delay": 1,
    }
    return tomli_w.dumps({"host": host, "service": {"kind": "systemd", "unit": unit}})


def seed_plan(imported: str) -> str:
    """The seed's workflow for llama.cpp: ``spec_draft_n_max`` over 1..16 at the unit's
    context, then a context the host cannot hold (trial 6, the budget's last): it crashes
    while loading, ``r`` resumes, and ``finally = "best"`` leaves the best trial serving."""
    document = tomllib.loads(imported)
    document["sweep"] = {
        "strategy": "grid",
        "on_crash": "pause",
        "load_timeout": 120,
        "finally": "best",
        "max_trials": len(N_MAX) + 1,
        "axes": {"ctx_size": [2048, CRASH_CTX], "spec_draft_n_max": N_MAX},
    }
    document["bench"] = {
        "ladder": [1, 2],
        "input_len": 32,
        "output_len": 16,
        "requests_per_level": 2,
        "warmup_requests": 0,
        "stall_timeout_s": 120,
    }
    return tomli_w.dumps(document)


def versions(box: NspawnBox, unit: str = UNIT) -> list[str]:
    """Every deployed version of ``unit``, oldest first (the backups each deploy left), then
    the unit as it is now."""
    names = box.ssh(f"ls {BACKUPS} 2>/dev/null | grep '^{unit}\\.' | sort; true").split()
    path = f"/etc/systemd/system/{unit}"
    return [box.ssh(f"cat {BACKUPS}/{name}") for name in names] + [box.ssh(f"cat {path}")]


def others(text: str) -> list[str]:
    """The unit's lines a deploy must keep byte-identical: all but the swept one."""
    return [line for line in text.splitlines(keepends=True) if not SWEPT.search(line)]


def running(box: NspawnBox) -> tuple[int, int] | None:
    """(n_max, ctx) of the llama-server the unit runs now."""
    pid = box.ssh(f"systemctl show -p MainPID --value {UNIT}").strip()
    cmdline = box.ssh(f"tr '\\0' ' ' < /proc/{pid}/cmdline 2>/dev/null; true")
    found = re.search(r"--spec-draft-n-max (\d+).* -c (\d+)", cmdline)
    return (int(found[1]), int(found[2])) if found else None


def health(box: NspawnBox, port: int) -> int:
    """``/health``'s status seen on the box (0: no answer)."""
    probe = (
        "import urllib.request\n"
        "try:\n"
        f"    print(urllib.request.urlopen('http://127.0.0.1:{port}/health', timeout=5).status)\n"
        "except Exception:\n"
        "    print(0)\n"
    )
    return int(box.ssh(f"python3 -c {shlex.quote(probe)}").split()[-1])


def session_dir(parent: Path) -> Path:
    (found,) = parent.iterdir()
    return found
