"""Editing the user's own unit: only managed words change, everything else stays byte for
byte (issue 19, "edit, don't replace")."""

from __future__ import annotations

import dataclasses
import difflib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from specconsole.core.config.errors import ConfigError
from specconsole.core.config.model import ServerConfig
from specconsole.core.config.render import to_argv
from specconsole.core.config.secrets import REDACTED, env_file_text, is_secret_name, redact_env
from specconsole.core.engine.registry import engine_names
from specconsole.core.launch.systemd import parse_unit, to_unit
from specconsole.core.launch.unit import edit_unit, split_cat
from specconsole.core.launch.unit_exec import word_spans
from tests.engines.described import carried, configs

ENV_FILE = "/var/backups/specconsole/sglang.service-env"

HAND_WRITTEN = """\
# my own unit, do not lose this comment
[Unit]
Description=My SGLang (hand-written)
After=network-online.target nvidia-persistenced.service

[Service]
User=sglang
Group=sglang
Environment=HF_HOME=/tmp/hf "OMP_NUM_THREADS=4"
EnvironmentFile=-/etc/default/sglang
ExecStart=/opt/venv/bin/python -m sglang.launch_server \\
    --model-path /models/llama \\
    --tp 2 \\
    --speculative-algorithm EAGLE3 \\
    --speculative-num-steps=3 \\
    --enable-metrics \\
    --port 30000
LimitNOFILE=1048576
Restart=on-failure

[Install]
WantedBy=multi-user.target
"""


def changed_lines(old: str, new: str) -> tuple[list[str], list[str]]:
    removed, added = [], []
    for line in difflib.unified_diff(old.splitlines(), new.splitlines(), lineterm="", n=0):
        if line.startswith("-") and not line.startswith("---"):
            removed.append(line[1:])
        elif line.startswith("+") and not line.startswith("+++"):
            added.append(line[1:])
    return removed, added


def edit(text: str, config: ServerConfig, **kw: object) -> str:
    return edit_unit(text, config, env_file_path=ENV_FILE, **kw).text  # type: ignore[arg-type]


def test_the_units_own_configuration_changes_nothing() -> None:
    config = parse_unit(HAND_WRITTEN)
    assert edit(HAND_WRITTEN, config) == HAND_WRITTEN
    single = HAND_WRITTEN.replace(" \\\n    ", " ")
    assert edit(single, parse_unit(single)) == single


def test_a_detected_engine_release_does_not_stop_the_edit() -> None:
    """The controller stamps the box's SGLang release on each configuration once it knows
    it (engine_version is not on the command line): the edit still runs it."""
    base = parse_unit(HAND_WRITTEN)
    new = dataclasses.replace(base, speculative_num_steps=5, engine_version="0.5.4")
    removed, added = changed_lines(HAND_WRITTEN, edit(HAND_WRITTEN, new))
    assert removed == ["    --speculative-num-steps=3 \\"]
    assert added == ["    --speculative-num-steps=5 \\"]


def test_only_the_changed_flags_change_in_the_users_spelling() -> None:
    base = parse_unit(HAND_WRITTEN)
    new = dataclasses.replace(base, tp_size=4, speculative_num_steps=5, mem_fraction_static=0.8)
    removed, added = changed_lines(HAND_WRITTEN, edit(HAND_WRITTEN, new))
    assert removed == ["    --tp 2 \\", "    --speculative-num-steps=3 \\", "    --port 30000"]
    assert added == [
        "    --tp 4 \\",
        "    --speculative-num-steps=5 \\",
        "    --port 30000 \\",
        "    --mem-fraction-static 0.8",
    ]


def test_equal_values_written_differently_are_left_alone() -> None:
    text = HAND_WRITTEN.replace("--tp 2", "--tp 2 --mem-fraction-static 0.80")
    config = dataclasses.replace(parse_unit(text), mem_fraction_static=0.8)
    assert edit(text, config) == text


def test_a_dropped_flag_goes_and_a_new_launcher_replaces_the_head() -> None:
    base = parse_unit(HAND_WRITTEN)
    new = dataclasses.replace(base, extra_args=(), launcher="python3 -m sglang.launch_server")
    removed, added = changed_lines(HAND_WRITTEN, edit(HAND_WRITTEN, new))
    assert removed == [
        "ExecStart=/opt/venv/bin/python -m sglang.launch_server \\",
        "    --enable-metrics \\",
    ]
    assert added == ["ExecStart=/usr/bin/env python3 -m sglang.launch_server \\"]


def test_environment_the_config_names_is_edited_in_place_and_others_stay() -> None:
    base = parse_unit(HAND_WRITTEN)
    env = (("HF_HOME", "/data/hf"), ("CUDA_VISIBLE_DEVICES", "0,1"))
    removed, added = changed_lines(
        HAND_WRITTEN, edit(HAND_WRITTEN, dataclasses.replace(base, env=env))
    )
    assert removed == ['Environment=HF_HOME=/tmp/hf "OMP_NUM_THREADS=4"']
    # OMP_NUM_THREADS is not named by the configuration: it is the user's and stays.
    assert added == [
        'Environment=HF_HOME=/data/hf "OMP_NUM_THREADS=4"',
        "Environment=CUDA_VISIBLE_DEVICES=0,1",
    ]


