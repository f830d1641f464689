"""Issue 33: a real user's first session on their own box — what you see is what runs.

On the real systemd container over the real sshd, the user's hand-written unit (its own
``Description=``, ``User=``, ``Environment=`` lines, a 12-line ExecStart with
``--speculative-num-draft-tokens 4`` at topk 1, which SGLang replaces with steps + 1) is
serving; the launcher cannot ``import sglang``, so only the running server can tell the
release. Then, as the user would: ``import``, ``sweep --dry-run``, a headless sweep over
steps 2, 4, 10 that pauses on the steps-10 crash, ``rollback``, ``rollback --original``, a
sweep with ``finally = "best"``, and Ctrl-C while the server restarts. Checked:

* #2 the dry run's diffs equal the real deploys' diffs line for line (draft tokens 3, 5, 11
  in both); every view's label says the draft tokens that ran; ``finally = "best"`` deploys
  exactly the best trial's configuration and does not restart a server already running it;
* #3 trial labels differ (the unit's ``Description=`` names no trial);
* #4 the crash pause names what each rollback restores, and each rollback names the
  configuration that now runs;
* #5 the release is known before trial 1 (from the running server), so steps 10 is
  predicted not to load;
* #9 Ctrl-C while the server restarts says the server's real state.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import subprocess
import sys
import time
import tomllib
from pathlib import Path

import pytest
import tomli_w

from specconsole.controller.finish import apply_finally
from specconsole.core.launch.systemd import parse_unit
from specconsole.remote import make_backend, make_transport
from specconsole.session.store import Session
from tests.fixtures.nspawn import NspawnBox
from tests.fixtures.sshd import free_port
from tests.remote.test_box_sweep import cli, health, hunks, profile_toml, users_unit
from tests.remote.test_systemd_edit import install_hand_written

pytestmark = [pytest.mark.systemd, pytest.mark.slow]

UNIT = "specconsole-first.service"
UNIT_PATH = f"/etc/systemd/system/{UNIT}"
DRAFT = re.compile(r"--speculative-num-draft-tokens (\d+)")
STEPS = re.compile(r"--speculative-num-steps (\d+)")
DESCRIPTION = "Our SGLang server (hand-written)"
SERVE_WAIT_S = 30.0


def wait_health(box: NspawnBox, port: int) -> None:
    """Until the user's server answers /health (bounded in time and count)."""
    deadline = time.monotonic() + SERVE_WAIT_S
    for _ in range(int(SERVE_WAIT_S / 0.25)):
        if health(box, port) == 200:
            return
        if time.monotonic() > deadline:
            break
        time.sleep(0.25)
    raise AssertionError(f"the unit did not serve on port {port} within {SERVE_WAIT_S} s")


def start_users_unit(box: NspawnBox, tmp_path: Path, unit_text: str, port: int) -> str:
    """Install and start the user's unit, write the profile, import it; the imported plan."""
    install_hand_written(box, UNIT, unit_text)
    box.ssh(f"systemctl start {UNIT}")
    wait_health(box, port)
    profile = tmp_path / "box.toml"
    profile.write_text(profile_toml(box).replace("specconsole-sweep.service", UNIT))
    code, out = cli("import", str(profile), "-o", str(tmp_path / "imported.toml"))
    assert code == 0, out
    return (tmp_path / "imported.toml").read_text()


def plan_text(imported: str, steps: list[int], *, on_crash: str, final: str) -> str:
    document = tomllib.loads(imported)
    document["sweep"] = {
        "strategy": "grid",
        "on_crash": on_crash,
        "load_timeout": 60,
        "finally": final,
        "axes": {"speculative_num_steps": steps},
    }
    document["bench"] = {
        "ladder": [1, 4],
        "input_len": 64,
        "output_len": 16,
        "requests_per_level": 4,
        "warmup_requests": 0,
    }
    return tomli_w.dumps(document)


