"""Issue 19's done-when, end to end on a real systemd (nspawn) over the real sshd: a
hand-written unit (Environment, EnvironmentFile, LimitNOFILE, a drop-in) already serving,
``specconsole import`` of it, ``sweep --dry-run`` (changes nothing), then two 3-trial headless
sweeps — ``finally = "original"`` and ``finally = "best"`` — with a planted secret.

After every deploy every line the configuration does not manage is byte-identical to the
user's (each deployed version is read back from the 0600 backups the deploys leave); the diff
each trial records and prints is ``diff -u`` of the two files on the box (values redacted, as
everywhere); the planted secret is in no session file, no headless output and no file on the
box but the 0600 EnvironmentFile.
"""

from __future__ import annotations

import contextlib
import io
import json
import re
import shlex
import tomllib
from pathlib import Path

import pytest
import tomli_w

from specconsole.cli import main as cli_main
from specconsole.core.config.secrets import redact_text
from specconsole.core.launch.systemd import parse_unit
from specconsole.present.runlog import deploy_lines
from tests.fixtures.nspawn import REPO, NspawnBox
from tests.fixtures.sshd import free_port
from tests.remote.test_systemd_edit import DROP_IN, hand_written_unit, install_hand_written

pytestmark = [pytest.mark.systemd, pytest.mark.slow]

SECRET = "hf_planted_box_sweep_91aa"
UNIT = "specconsole-sweep.service"
UNIT_PATH = f"/etc/systemd/system/{UNIT}"
BACKUPS = "/var/backups/specconsole"
ENV_FILE = f"{BACKUPS}/{UNIT}-env"
"""Where the systemd backend keeps the unit's secret values (``SystemdBackend.env_file``)."""
STEPS = [2, 4, 5]
FLAG = re.compile(r"--speculative-num-steps (\d+)")
DRAFT = re.compile(r"--speculative-num-draft-tokens (\d+)")
"""Normalised with the steps (topk 1: steps + 1), so managed too."""


def cli(*argv: str) -> tuple[int, str]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        code = cli_main(list(argv))
    return code, out.getvalue()


def users_unit(port: int) -> str:
    """The hand-written unit of test_systemd_edit with its EAGLE-3 draft model named (a
    sweep validates every configuration before the first deploy). User root: the
    bind-mounted Python lives under /root (0700)."""
    return hand_written_unit(port, "root").replace(
        "    --tp-size 4 \\\n",
        "    --speculative-draft-model-path specconsole/Qwen3.5-122B-A10B-EAGLE3 \\\n"
        "    --tp-size 4 \\\n",
    )


def profile_toml(box: NspawnBox, user: str = "root") -> str:
    host = {
        "transport": "ssh",
        "hostname": box.host,
        "port": box.port,
        "user": user,
        "identity_files": [str(box.client_key)],
        "known_hosts": str(box.known_hosts),
        "ssh_config": "",
        "use_agent": False,
        "reconnect_max_delay": 1,
    }
    return tomli_w.dumps({"host": host, "service": {"kind": "systemd", "unit": UNIT}})


def sweep_plan(imported: str, final: str) -> str:
    document = tomllib.loads(imported)
    document["server"]["env"] = {**document["server"].get("env", {}), "HF_TOKEN": SECRET}
    document["sweep"] = {
        "strategy": "grid",
        "on_crash": "auto",
        "load_timeout": 60,
        "finally": final,
        "axes": {"speculative_num_steps": STEPS},
    }
    document["bench"] = {
        "ladder": [1, 4],
        "input_len": 64,
        "output_len": 16,
        "requests_per_level": 4,
        "warmup_requests": 0,
    }
    return tomli_w.dumps(document)


def non_managed(text: str) -> list[str]:
    """The unit's lines a deploy must keep: all but the swept flags and the env-file line."""
    return [
        line
        for line in text.splitlines(keepends=True)
        if not FLAG.search(line)
        and not DRAFT.search(line)
        and not line.startswith("EnvironmentFile=/var/backups")
    ]


def hunks(diff: str) -> list[str]:
    """A unified diff without its two file-name headers."""
    return [ln for ln in diff.splitlines() if not ln.startswith(("---", "+++"))]


def versions_on_box(box: NspawnBox) -> list[str]:
    """Every version of the unit, oldest first: the backups each deploy left, then the unit."""
    names = box.ssh(f"ls {BACKUPS} | grep '^{UNIT}\\.' | sort").split()
    return [f"{BACKUPS}/{name}" for name in names] + [UNIT_PATH]


def box_files_with_secret(box: NspawnBox) -> list[str]:
    """Every file on the box's own file systems holding the secret (-xdev: the read-only
    bind mounts of the checkout and its Python are not the box's; this file names it)."""
    found = box.ssh(
        "find /etc /var /tmp /home /root /run /srv /opt /usr/local -xdev -type f -print0 "
        f"2>/dev/null | xargs -0 grep -l -- {SECRET} 2>/dev/null; true",
        timeout=120,
    ).split()
    return [h for h in found if not Path(h).is_relative_to(REPO)]


