"""Version-aware engine knowledge: flag names by release, validation, render and the simulator."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from specconsole.core.config.model import ServerConfig
from specconsole.core.config.render import to_argv
from specconsole.core.config.validation import errors, validate
from specconsole.core.launch.command import parse_command
from specconsole.engines.sglang.keys import SpecAlgorithm
from specconsole.engines.sglang.releases import (
    detect_command,
    flag_for,
    parse_detected,
    parse_version,
    removed_flags,
)
from specconsole.sim.arguments import SimArgError
from specconsole.sim.faces.sglang.args import parse_argv

ROOT = Path(__file__).resolve().parents[2]


def test_parse_version_orders_releases() -> None:
    assert parse_version("0.5.9") < parse_version("0.5.14") < parse_version("0.5.23")
    assert parse_version("0.5.10rc0") < parse_version("0.5.10") < parse_version("0.5.10.post1")
    for bad in ("", "latest", "0.x", "1.2.3.4.5"):
        with pytest.raises(ValueError):
            parse_version(bad)


@pytest.mark.parametrize(
    ("version", "flag"),
    [
        (None, "--cuda-graph-max-bs"),
        ("0.5.9", "--cuda-graph-max-bs"),
        ("0.5.13", "--cuda-graph-max-bs"),
        ("0.5.14", "--cuda-graph-max-bs-decode"),
        ("0.5.23", "--cuda-graph-max-bs-decode"),
    ],
)
def test_cuda_graph_flag_by_release(version: str | None, flag: str) -> None:
    assert flag_for("cuda_graph_max_bs", "--cuda-graph-max-bs", version) == flag
    config = ServerConfig(model_path="m", cuda_graph_max_bs=32, engine_version=version)
    argv = to_argv(config)
    assert argv[argv.index(flag) + 1] == "32"
    # the reverse parse reads either spelling back into the stable key
    assert parse_command(argv).cuda_graph_max_bs == 32


def test_removed_flags_and_validation() -> None:
    assert "--cuda-graph-max-bs" in removed_flags("0.5.23")
    assert not removed_flags("0.5.14") and not removed_flags(None)
    config = ServerConfig(
        model_path="m", engine_version="0.5.23", extra_args=("--cuda-graph-max-bs", "8")
    )
    (issue,) = [i for i in errors(validate(config)) if "no longer accepts" in i.message]
    assert (
        issue.field == "extra_args"
        and "0.5.23" in issue.message
        and "--cuda-graph-max-bs-decode" in issue.fix
    )
    bad = ServerConfig(model_path="m", engine_version="newest")
    (issue,) = errors(validate(bad))
    assert issue.field == "engine_version" and "0.5.23" in issue.fix


def test_pipeline_parallel_speculative_rule_by_release() -> None:
    base = dict(
        model_path="m",
        speculative_algorithm=SpecAlgorithm.EAGLE3,
        speculative_draft_model_path="d",
        extra_args=("--pp-size", "2"),
    )
    for version, refused in (("0.5.14", True), ("0.5.23", False), (None, True)):
        issues = errors(validate(ServerConfig(**base, engine_version=version)))
        assert any("Pipeline parallelism" in i.message for i in issues) is refused, version


def test_detection_command_and_output() -> None:
    assert detect_command("/opt/venv/bin/python")[:2] == ["/opt/venv/bin/python", "-c"]
    assert parse_detected("0.5.23\n") == "0.5.23"
    assert parse_detected("warning: x\n0.5.15.post1") == "0.5.15.post1"
    assert parse_detected("ModuleNotFoundError: No module named 'sglang'") is None


@pytest.mark.parametrize("version", ["0.5.9", "0.5.14", "0.5.23"])
def test_render_cli_emits_only_the_releases_flags(version: str) -> None:
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "specconsole",
            "render",
            str(ROOT / "examples" / "seed-box.toml"),
            "--as",
            "argv",
            "--engine-version",
            version,
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    argv = json.loads(out.stdout)
    old_ok = version != "0.5.23"
    assert ("--cuda-graph-max-bs" in argv) is (version == "0.5.9")
    assert ("--cuda-graph-max-bs-decode" in argv) is (version != "0.5.9")
    # what the simulator playing that release accepts
    parse_argv([*argv[3:], "--sim-engine-version", version])
    assert old_ok or "--cuda-graph-max-bs" not in argv


@pytest.mark.parametrize(
    ("version", "flag", "accepted"),
    [
        ("0.5.9", "--cuda-graph-max-bs", True),
        ("0.5.9", "--cuda-graph-max-bs-decode", False),
        ("0.5.14", "--cuda-graph-max-bs", True),
        ("0.5.14", "--cuda-graph-max-bs-decode", True),
        ("0.5.23", "--cuda-graph-max-bs", False),
        ("0.5.23", "--cuda-graph-max-bs-decode", True),
    ],
)
def test_simulator_accepts_exactly_the_releases_flags(
    version: str, flag: str, accepted: bool
) -> None:
    argv = ["--model-path", "m", flag, "16", "--sim-engine-version", version]
    if accepted:
        assert parse_argv(argv).values["cuda_graph_max_bs"] == 16
    else:
        with pytest.raises(SimArgError):
            parse_argv(argv)


_NOT_RELEASES = ["0", "latest", "0.x", "1.2.3.4.5", "v", "0.5.99999999999999999999"]


@pytest.mark.parametrize("bad", _NOT_RELEASES)
@pytest.mark.parametrize(
    ("plan", "title", "example"),
    [("demo-sweep.toml", "SGLang", "0.5.23"), ("vllm-sweep.toml", "vLLM", "0.34.0")],
)
def test_a_plan_declaring_no_release_number_is_refused_as_it_is_read(
    tmp_path: Path, bad: str, plan: str, title: str, example: str
) -> None:
    """Every render reads ``engine_version`` as a release to spell the flags: a shipped plan
    with ``engine_version = "0"`` (in [server] or as an axis) is a PlanError naming the key
    and the fix as the plan is read — validate and render exit 2 with it, no traceback."""
    from specconsole.cli import main
    from specconsole.core.plans.parse import loads_plan
    from specconsole.core.plans.plan import PlanError

    shipped = (ROOT / "examples" / plan).read_text()
    lines = [ln for ln in shipped.splitlines() if not ln.startswith("engine_version")]
    at = lines.index("[server]") + 1
    lines.insert(at, f"engine_version = {json.dumps(bad)}")
    text = "\n".join(lines) + "\n"
    with pytest.raises(PlanError) as refused:
        loads_plan(text)
    said = str(refused.value)
    assert said.startswith(f"[server] engine_version: {bad!r} is not a {title} release number")
    assert f'Fix: write the release on the box, e.g. engine_version = "{example}"' in said
    path = tmp_path / plan
    path.write_text(text)
    for command in ("validate", "render"):
        assert main([command, str(path)]) == 2
    # the same value as an axis of a plan whose [server] is fine
    axis = shipped.replace(
        "[sweep.axes]\n", f"[sweep.axes]\nengine_version = [{json.dumps(bad)}]\n"
    )
    assert axis != shipped
    with pytest.raises(PlanError, match=r"\[sweep.axes\] engine_version\[0\]: .* is not a"):
        loads_plan(axis)


def test_render_refuses_an_engine_version_option_that_is_no_release(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from specconsole.cli import main

    seed = str(ROOT / "examples" / "seed-box.toml")
    assert main(["render", seed, "--as", "argv", "--engine-version", "0"]) == 2
    said = capsys.readouterr().err
    assert "--engine-version '0' is not a SGLang release number" in said, said
    assert "e.g. --engine-version 0.5.23, or leave the option out" in said
    assert main(["render", seed, "--as", "argv", "--engine-version", "0.5.23"]) == 0
