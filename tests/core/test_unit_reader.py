"""The unit reader follows systemd's own rules (issue 27 #10 #11, issue 33 #1): ``systemctl
cat``'s real file headers, lines split at ``\\n`` only, exactly one ``ExecStart=``,
specifiers, ``EnvironmentFile=`` variables and ``$VAR``/``${VAR}`` expansion — and a unit it
cannot read as systemd would is refused naming the setting and the fix, never read literally."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from specconsole.cli import main
from specconsole.core.config.errors import ConfigError
from specconsole.core.launch.systemd import parse_unit
from specconsole.core.launch.unit import edit_unit
from specconsole.core.launch.unit_read import (
    UnitContext,
    parse_env_file,
    read_cat,
    unit_lines,
)

MAIN_PATH = "/etc/systemd/system/sglang.service"
DROPIN_PATH = "/etc/systemd/system/sglang.service.d/override.conf"

UNIT = """\
# /etc/systemd/system/sglang.service -- Qwen3.5 122B with EAGLE-3
# Hand-written; ask before editing.
[Unit]
Description=SGLang for %n

[Service]
User=sglang
Environment=HF_HOME=/data/hf
EnvironmentFile=/etc/default/sglang
# /dev/shm must be >= 16G for NCCL

ExecStart=/usr/bin/python3 -m sglang.launch_server --model-path $MODEL \\
    --served-model-name ${NAME}-prod \\
    --speculative-algorithm EAGLE3 \\
    --speculative-num-steps 3 \\
    --speculative-eagle-topk 1 \\
    --speculative-num-draft-tokens 4 \\
    --port 30000
Restart=on-failure

[Install]
WantedBy=multi-user.target
"""
DROPIN = "[Service]\nEnvironment=NCCL_DEBUG=WARN\n"
ENV_FILE = "# the model\nMODEL=/models/qwen\nNAME='qwen'\n"
CONTEXT = UnitContext(
    unit="sglang.service",
    fragment=MAIN_PATH,
    env_files={"/etc/default/sglang": ENV_FILE},
)


def cat_output(main: str = UNIT, dropin: str = DROPIN) -> str:
    """What ``systemctl cat`` prints: each file under a ``# /path`` header, blank between."""
    return f"# {MAIN_PATH}\n{main}\n# {DROPIN_PATH}\n{dropin}"


@pytest.mark.parametrize("paths", [None, [MAIN_PATH, DROPIN_PATH]], ids=["headers", "systemd"])
def test_comments_that_look_like_paths_do_not_cut_the_unit(paths: list[str] | None) -> None:
    cat = read_cat(cat_output(), paths)
    assert cat.main == UNIT and cat.dropins == DROPIN
    assert cat.fragment == MAIN_PATH and cat.dropin_paths == (DROPIN_PATH,)
    config = parse_unit(cat.main + "\n" + cat.dropins, CONTEXT)
    assert config.speculative_num_steps == 3 and config.port == 30000  # lines after the comment


def test_a_unit_file_without_cat_headers_is_read_whole() -> None:
    assert read_cat(UNIT).main == UNIT
    assert parse_unit(UNIT, CONTEXT).model_path == "/models/qwen"


def test_cat_output_read_directly_names_the_unit_for_its_specifiers() -> None:
    config = parse_unit(cat_output(), UnitContext(env_files=CONTEXT.env_files))
    assert config.description == "SGLang for sglang.service"


def test_environment_file_variables_expand_execstart_and_stay_out_of_the_config() -> None:
    config = parse_unit(UNIT, CONTEXT)
    assert config.model_path == "/models/qwen"
    assert "--served-model-name" in config.extra_args
    assert config.extra_args[config.extra_args.index("--served-model-name") + 1] == "qwen-prod"
    assert dict(config.env) == {"HF_HOME": "/data/hf"}  # MODEL/NAME are the file's


def test_a_variable_from_an_unread_environment_file_is_refused_by_name() -> None:
    with pytest.raises(ConfigError, match=r"\$MODEL, set by EnvironmentFile=/etc/default/sglang"):
        parse_unit(UNIT, UnitContext(unit="sglang.service"))


def test_a_variable_nothing_sets_is_refused() -> None:
    unit = "[Service]\nExecStart=/usr/bin/python3 -m sglang.launch_server --model-path $NOPE\n"
    with pytest.raises(ConfigError, match=r"\$NOPE, which no Environment="):
        parse_unit(unit)


