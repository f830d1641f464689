"""Start from the box: a plan from a unit, and validate/render reading units and command
lines (issue 19)."""

from __future__ import annotations

import dataclasses
import tomllib
from pathlib import Path

import pytest

from specconsole.cli import main
from specconsole.core.config.errors import ConfigError
from specconsole.core.launch.importplan import InputKind, plan_from_unit, read_server_text
from specconsole.core.launch.systemd import parse_unit
from specconsole.core.plans.parse import loads_plan
from tests.core.test_unit import HAND_WRITTEN

DROP_IN = "[Service]\nEnvironment=HF_TOKEN=hf_never_copied NCCL_DEBUG=WARN\n"


def test_the_imported_plan_runs_exactly_the_unit_without_its_secrets() -> None:
    text = plan_from_unit(
        HAND_WRITTEN + "\n" + DROP_IN,
        host={"transport": "ssh", "alias": "gpu-box"},
        service={"kind": "systemd", "unit": "sglang.service"},
        source="sglang.service on gpu-box",
    )
    assert "hf_never_copied" not in text and "HF_TOKEN" in text.split("[host]")[0]
    plan = loads_plan(text)
    expected = parse_unit(HAND_WRITTEN + "\n" + DROP_IN)
    public = tuple((n, v) for n, v in expected.env if n != "HF_TOKEN")
    assert plan.base == dataclasses.replace(expected, env=public)
    assert plan.profile.host.alias == "gpu-box" and plan.profile.service.unit == "sglang.service"
    assert plan.estimated_trials == 1  # the example sweep is commented out
    assert "# speculative_num_steps = [2, 3, 4, 5]" in text
    assert tomllib.loads(text)["server"]["extra_args"] == ["--enable-metrics"]


def test_inputs_are_recognised_as_toml_unit_or_command() -> None:
    kind, config = read_server_text('[server]\nmodel_path = "m"\n')
    assert kind == InputKind.TOML and config.model_path == "m"
    kind, config = read_server_text(HAND_WRITTEN)
    assert kind == InputKind.UNIT and config.tp_size == 2
    kind, config = read_server_text("HF_HOME=/x python3 -m sglang.launch_server \\\n --model m")
    assert kind == InputKind.COMMAND and config.env == (("HF_HOME", "/x"),)
    with pytest.raises(ConfigError, match="not a systemd unit"):
        read_server_text("what is this (")


def test_a_launch_script_reads_as_its_lines_chained() -> None:
    """The process backend's command.sh: cd, export and exec on lines of their own."""
    script = (
        "#!/bin/sh\n# Deployed by specconsole\ncd /srv/run\nexport HF_TOKEN=abc\n"
        "exec python3 -m sglang.launch_server --model-path /m \\\n  --port 31000\n"
    )
    kind, config = read_server_text(script)
    assert kind == InputKind.COMMAND
    assert (config.model_path, config.port) == ("/m", 31000)
    assert config.env == (("HF_TOKEN", "abc"),) and config.working_directory == "/srv/run"


def test_validate_and_render_accept_a_unit_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    unit = tmp_path / "sglang.service"
    unit.write_text(HAND_WRITTEN)
    assert main(["render", str(unit), "--as", "argv"]) in (0, 1)  # 1: validation errors
    assert '"--tp-size", "2"' in capsys.readouterr().out
    code = main(["validate", str(unit)])
    out = capsys.readouterr()
    assert code in (0, 1) and "not valid TOML" not in out.out + out.err
    command = tmp_path / "cmd.txt"
    command.write_text("python3 -m sglang.launch_server --model-path m --port 31000\n")
    assert main(["render", str(command), "--as", "command"]) == 0
    assert "--port 31000" in capsys.readouterr().out


def _with_tree(topk: int, draft: int) -> str:
    return HAND_WRITTEN.replace(
        "    --speculative-num-steps=3 \\\n",
        "    --speculative-num-steps=3 \\\n"
        f"    --speculative-eagle-topk {topk} \\\n"
        f"    --speculative-num-draft-tokens {draft} \\\n",
    )


def test_import_leaves_out_what_the_engine_derives_and_says_so() -> None:
    """Issue 33 #2: the unit's draft tokens at topk 1 are SGLang's steps + 1; kept in the
    plan they would be swept unchanged while every deploy writes steps + 1."""
    unit = _with_tree(1, 4)
    assert parse_unit(unit).speculative_num_draft_tokens == 4
    text = plan_from_unit(
        unit, host={"alias": "gpu-box"}, service={"unit": "u.service"}, source="u on gpu-box"
    )
    assert "speculative_num_draft_tokens" not in tomllib.loads(text)["server"]
    said = " ".join(line.lstrip("# ") for line in text.splitlines() if line.startswith("#"))
    assert "speculative_num_draft_tokens = 4 is left out: the engine derives it" in said
    assert "deploys write the derived value" in said
    assert "docs/plans.md" not in text  # the example points at a document that exists
    assert "# [bench]" not in text  # the CLI adds the benchmark's cost (commands.boxcmd)


def test_import_keeps_what_the_user_chose() -> None:
    """A draft-token count the engine keeps (topk > 1) is the user's: it stays."""
    text = plan_from_unit(
        _with_tree(4, 8), host={"alias": "gpu-box"}, service={"unit": "u.service"}, source="u"
    )
    assert tomllib.loads(text)["server"]["speculative_num_draft_tokens"] == 8
    assert "is left out" not in text