def dry_run_hunks(out: str, count: int) -> list[list[str]]:
    """Each planned trial's diff lines as the dry run printed them (4-space indented)."""
    sections = re.split(r"(?m)^trial \d+/\d+ .*:\n", out)[1:]
    assert len(sections) == count, out
    shown = []
    for section in sections:
        lines = [ln[4:] for ln in section.splitlines() if ln.startswith("    ")]
        shown.append([ln for ln in lines if not ln.startswith(("---", "+++"))])
    return shown


def running_steps(box: NspawnBox) -> int | None:
    """The steps the live server of the user's unit was started with (its command line)."""
    pid = box.ssh(f"systemctl show -p MainPID --value {UNIT}").strip()
    found = STEPS.search(box.ssh(f"tr '\\0' ' ' < /proc/{pid}/cmdline 2>/dev/null; true"))
    return int(found.group(1)) if found else None


def wait_active_state(box: NspawnBox, wanted: str) -> None:
    """Until the user's unit is in systemd's ``wanted`` ActiveState (bounded)."""
    deadline = time.monotonic() + SERVE_WAIT_S
    for _ in range(int(SERVE_WAIT_S / 0.1)):
        if box.ssh(f"systemctl show -p ActiveState --value {UNIT}").strip() == wanted:
            return
        if time.monotonic() > deadline:
            break
        time.sleep(0.1)
    raise AssertionError(f"{UNIT} never became {wanted}")


def main_pid(box: NspawnBox) -> str:
    return box.ssh(f"systemctl show -p MainPID -p InvocationID --value {UNIT}")