def test_variable_expansion_follows_systemd() -> None:
    unit = (
        "[Service]\n"
        'Environment="ARGS=--tp-size 4 --port 31000" MODEL=/m\n'
        "ExecStart=/usr/bin/python3 -m sglang.launch_server --model-path ${MODEL} $ARGS "
        "--served-model-name $$literal\n"
    )
    config = parse_unit(unit)
    assert config.model_path == "/m" and config.tp_size == 4 and config.port == 31000
    assert config.extra_args[-1] == "$literal"


def test_environment_files_override_environment_lines() -> None:
    unit = (
        "[Service]\nEnvironment=MODEL=/from-unit\nEnvironmentFile=-/etc/default/x\n"
        "ExecStart=/usr/bin/python3 -m sglang.launch_server --model-path $MODEL\n"
    )
    context = UnitContext(env_files={"/etc/default/x": "MODEL=/from-file\n"})
    assert parse_unit(unit, context).model_path == "/from-file"


def test_two_execstart_lines_are_refused_and_a_reset_is_not() -> None:
    two = (
        "[Service]\nExecStart=/usr/bin/python3 -m sglang.launch_server --model-path /a\n"
        "ExecStart=/usr/bin/python3 -m sglang.launch_server --model-path /b\n"
    )
    with pytest.raises(ConfigError, match="is given 2 times; systemd refuses"):
        parse_unit(two)
    reset = (
        "[Service]\nExecStart=/usr/bin/python3 -m sglang.launch_server --model-path /a\n"
        "[Service]\nExecStart=\n"
        "ExecStart=/usr/bin/python3 -m sglang.launch_server --model-path /b\n"
    )
    assert parse_unit(reset).model_path == "/b"


def test_specifiers_are_resolved_or_refused() -> None:
    unit = (
        "[Service]\nExecStart=/usr/bin/python3 -m sglang.launch_server --model-path %h/models "
        "--served-model-name %i --download-dir %S/%p\n"
    )
    system = UnitContext(unit="sglang@qwen.service", fragment="/etc/systemd/system/sglang@.service")
    config = parse_unit(unit, system)
    assert config.model_path == "/root/models"
    assert config.extra_args == ("--served-model-name", "qwen", "--download-dir", "/var/lib/sglang")
    user = UnitContext(unit="sglang@qwen.service", scope="user", facts={"h": "/home/ada"})
    assert parse_unit(unit, user).model_path == "/home/ada/models"
    with pytest.raises(ConfigError, match="specifier %h"):
        parse_unit(unit, UnitContext(unit="sglang@qwen.service"))  # scope unknown
    escaped = "[Service]\nExecStart=/usr/bin/python3 -m sglang.launch_server --model-path /m%%x\n"
    assert parse_unit(escaped).model_path == "/m%x"


@pytest.mark.parametrize("char", ["\u2028", "\x85", "\x0b", "\x1c", "\u2029"])
def test_lines_split_at_newlines_only(char: str) -> None:
    unit = (
        f"[Service]\nEnvironment=NOTE=a{char}b\n"
        "ExecStart=/usr/bin/python3 -m sglang.launch_server --model-path /m\n"
    )
    assert len(unit_lines(unit)) == 3
    assert dict(parse_unit(unit).env)["NOTE"] == f"a{char}b"


def test_environment_file_syntax() -> None:
    text = (
        '# comment\n; also\nA=1\nexport B = two\nC=\'single $x\'\nD="dq \\"q\\" \\$y"\n'
        "E=long \\\nvalue\n"
    )
    assert parse_env_file(text) == {
        "A": "1",
        "B": "two",
        "C": "single $x",
        "D": 'dq "q" $y',
        "E": "long value",
    }


def test_the_edit_keeps_references_the_user_wrote() -> None:
    config = parse_unit(UNIT + "\n" + DROPIN, CONTEXT)
    edited = edit_unit(
        UNIT,
        dataclasses.replace(config, speculative_num_steps=5),
        env_file_path="/var/backups/specconsole/sglang.service-env",
        dropins=DROPIN,
        context=CONTEXT,
    ).text
    changed = [
        (a, b) for a, b in zip(UNIT.splitlines(), edited.splitlines(), strict=False) if a != b
    ]
    assert changed == [("    --speculative-num-steps 3 \\", "    --speculative-num-steps 5 \\")]
    assert "--model-path $MODEL" in edited and "${NAME}-prod" in edited
    assert "EnvironmentFile=/etc/default/sglang" in edited and "$$" not in edited


def test_validate_and_render_refuse_what_they_cannot_know(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "sglang.service"
    path.write_text(UNIT)
    for command in (["validate", str(path)], ["render", str(path), "--as", "unit"]):
        assert main(command) == 2
        out = capsys.readouterr()
        assert "$MODEL, set by EnvironmentFile=/etc/default/sglang" in out.err + out.out
        assert "$$MODEL" not in out.out
