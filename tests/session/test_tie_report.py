"""A tie said where it is one (issue 41): two configurations whose difference is inside the
noise the session measured are reported as a tie by ``report`` and by ``best`` — never a
silent winner — while a difference beyond the noise is not."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

from specconsole.cli import main as cli_main
from specconsole.core.measure.trials import LevelSummary, TrialRecord, TrialStatus
from specconsole.core.plans.parse import parse_plan
from specconsole.session.store import Session


def _plan():  # type: ignore[no-untyped-def]
    return parse_plan(
        {
            "name": "tie",
            "host": {"transport": "local"},
            "service": {"kind": "process"},
            "server": {
                "engine": "llamacpp",
                "model_path": "/m/t.gguf",
                "speculative_draft_model_path": "/m/d.gguf",
                "spec_type": "draft-simple",
                "metrics": True,
            },
            "sweep": {
                "strategy": "grid",
                "objective": "single_request",
                "axes": {"spec_draft_n_max": [2, 4, 8]},
            },
            "bench": {"ladder": [1]},
        }
    )


def _session(tmp_path: Path, figures: list[tuple[int, float]]) -> Path:
    plan = _plan()
    session = Session.create(tmp_path, plan)
    for i, (n_max, single) in enumerate(figures):
        config = plan.at(plan.base, spec_draft_n_max=n_max)
        level = LevelSummary(1, single, single, 4)
        session.append_trial(
            TrialRecord(index=i, config=config, status=TrialStatus.OK, levels=(level,))
        )
    return session.path


def _run(*argv: str) -> tuple[int, str]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        code = cli_main(list(argv))
    return code, out.getvalue()


def test_a_difference_inside_the_measured_noise_is_reported_as_a_tie(tmp_path: Path) -> None:
    # n_max 2 loaded four times, 29.3-30.2 tok/s (the noise: ±6 % for two single runs);
    # n_max 4 at 30.4 is inside it, n_max 8 at 20.0 far outside
    figures = [(2, 30.0), (4, 30.4), (8, 20.0), (2, 29.4), (2, 30.2), (2, 29.3)]
    path = _session(tmp_path, figures)
    code, report = _run("report", str(path))
    assert code == 0
    (line,) = [x for x in report.splitlines() if x.startswith("- best: trial 2")]
    assert "statistically tied with trials 1, 4, 5, 6 (tie: inside the measured noise, ±" in line
    code, shown = _run("best", str(path))
    assert code == 0 and "best: trial 2" in shown
    assert "tie: trial 2 is not shown to beat #1 n_max=2, #4 n_max=2" in shown
    assert "#3" not in shown.split("tie:")[1]  # n_max 8 is a third slower: no tie


def test_without_a_measured_noise_a_single_run_wins_alone(tmp_path: Path) -> None:
    path = _session(tmp_path, [(2, 30.0), (4, 30.4), (8, 20.0)])
    code, shown = _run("best", str(path))
    assert code == 0 and "best: trial 2" in shown and "tie:" not in shown