def test_what_the_dry_run_shows_is_what_runs_and_rollback_names_it(
    nspawn_box: NspawnBox, tmp_path: Path
) -> None:
    port = free_port()
    original = users_unit(port)
    try:
        imported = start_users_unit(nspawn_box, tmp_path, original, port)
        # import leaves out what the engine derives, and says so; no dead documentation link
        assert "speculative_num_draft_tokens" not in tomllib.loads(imported)["server"]
        assert "# speculative_num_draft_tokens = 4 is left out: the engine derives it" in imported
        assert "docs/plans.md" not in imported and "# [bench]" in imported
        plan = tmp_path / "plan.toml"
        plan.write_text(plan_text(imported, [2, 4, 10], on_crash="pause", final="best"))

        code, dry = cli("sweep", str(plan), "--dry-run")
        assert code == 0, dry
        assert "(server_info: /server_info of the server running now)" in dry, dry
        planned = dry_run_hunks(dry, 3)
        for label in ("steps=2 draft=3", "steps=4 draft=5", "steps=10 draft=11"):
            assert re.search(rf"(?m)^trial \d/3 {label}:$", dry), dry

        sessions = tmp_path / "sessions"
        code, shown = cli("sweep", str(plan), "--headless", "--session", str(sessions))
        assert code == 3, shown
        (session_dir,) = sessions.iterdir()
        records = [
            json.loads(line) for line in (session_dir / "trials.jsonl").read_text().splitlines()
        ]
        assert [r["status"] for r in records] == ["ok", "ok", "crashed"], shown

        # #5: the release came from the running server before trial 1 was rendered...
        probed = shown[: shown.index("trial 1/3")]
        assert "engine: sglang 0.5.14 (server_info: /server_info of the server running now)" in (
            probed
        ), probed
        # ...so all three trials share one capacity line and steps 10 is predicted not to load
        assert "predicted infeasible" in shown.split("trial 3 steps=10 draft=11: crashed")[1]
        assert records[2]["predicted"]["feasible"] is False, records[2]["predicted"]

        # #2: the dry run's diffs are the real deploys' diffs, line for line
        for number, (record, expected) in enumerate(zip(records, planned, strict=True)):
            assert hunks(record["deploy_diff"]) == expected, (number, record["deploy_diff"])
        versions = nspawn_box.ssh(f"ls /var/backups/specconsole | grep '^{UNIT}\\.' | sort")
        units = [nspawn_box.ssh(f"cat /var/backups/specconsole/{v}") for v in versions.split()]
        deployed = [*units[1:], nspawn_box.ssh(f"cat {UNIT_PATH}")]
        assert [DRAFT.findall(u) for u in deployed] == [["3"], ["5"], ["11"]]

        # #3: every trial has its own name, the unit's Description= names none of them
        for label in ("steps=2 draft=3", "steps=4 draft=5", "steps=10 draft=11"):
            assert f"{label}: deploying" in shown, shown
        report = shown.split(f"# {DESCRIPTION}\n", 1)  # the description is the title...
        assert len(report) == 2, shown
        assert DESCRIPTION not in report[0].split("trial 1/3", 1)[1], shown  # ...no trial's name
        labels = [r["label"] for r in records]
        assert labels == ["steps=2 draft=3", "steps=4 draft=5", "steps=10 draft=11"], labels
        code, html = cli("report", str(session_dir), "--format", "html")
        assert code == 0
        for draft in ("3", "5", "11"):
            assert f"<td>speculative_num_draft_tokens</td><td>{draft}</td>" in html, draft

        # #4: the pause names what each rollback restores; nothing says "as it was"
        paused = next(line for line in shown.splitlines() if "paused after a crash" in line)
        assert "as it was" not in paused, paused
        assert (
            f"specconsole rollback {session_dir} puts back the unit from before trial 3's "
            "deploy: trial 2's configuration (steps=4 draft=5, ok)"
        ) in paused, paused
        assert (
            f"specconsole rollback {session_dir} --original puts back the box's own unit "
            "from before this session (EAGLE3 steps=3 topk=1 draft=4"
        ) in paused, paused
        assert "the box now: the server is down" in shown, shown

        code, out = cli("rollback", str(session_dir))
        assert code == 0, out
        assert "restored the unit from before the last deploy (from /var/backups/" in out, out
        assert (
            "it runs EAGLE3 steps=4 topk=1 draft=5 mem=0.88 cg-bs=64 mrr=64 tp=4 — "
            "trial 2's configuration (steps=4 draft=5, ok); the server serves again"
        ) in out, out
        assert running_steps(nspawn_box) == 4 and health(nspawn_box, port) == 200

        code, out = cli("rollback", str(session_dir), "--original")
        assert code == 0, out
        assert "restored the box's own unit from before this session's first deploy" in out, out
        assert "it runs EAGLE3 steps=3 topk=1 draft=4 mem=0.88 cg-bs=64 mrr=64 tp=4 — no trial" in (
            out
        ), out
        assert nspawn_box.ssh(f"cat {UNIT_PATH}") == original
        assert running_steps(nspawn_box) == 3 and health(nspawn_box, port) == 200
    finally:
        nspawn_box.ssh(f"systemctl stop {UNIT}; true")


def test_finally_best_deploys_exactly_the_best_trial_and_keeps_it_running(
    nspawn_box: NspawnBox, tmp_path: Path
) -> None:
    port = free_port()
    try:
        imported = start_users_unit(nspawn_box, tmp_path, users_unit(port), port)
        plan = tmp_path / "plan.toml"
        plan.write_text(plan_text(imported, [2, 4], on_crash="auto", final="best"))
        sessions = tmp_path / "sessions"
        code, shown = cli("sweep", str(plan), "--headless", "--session", str(sessions))
        assert code == 0, shown
        found = re.search(
            r"finally = best: deployed trial (\d) \((steps=\d draft=\d), best by [^)]*\)"
            r"(: it already runs there, not restarted)?; the box serves",
            shown,
        )
        assert found, shown
        (session_dir,) = sessions.iterdir()
        session = Session.open(session_dir)
        best = session.load_trials()[int(found.group(1)) - 1]
        assert found.group(2) == f"steps={best.effective.speculative_num_steps} draft=" + str(
            best.effective.speculative_num_draft_tokens
        )
        # exactly the configuration the best trial ran: its draft tokens, as it was deployed
        now = nspawn_box.ssh(f"cat {UNIT_PATH}")
        on_box = parse_unit(now)
        ran = best.effective
        for name in ("speculative_num_steps", "speculative_num_draft_tokens", "cuda_graph_max_bs"):
            assert getattr(on_box, name) == getattr(ran, name), name
        assert STEPS.findall(now) == [str(ran.speculative_num_steps)]
        assert DRAFT.findall(now) == [str(ran.speculative_num_draft_tokens)]
        assert running_steps(nspawn_box) == ran.speculative_num_steps
        assert health(nspawn_box, port) == 200
        assert f"the box now: the server runs and serves (/health 200 on port {port}" in shown

        # finally again on a box already running the best trial: nothing restarts
        before = main_pid(nspawn_box)
        loaded = session.load_plan()
        outcome = asyncio.run(_finally_again(loaded, session.load_trials()))
        assert "it already runs there, not restarted; the box serves" in outcome, outcome
        assert main_pid(nspawn_box) == before
        assert health(nspawn_box, port) == 200
    finally:
        nspawn_box.ssh(f"systemctl stop {UNIT}; true")


