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
