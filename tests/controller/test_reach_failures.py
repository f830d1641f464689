"""Failures of reach are not results (issue 19): a refused host key, a refused login and an
unreachable host stop a headless sweep over the real sshd at once — the exact error, session
status ``error``, a non-zero exit code, no trial recorded and no finding drawn from it."""

from __future__ import annotations

import contextlib
import io
import tomllib
from pathlib import Path

import pytest
import tomli_w

from specconsole.cli import main as cli_main
from tests.controller.test_e2e import plan_text
from tests.fixtures.sshd import SshdServer, free_port

pytestmark = [pytest.mark.ssh, pytest.mark.slow]


def _host_key_refused(sshd: SshdServer, tmp_path: Path) -> dict[str, object]:
    return {"known_hosts": str(sshd.wrong_known_hosts)}


def _login_refused(sshd: SshdServer, tmp_path: Path) -> dict[str, object]:
    import subprocess

    stranger = tmp_path / "stranger_ed25519"
    subprocess.run(
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(stranger)],
        check=True,
        capture_output=True,
    )
    return {"identity_files": [str(stranger)]}


def _unreachable(sshd: SshdServer, tmp_path: Path) -> dict[str, object]:
    return {"port": free_port(), "connect_timeout": 2}


@pytest.mark.parametrize(
    ("broken", "words"),
    [
        (_host_key_refused, "host key"),
        (_login_refused, "auth"),
        (_unreachable, "reach"),
    ],
    ids=["host-key-refused", "login-refused", "unreachable"],
)
def test_a_failure_of_reach_stops_the_sweep_with_no_trial(
    sshd: SshdServer, tmp_path: Path, broken: object, words: str
) -> None:
    document = tomllib.loads(
        plan_text(sshd, tmp_path / "run", steps=[1, 2, 3], ladder=[1], requests=2)
    )
    document["host"].update(broken(sshd, tmp_path))  # type: ignore[operator]
    plan = tmp_path / "plan.toml"
    plan.write_text(tomli_w.dumps(document))
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        code = cli_main(["sweep", str(plan), "--headless", "--session", str(tmp_path / "s")])
    printed = out.getvalue()
    assert code != 0, printed
    assert words in printed.lower(), printed
    (session,) = (tmp_path / "s").iterdir()
    trials = session / "trials.jsonl"
    assert not trials.exists() or trials.read_text().strip() == "", trials.read_text()
    meta = tomllib.loads((session / "session.toml").read_text())["session"]
    assert meta["status"] == "error" and meta["trials"] == 0, meta
    assert "nothing smaller was tried" not in printed and "finally =" not in printed
    assert not (tmp_path / "run").exists() or not any((tmp_path / "run").rglob("log"))


async def test_a_host_key_that_changes_mid_sweep_stops_it_and_leaves_it_inactive(
    sshd: SshdServer, tmp_path: Path
) -> None:
    """The box is reinstalled mid-sweep: its connection drops and the key it comes back with
    is not the trusted one. The sweep stops at once (status ``error``, exit 1), keeps the
    trials recorded before, records none for the failure, and session.toml does not say the
    sweep is still active."""
    import asyncio
    import shutil
    import sys

    from specconsole.core.plans.parse import loads_plan
    from specconsole.core.plans.placeholders import resolve_placeholders
    from specconsole.session.store import Session
    from tests.controller.background import headless_in_background

    trusted = tmp_path / "known_hosts"
    shutil.copy(sshd.known_hosts, trusted)
    document = tomllib.loads(
        plan_text(sshd, tmp_path / "run", steps=[1, 2, 3], ladder=[1], requests=2)
    )
    document["host"].update({"known_hosts": str(trusted), "reconnect_attempts": 2})
    document["sweep"]["finally"] = "last"
    text = tomli_w.dumps(document)
    plan = resolve_placeholders(loads_plan(text), {"python": sys.executable})
    session = Session.create(tmp_path / "s", plan)
    out = io.StringIO()
    restore = lambda: shutil.copy(sshd.known_hosts, trusted)  # noqa: E731
    async with headless_in_background(plan, session, out, before_cleanup=restore) as run:
        async with asyncio.timeout(120):
            while not session.load_trials():
                assert not run.done(), out.getvalue()
                await asyncio.sleep(0.1)
        shutil.copy(sshd.wrong_known_hosts, trusted)
        assert sshd.cut_connections() > 0
        code = await asyncio.wait_for(run, 120)
    printed = out.getvalue()
    assert code == 1, printed
    assert "host key" in printed.lower(), printed
    recorded = session.load_trials()
    assert 1 <= len(recorded) < 3, printed
    assert [t.status.value for t in recorded] == ["ok"] * len(recorded), printed  # none blamed
    meta = tomllib.loads((session.path / "session.toml").read_text())["session"]
    assert meta["status"] == "error" and meta["trials"] == len(recorded), meta
    assert meta["sweep_active"] is False, meta
    assert "finally =" not in printed and "nothing smaller was tried" not in printed