def test_secrets_go_to_the_environment_file_never_inline() -> None:
    text = HAND_WRITTEN.replace("Group=sglang\n", "Group=sglang\nEnvironment=HF_TOKEN=old\n")
    base = parse_unit(text)
    config = dataclasses.replace(
        base, env=(*base.env, ("HF_TOKEN", "hf_planted_9f3"), ("MY_PW", "it's"))
    )
    result = edit_unit(text, config, env_file_path=ENV_FILE, secret_env=("MY_PW",))
    assert "hf_planted_9f3" not in result.text and "HF_TOKEN" not in result.text
    removed, added = changed_lines(text, result.text)
    assert removed == ["Environment=HF_TOKEN=old"]
    assert added == [f"EnvironmentFile={ENV_FILE}"]
    assert result.env_file is not None
    assert "HF_TOKEN='hf_planted_9f3'" in result.env_file
    assert 'MY_PW="it\'s"' in result.env_file
    # Without secrets the line is removed again, the rest untouched.
    again = edit_unit(result.text, parse_unit(HAND_WRITTEN), env_file_path=ENV_FILE)
    assert again.env_file is None
    assert again.text == HAND_WRITTEN


def test_a_variable_a_drop_in_already_sets_is_not_added() -> None:
    dropins = "[Service]\nEnvironment=NCCL_DEBUG=WARN\nLimitMEMLOCK=infinity\n"
    config = dataclasses.replace(
        parse_unit(HAND_WRITTEN), env=(("HF_HOME", "/tmp/hf"), ("NCCL_DEBUG", "WARN"))
    )
    assert edit(HAND_WRITTEN, config, dropins=dropins) == HAND_WRITTEN


def test_a_drop_in_that_replaces_exec_start_is_a_clear_error() -> None:
    dropins = "[Service]\nExecStart=\nExecStart=/bin/other --model-path x\n"
    config = dataclasses.replace(parse_unit(HAND_WRITTEN), tp_size=8)
    with pytest.raises(ConfigError, match="drop-in"):
        edit(HAND_WRITTEN, config, dropins=dropins)


def test_a_unit_without_exec_start_is_refused() -> None:
    with pytest.raises(ConfigError, match="ExecStart"):
        edit("[Service]\nUser=x\n", ServerConfig(model_path="m"))


def test_dollar_and_percent_in_new_values_are_escaped() -> None:
    config = dataclasses.replace(parse_unit(HAND_WRITTEN), model_path="/m/$HOME/50%")
    text = edit(HAND_WRITTEN, config)
    assert '    --model-path "/m/$$HOME/50%%" \\\n' in text
    assert parse_unit(text).model_path == "/m/$HOME/50%"


def test_split_cat_separates_the_unit_from_its_drop_ins() -> None:
    cat = (
        "# /etc/systemd/system/sglang.service\n[Service]\nExecStart=/bin/x\n\n"
        "# /etc/systemd/system/sglang.service.d/limits.conf\n[Service]\nLimitNOFILE=9\n"
    )
    main, dropins = split_cat(cat)
    assert main == "[Service]\nExecStart=/bin/x\n"
    assert dropins == "[Service]\nLimitNOFILE=9\n"
    assert split_cat("") == (None, "")


def test_word_spans_follow_quotes_and_continuations() -> None:
    text = "a \"b c\" \\\n  d\\ e 'f'"
    assert [text[s:e] for s, e in word_spans(text)] == ["a", '"b c"', "d\\ e", "'f'"]


def test_secret_names_and_redaction() -> None:
    assert all(is_secret_name(n) for n in ("HF_TOKEN", "OPENAI_API_KEY", "DB_PASSWORD"))
    assert not any(is_secret_name(n) for n in ("HF_HOME", "CUDA_VISIBLE_DEVICES"))
    assert not is_secret_name("TOKENIZERS_PARALLELISM")  # a tokenizer's setting, no token
    assert all(is_secret_name(n) for n in ("GITHUB_TOKEN", "TOKEN", "HF_TOKEN_PATH"))
    assert is_secret_name("MINE", ["MINE"])
    assert redact_env((("A", "1"),)) == (("A", REDACTED),)
    assert env_file_text([("A", 'x"$')]).endswith("A='x\"$'\n")


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_any_generated_unit_edits_to_any_configuration(data: st.DataObject) -> None:
    engine = data.draw(st.sampled_from(engine_names()))
    before = data.draw(configs(engine).filter(carried))
    after = data.draw(configs(engine).filter(carried))
    public = tuple((n, v) for n, v in before.env if not is_secret_name(n))
    text = to_unit(dataclasses.replace(before, env=public))
    assert edit(text, dataclasses.replace(before, env=public)) == text
    result = edit_unit(text, after, env_file_path=ENV_FILE)
    parsed = parse_unit(result.text)
    assert sorted(to_argv(parsed)) == sorted(
        to_argv(dataclasses.replace(after, user=parsed.user))
    ) or (parsed.host, parsed.port) == (after.host, after.port)
    env = dict(parsed.env)
    for name, value in after.env:
        if is_secret_name(name):
            assert name not in env and result.env_file and name in result.env_file
        else:
            assert env[name] == value
    # Lines outside ExecStart and Environment= never change.
    keep = [ln for ln in text.splitlines() if ln.startswith(("Description", "Restart", "Kill"))]
    assert all(ln in result.text.splitlines() for ln in keep)