def health(box: NspawnBox, port: int) -> int:
    """``/health``'s status code as seen on the box itself (0: no answer)."""
    probe = (
        "import urllib.request\n"
        "try:\n"
        f"    print(urllib.request.urlopen('http://127.0.0.1:{port}/health', timeout=5).status)\n"
        "except Exception:\n"
        "    print(0)\n"
    )
    return int(box.ssh(f"python3 -c {shlex.quote(probe)}").split()[-1])


def running_steps(box: NspawnBox) -> int | None:
    pid = box.ssh(f"systemctl show -p MainPID --value {UNIT}").strip()
    cmdline = box.ssh(f"tr '\\0' ' ' < /proc/{pid}/cmdline 2>/dev/null; true")
    found = FLAG.search(cmdline)
    return int(found.group(1)) if found else None


def check_every_deploy(box: NspawnBox, original: str, session: Path, shown: str) -> list[str]:
    """Assert the byte-for-byte rule and the diffs for each deploy; returns the versions."""
    paths = versions_on_box(box)
    texts = [box.ssh(f"cat {p}") for p in paths]
    assert texts[0] == original
    names = ["HF_HOME", "OMP_NUM_THREADS", "HF_TOKEN", "NCCL_DEBUG"]
    (trials,) = session.rglob("trials.jsonl")  # --session names the parent of the folder
    records = [json.loads(line) for line in trials.read_text().splitlines()]
    assert len(records) == len(STEPS)
    for number, record in enumerate(records):
        after = texts[number + 1]
        assert non_managed(after) == non_managed(original), (number, after)
        assert FLAG.findall(after) == [str(STEPS[number])]
        files_diff = box.ssh(f"diff -u {paths[number]} {paths[number + 1]}; true")
        assert hunks(record["deploy_diff"]) == hunks(redact_text(files_diff, names)), number
        printed = [ln.split("] ", 1)[-1] for ln in shown.splitlines()]  # without the clock
        for line in deploy_lines(record["deploy_diff"]):  # headless shows it flag by flag
            assert f"  {line}" in printed, line
        assert record["status"] == "ok", record
    assert box.ssh(f"cat {UNIT_PATH}.d/override.conf") == DROP_IN
    for path in paths[:-1]:
        assert box.ssh(f"stat -c %a {path}").strip() == "600", path
    return texts