async def _finally_again(plan: object, trials: object) -> str:
    """``[sweep] finally = "best"`` once more, through the real transport and backend."""
    from specconsole.core.plans.plan import SweepPlan

    assert isinstance(plan, SweepPlan)
    transport = make_transport(plan.profile)
    try:
        outcome = await apply_finally(
            "best",
            trials=trials,  # type: ignore[arg-type]
            goal=plan.goal,
            base=plan.base,
            backend=make_backend(plan.profile, transport),
            transport=transport,
            timeout_s=60,
        )
    finally:
        await transport.close()
    return outcome.message


def test_ctrl_c_while_the_server_restarts_says_its_real_state(
    nspawn_box: NspawnBox, tmp_path: Path
) -> None:
    """#9: a unit that takes seconds to stop (``ExecStop=``), interrupted in ``restarting``:
    the server is not serving at that moment, and the way out says so."""
    port = free_port()
    slow_stop = users_unit(port).replace("Restart=no\n", "Restart=no\nExecStop=/bin/sleep 8\n")
    try:
        imported = start_users_unit(nspawn_box, tmp_path, slow_stop, port)
        plan = tmp_path / "plan.toml"
        plan.write_text(plan_text(imported, [2], on_crash="auto", final="best"))
        env = {**os.environ, "PYTHONWARNINGS": "ignore"}
        command = [sys.executable, "-m", "specconsole", "sweep", str(plan), "--headless"]
        command += ["--session", str(tmp_path / "sessions")]
        proc = subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env
        )
        lines: list[str] = []
        try:
            assert proc.stdout is not None
            deadline = time.monotonic() + 90
            for line in proc.stdout:
                lines.append(line)
                if ": restarting" in line:  # Ctrl-C once systemd is stopping the server
                    wait_active_state(nspawn_box, "deactivating")
                    proc.send_signal(signal.SIGINT)
                    break
                assert time.monotonic() < deadline, "".join(lines)
            rest, _ = proc.communicate(timeout=90)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait(timeout=10)
        shown = "".join(lines) + rest
        assert proc.returncode == 130, shown
        assert "left running" not in shown, shown
        said = next(ln for ln in shown.splitlines() if "the box now:" in ln)
        # mid-restart: stopping (deactivating), starting or down, never "runs and serves"
        assert re.search(r"the server (is stopping|is starting|is down) \(", said), said
        assert "its unit runs EAGLE3 steps=2 topk=1 draft=3" in said, said
        assert "trial 1's configuration (steps=2 draft=3, not finished)" in said, said
        (session_dir,) = (tmp_path / "sessions").iterdir()
        meta = tomllib.loads((session_dir / "session.toml").read_text())["session"]
        assert meta["status"] == "interrupted", meta
    finally:
        nspawn_box.ssh(f"systemctl stop {UNIT}; true")
