"""``specconsole rollback`` on a pool session names the box it restores: without ``--box`` it
is refused (naming the boxes) rather than guessing one, an unknown box is refused, and a
one-box session refuses ``--box``. No box is contacted on any of these paths."""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

import pytest

from specconsole.cli import main
from specconsole.core.plans.parse import loads_plan
from specconsole.core.plans.placeholders import resolve_placeholders
from specconsole.session.store import Session
from tests.fixtures.plans import sim_plan_text
from tests.session.sim_sessions import BENCH, SWEEP


def _session(tmp_path: Path, host: str) -> Path:
    text = sim_plan_text(
        tmp_path / "run-{port}", host=host, port=30000, extra_args=[], sweep=SWEEP, bench=BENCH
    )
    plan = resolve_placeholders(loads_plan(text), {"python": sys.executable})
    return Session.create(tmp_path / "sessions", replace(plan, source=text)).path


@pytest.mark.parametrize(
    ("host", "args", "said"),
    [
        (
            "".join(f'[[hosts]]\nname = "{n}"\ntransport = "local"\n' for n in ("gpu-a", "gpu-b")),
            [],
            "this session ran on a pool (gpu-a, gpu-b): name the box to restore with --box NAME",
        ),
        (
            "".join(f'[[hosts]]\nname = "{n}"\ntransport = "local"\n' for n in ("gpu-a", "gpu-b")),
            ["--box", "gpu-z"],
            "--box gpu-z: not a box of this session; use one of gpu-a, gpu-b",
        ),
        (
            '[host]\ntransport = "local"\n',
            ["--box", "gpu-a"],
            "--box gpu-a: this session ran on one box, not a pool; drop --box",
        ),
    ],
)
def test_rollback_names_the_box_of_a_pool(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], host: str, args: list[str], said: str
) -> None:
    path = _session(tmp_path, host)
    assert main(["rollback", str(path), "--wait", "1", *args]) == 1
    assert capsys.readouterr().err.strip() == f"specconsole: error: rollback: {said}"
