"""Every number a plan gives is bounded and every string that reaches a command line or unit
is free of control characters (issue 18, defect 6): each hostile value is refused by
``validate`` (and so by ``sweep``) with the field and the fix."""

from __future__ import annotations

from pathlib import Path

import pytest

from specconsole.cli import main
from specconsole.core.plans.parse import loads_plan
from specconsole.core.plans.plan import PlanError
from tests.controller.helpers import PLAN_TEXT

PLAN_CASES = {
    "input_len": ("input_len = 64", "input_len = 10000000000000", "[bench] input_len"),
    "output_len": ("output_len = 16", "output_len = 9999999999", "[bench] output_len"),
    "duration inf": ("input_len = 64", "input_len = 64\nduration_s = inf", "finite"),
    "duration nan": ("input_len = 64", "input_len = 64\nduration_s = nan", "finite"),
    "request_timeout": ("input_len = 64", "input_len = 64\nrequest_timeout_s = 1e12", "limit"),
    "ladder": ("ladder = [1, 4]", "ladder = [1, 100000]", "[bench] ladder level"),
    "requests": ("requests_per_level = 4", "requests_per_level = 10000000", "limit"),
    "load_timeout": ("load_timeout = 120", "load_timeout = inf", "[sweep] load_timeout"),
    "max_trials": ('on_crash = "pause"', 'on_crash = "pause"\nmax_trials = 10000000', "limit"),
    "ladder levels": (
        "ladder = [1, 4]",
        f"ladder = {list(range(1, 2000))}",
        "[bench] ladder has 1999 levels",
    ),
    "patience": ('on_crash = "pause"', 'on_crash = "pause"\npatience = 1000000000', "limit"),
    "noise_pct": ('on_crash = "pause"', 'on_crash = "pause"\nnoise_pct = inf', "finite"),
}


@pytest.mark.parametrize("case", PLAN_CASES, ids=list(PLAN_CASES))
def test_plan_numbers_out_of_bounds(
    case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    old, new, expected = PLAN_CASES[case]
    assert old in PLAN_TEXT
    text = PLAN_TEXT.replace(old, new, 1)
    with pytest.raises(PlanError, match=r"fix:|finite"):
        loads_plan(text)
    path = tmp_path / "plan.toml"
    path.write_text(text)
    assert main(["validate", str(path)]) == 2
    err = capsys.readouterr().err
    assert expected in err and "Traceback" not in err
    assert main(["sweep", str(path), "--headless", "--session", str(tmp_path / "s")]) == 1
    assert expected in capsys.readouterr().err
    assert not (tmp_path / "s").exists()


@pytest.mark.parametrize(
    ("line", "field"),
    [
        ("speculative_num_steps = 1000000000000", "speculative_num_steps: 1,000,000,000,000"),
        ("speculative_num_draft_tokens = 99999", "speculative_num_draft_tokens: 99,999"),
        ("context_length = 100000000000", "context_length"),
        ("tp_size = 1000000", "tp_size"),
        ('attention_backend = "fa3\\u0000"', "attention_backend: contains the control"),
        ('launcher = "python3 -m x\\n--evil"', "launcher: contains the control"),
        ('extra_args = ["--x", "a\\u0007"]', "extra_args: 'a\\x07' contains the control"),
    ],
)
def test_server_values_out_of_bounds(
    line: str, field: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = PLAN_TEXT.replace("max_running_requests = 64\n", f"max_running_requests = 64\n{line}\n")
    if line.startswith("speculative_num_steps"):
        text = text.replace("speculative_num_steps = [1, 2, 3, 10]", "speculative_eagle_topk = [1]")
    path = tmp_path / "plan.toml"
    path.write_text(text)
    assert main(["validate", str(path)]) == 1
    out = capsys.readouterr().out
    assert field in out and "fix:" in out
    assert main(["sweep", str(path), "--headless", "--session", str(tmp_path / "s")]) == 1
    assert field.split(":")[0] in capsys.readouterr().err


def test_a_nul_in_model_path_is_refused_by_validate_and_render(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "c.toml"
    path.write_text('[server]\nmodel_path = "/models/x\\u0000y"\n')
    assert main(["validate", str(path)]) == 1
    message = "model_path: contains the control character '\\x00'"
    assert message in capsys.readouterr().out
    assert main(["render", str(path), "--as", "unit"]) == 1
    assert message in capsys.readouterr().err  # the same error, through the same path


def test_render_renders_what_validate_accepts(capsys: pytest.CaptureFixture[str]) -> None:
    """`render examples/demo-sweep.toml` failed on port = "auto"; seed-box.toml rendered the
    incomplete base and then said it had an error while validate said OK."""
    for name in ("demo-sweep.toml", "seed-box.toml"):
        path = str(Path(__file__).parents[2] / "examples" / name)
        assert main(["validate", "-q", path]) == 0
        assert main(["render", path]) == 0
        assert "--speculative-num-steps 1" in capsys.readouterr().out
        assert main(["render", path, "--trial", "2", "--as", "argv"]) == 0
        assert '"--speculative-num-steps", "2"' in capsys.readouterr().out
        assert main(["render", path, "--trial", "99"]) == 2
        assert "use 1 to" in capsys.readouterr().err