def test_import_dry_run_and_sweeps_leave_the_users_unit_and_serve(
    nspawn_box: NspawnBox, tmp_path: Path
) -> None:
    port = free_port()
    original = users_unit(port)
    install_hand_written(nspawn_box, UNIT, original)
    nspawn_box.ssh(f"systemctl start {UNIT}")
    profile = tmp_path / "box.toml"
    profile.write_text(profile_toml(nspawn_box))
    try:
        # Import: the plan's base is exactly what the unit (and its drop-in) runs.
        code, out = cli("import", str(profile), "-o", str(tmp_path / "imported.toml"))
        assert code == 0, out
        imported = (tmp_path / "imported.toml").read_text()
        base = tomllib.loads(imported)["server"]
        assert base["speculative_num_steps"] == 3 and base["port"] == port
        assert parse_unit(original).launcher in imported

        # Dry run: every planned diff printed, nothing changed on the box.
        plan = tmp_path / "original.toml"
        plan.write_text(sweep_plan(imported, "original"))
        state = f"ls -la --time-style=full-iso {BACKUPS} 2>&1; cat {UNIT_PATH}"
        before = nspawn_box.ssh(state)
        pid = nspawn_box.ssh(f"systemctl show -p MainPID --value {UNIT}")
        code, out = cli("sweep", str(plan), "--dry-run")
        assert code == 0, out
        sections = re.split(r"(?m)^trial \d+/3 ", out)[1:]
        assert len(sections) == len(STEPS), out
        for section, steps in zip(sections, STEPS, strict=True):
            assert f"    +    --speculative-num-steps {steps} \\\n" in section, out
        assert f"    +EnvironmentFile={ENV_FILE}\n" in sections[0], out
        assert SECRET not in out
        assert nspawn_box.ssh(state) == before
        assert nspawn_box.ssh(f"systemctl show -p MainPID --value {UNIT}") == pid

        # finally = "original": three trials, then the user's own unit serves again.
        sessions = tmp_path / "sessions"
        code, shown = cli("sweep", str(plan), "--headless", "--session", str(sessions / "a"))
        assert code == 0, shown
        # Before trial 1 the probe showed the user's unit running, what it runs, and serving.
        probed = shown[: shown.index("trial 1/3")]
        assert f"  service: systemd unit {UNIT} on " in probed, probed
        assert ": running (active/running)" in probed, probed
        assert f"on port {port}: " in probed and f"(parsed from {UNIT})" in probed, probed
        assert f"  serving: /health 200 on port {port}" in probed, probed
        assert "  gpus: no nvidia-smi on the box" in probed, probed
        (session_a,) = (sessions / "a").iterdir()
        box = tomllib.loads((session_a / "box.toml").read_text())
        assert box["reachable"] is True and box["serving"] is True, box
        assert box["running_config"]["speculative_num_steps"] == 3, box
        assert set(box["running_config"].get("env", {}).values()) <= {"<redacted>"}, box
        check_every_deploy(nspawn_box, original, sessions / "a", shown)
        assert (
            "finally = original: restored the box's own unit from before the session "
            "(it runs EAGLE3 steps=3 topk=1 draft=4 "
        ) in shown, shown
        assert "; it serves\n" in shown.split("finally = original:")[1], shown
        assert nspawn_box.ssh(f"cat {UNIT_PATH}") == original
        assert running_steps(nspawn_box) == 3 and health(nspawn_box, port) == 200
        assert nspawn_box.ssh(f"test -e {ENV_FILE} || echo gone") == "gone\n"

        # finally = "best": the best trial's configuration is left serving.
        nspawn_box.ssh(f"rm -rf {BACKUPS}")
        plan = tmp_path / "best.toml"
        plan.write_text(sweep_plan(imported, "best"))
        code, shown_best = cli("sweep", str(plan), "--headless", "--session", str(sessions / "b"))
        assert code == 0, shown_best
        check_every_deploy(nspawn_box, original, sessions / "b", shown_best)
        best = re.search(r"finally = best: deployed trial (\d+) .*; the box serves", shown_best)
        assert best, shown_best
        best_steps = STEPS[int(best.group(1)) - 1]
        now = nspawn_box.ssh(f"cat {UNIT_PATH}")
        assert FLAG.findall(now) == [str(best_steps)] and non_managed(now) == non_managed(original)
        assert running_steps(nspawn_box) == best_steps and health(nspawn_box, port) == 200

        # The planted secret: only in the 0600 EnvironmentFile, nowhere else.
        assert box_files_with_secret(nspawn_box) == [ENV_FILE]
        mode = nspawn_box.ssh(f"stat -c '%a %U' {ENV_FILE}").split()
        assert mode == ["600", "root"]
        for path in sessions.rglob("*"):
            if path.is_file():
                assert SECRET.encode() not in path.read_bytes(), path
        assert SECRET not in shown and SECRET not in shown_best

        # `specconsole rollback SESSION --original`, headless: the user's own unit serves.
        (session_b,) = (sessions / "b").iterdir()
        code, out = cli("rollback", str(session_b), "--original")
        assert code == 0 and "the server serves again" in out, out
        assert nspawn_box.ssh(f"cat {UNIT_PATH}") == original
        assert running_steps(nspawn_box) == 3 and health(nspawn_box, port) == 200
    finally:
        nspawn_box.ssh(f"systemctl stop {UNIT}; true")


def test_sudo_that_prompts_stops_the_sweep_with_no_trial(
    nspawn_box: NspawnBox, tmp_path: Path
) -> None:
    """A failure of reach, not a result: the service user's sudo asks for a password."""
    original = users_unit(free_port())
    install_hand_written(nspawn_box, UNIT, original)
    profile = tmp_path / "box.toml"
    profile.write_text(profile_toml(nspawn_box))
    code, out = cli("import", str(profile), "-o", str(tmp_path / "imported.toml"))
    assert code == 0, out
    document = tomllib.loads(sweep_plan((tmp_path / "imported.toml").read_text(), "best"))
    document["host"]["user"] = nspawn_box.prompting_user
    plan = tmp_path / "plan.toml"
    plan.write_text(tomli_w.dumps(document))
    code, shown = cli("sweep", str(plan), "--headless", "--session", str(tmp_path / "s"))
    assert code == 1, shown
    assert "sudo" in shown and "password" in shown, shown
    (session,) = (tmp_path / "s").iterdir()
    meta = tomllib.loads((session / "session.toml").read_text())["session"]
    assert meta["status"] == "error" and meta["trials"] == 0, meta
    assert meta["sweep_active"] is False, meta
    assert "NOT USABLE (sudo)" in shown and "trial 1/" not in shown, shown
    # said once, the command named whole (never cut mid-word), not as "unreachable"
    assert shown.count("sudo would ask") == 1 and "box unreachable" not in shown, shown
    box = tomllib.loads((session / "box.toml").read_text())
    assert box["reachable"] is False and box["error_kind"] == "sudo", box
    assert not (session / "trials.jsonl").exists() or not (session / "trials.jsonl").read_text()
    assert nspawn_box.ssh(f"cat {UNIT_PATH}") == original
