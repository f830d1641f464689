"""llama.cpp's engine package: its keys read and written, its command line in every
spelling, its rules, and its flags checked against the real binary's own ``--help``.

Why: llama-server is the first engine that is not SGLang-shaped (its knobs are its own
``[server]`` keys) and whose flags change faster than any release table (this generation
removed ``--draft-max``). The help text is the real build's (tests/data/llamacpp/).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from specconsole.core.config.capabilities import (
    FlagSet,
    flag_issues,
    parse_help,
    rendered_flags,
)
from specconsole.core.config.errors import ConfigError
from specconsole.core.config.model import ServerConfig, config_from_table, config_to_table
from specconsole.core.config.render import to_argv
from specconsole.core.config.validation import errors, validate
from specconsole.core.engine.registry import get_engine
from specconsole.core.launch.command import parse_command
from specconsole.core.launch.systemd import parse_unit
from specconsole.core.launch.unit import edit_unit
from specconsole.core.logs.fatal import FatalCause
from specconsole.core.machine.handlers.crash import useful_fixes
from specconsole.engines.llamacpp.fatal import FIXES

DATA = Path(__file__).resolve().parent.parent / "data" / "llamacpp"
HELP = parse_help((DATA / "llama-server-help.txt").read_text(), source="llama-server --help")
ENGINE = get_engine("llamacpp")

TABLE = {
    "engine": "llamacpp",
    "launcher": "/opt/llama/bin/llama-server",
    "model_path": "/models/target.gguf",
    "speculative_draft_model_path": "/models/draft.gguf",
    "spec_type": "draft-simple",
    "spec_draft_n_max": 4,
    "ctx_size": 2048,
    "parallel": 1,
    "threads": 1,
    "metrics": True,
    "port": 8080,
}

USERS_UNIT = """\
[Unit]
Description=llama-server with a draft (hand-written)

[Service]
Environment=LLAMA_CACHE=/var/cache/llama
ExecStart=/opt/llama/bin/llama-server -m /models/target.gguf \\
    -md /models/draft.gguf --spec-type draft-simple \\
    --spec-draft-n-max 4 -c 2048 -np 1 -t 1 -ngl 99 \\
    --metrics --host 127.0.0.1 --port 8080 -fa on
Restart=no

[Install]
WantedBy=multi-user.target
"""


def config(**changes: object) -> ServerConfig:
    return config_from_table({**TABLE, **changes})


def test_keys_read_render_and_read_back_in_any_spelling() -> None:
    c = config()
    assert (c.spec_type, c.spec_draft_n_max, c.ctx_size, c.metrics) == (
        "draft-simple",
        4,
        2048,
        True,
    )
    assert c.spec_draft_p_min is None  # declared, unset: llama-server's own default
    assert config_from_table(config_to_table(c)) == c
    argv = to_argv(c)
    assert argv[:5] == ["/opt/llama/bin/llama-server", "--model", "/models/target.gguf",
                        "--spec-draft-model", "/models/draft.gguf"]  # fmt: skip
    assert parse_command(argv) == c
    old_names = parse_command(
        "llama-server -m /t.gguf --model-draft /d.gguf --draft-max 8 --draft-min 1 -c 4096 "
        "-np 2 -t -1 -ngl all -ngld 99 -td 2 --metrics --port=9000 -fa on"
    )
    assert old_names.engine == "llamacpp"
    assert dict(old_names.options) == {
        "speculative_draft_model_path": "/d.gguf",
        "spec_draft_n_max": 8, "spec_draft_n_min": 1, "spec_draft_ngl": 99,
        "spec_draft_threads": 2, "ctx_size": 4096, "parallel": 2, "threads": -1,
        "n_gpu_layers": "all", "metrics": True,
    }  # fmt: skip
    assert old_names.port == 9000 and old_names.extra_args == ("-fa", "on")
    with pytest.raises(ConfigError, match="needs a value"):
        parse_command("llama-server -m /t.gguf -c")
    with pytest.raises(ConfigError, match="between 0 and 1"):
        parse_command("llama-server -m /t.gguf --spec-draft-p-min 3")


def test_a_hand_written_unit_imports_and_edits_keep_the_users_spelling() -> None:
    imported = parse_unit(USERS_UNIT)
    assert imported.engine == "llamacpp" and imported.n_gpu_layers == 99
    assert imported.extra_args == ("-fa", "on")
    swept = dataclasses.replace(
        imported,
        options=tuple((k, 16 if k == "spec_draft_n_max" else v) for k, v in imported.options),
    )
    edited = edit_unit(USERS_UNIT, swept, env_file_path="/var/backups/env").text
    changed = [
        (a, b) for a, b in zip(USERS_UNIT.splitlines(), edited.splitlines(), strict=True) if a != b
    ]
    assert changed == [
        ("    --spec-draft-n-max 4 -c 2048 -np 1 -t 1 -ngl 99 \\",
         "    --spec-draft-n-max 16 -c 2048 -np 1 -t 1 -ngl 99 \\"),
    ]  # fmt: skip
    assert parse_unit(edited) == swept


def test_rules_name_the_field_and_the_fix() -> None:
    assert errors(validate(config())) == []
    for key, fix in [
        ("context_length", "set ctx_size (-c) instead."),  # another engine's key: refused
        ("max_running_requests", "set parallel (the server's slots) instead."),
    ]:
        with pytest.raises(ConfigError) as refused:
            config(**{key: 8})
        assert refused.value.key == f"server.{key}" and refused.value.fix == fix
    (slots,) = errors(validate(config(parallel=1000)))
    assert slots.field == "parallel" and "n_seq_max must be <= 256" in slots.message
    (rates,) = errors(validate(config(spec_synth_rates="0.9,0.5", spec_draft_n_max=8)))
    assert rates.field == "spec_synth_rates" and "give 8 values" in rates.fix
    found = validate(config(extra_args=["--draft-max", "8"]))
    renamed = [i for i in found if "old name" in i.message]
    assert renamed and "set spec_draft_n_max = 8" in renamed[0].fix
    assert "--spec-draft-n-max" in renamed[0].fix
    quiet = validate(config(metrics=None))
    assert any(i.field == "metrics" and not i.blocking for i in quiet)


def test_speculation_silently_off_is_told_before_deploy() -> None:
    no_type = config(spec_type=None)
    assert "without spec_type" in ENGINE.speculation_off(no_type)
    assert ENGINE.verify_tokens(no_type) == 0
    warned = [i for i in validate(no_type) if i.field == "spec_type"]
    assert warned and not warned[0].blocking and 'spec_type = "draft-simple"' in warned[0].fix
    no_draft = dataclasses.replace(config(), speculative_draft_model_path=None)
    assert "requires a draft context" in ENGINE.speculation_off(no_draft)
    assert ENGINE.speculation_off(config()) is None and ENGINE.verify_tokens(config()) == 5
    plain = dataclasses.replace(config(spec_type=None), speculative_draft_model_path=None)
    assert ENGINE.speculation_off(plain) is None and ENGINE.verify_tokens(plain) == 0
    # a build from before --spec-type drafted whenever -md was given
    older = dataclasses.replace(
        no_type, box_flags=dataclasses.replace(HELP, accepted=HELP.accepted - {"--spec-type"})
    )
    assert ENGINE.speculation_off(older) is None and ENGINE.verify_tokens(older) == 5


def test_the_real_help_decides_spellings_and_refuses_what_the_build_lacks() -> None:
    assert HELP.accepts("--spec-draft-n-max") and HELP.accepts("-md")
    assert not HELP.accepts("--draft-max") and not HELP.accepts("-cd")
    assert "use --spec-draft-n-max or --spec-ngram-mod-n-max" in HELP.removed["--draft-max"]
    on_box = dataclasses.replace(config(), box_flags=HELP)
    assert flag_issues(on_box) == []
    assert all(HELP.accepts(flag) for flag in rendered_flags(on_box))
    # a plan rendered for this build with --draft-max: refused, the new spelling the fix
    plan = dataclasses.replace(on_box, extra_args=("--draft-max", "8"))
    (issue,) = [i for i in errors(validate(plan)) if "removed --draft-max" in i.message]
    assert issue.field == "extra_args"
    assert issue.fix == (
        "set spec_draft_n_max instead (rendered as --spec-draft-n-max) and remove --draft-max "
        "from extra_args."
    )
    # an older build without the new names gets the old ones; a key it has no name for is
    # refused naming the key
    old = dataclasses.replace(
        HELP,
        accepted=(HELP.accepted - {"--spec-draft-n-max", "--spec-type"}) | {"--draft-max"},
        removed={},
    )
    older = dataclasses.replace(config(), box_flags=old)
    assert "--draft-max" in to_argv(older) and "--spec-draft-n-max" not in to_argv(older)
    (lacking,) = flag_issues(older)
    assert lacking.field == "spec_type" and "does not accept --spec-type" in lacking.message


def test_the_speculative_types_are_the_ones_the_box_s_help_lists() -> None:
    listed = HELP.choices["--spec-type"]
    assert listed[:2] == ("none", "draft-simple") and "ngram-mod" in listed
    assert HELP.choices["--spec-draft-sampling"] == ("greedy", "probabilistic")
    assert FlagSet.from_dict(HELP.to_dict()).choices == HELP.choices  # the cached answer
    for spec_type in ("draft-simple", "ngram-simple", "ngram-mod", "ngram-map-k4v"):
        on_box = dataclasses.replace(config(spec_type=spec_type), box_flags=HELP)
        assert flag_issues(on_box) == [], spec_type
    # a build whose help lists no ngram-mod refuses it before anything is deployed
    older = dataclasses.replace(
        HELP, choices={**HELP.choices, "--spec-type": ("none", "draft-simple", "ngram-simple")}
    )
    asked = dataclasses.replace(config(spec_type="ngram-mod"), box_flags=older)
    (issue,) = flag_issues(asked)
    assert issue.field == "spec_type" and "does not list 'ngram-mod'" in issue.message
    assert issue.fix == "set spec_type to one of none, draft-simple, ngram-simple."
    assert issue in errors(validate(asked))  # validate says it too


def test_the_engine_counts_acceptance_where_the_load_generator_reads_it() -> None:
    counters = ENGINE.endpoints.spec_counters
    assert counters is not None and counters.output_tokens == "llamacpp:tokens_predicted_total"
    metrics = (DATA / "metrics-after.txt").read_text()
    for name in (counters.drafts, counters.draft_tokens, counters.accepted, counters.per_position):
        assert f"{name}" in metrics
    assert ENGINE.endpoints.server_info is None and ENGINE.endpoints.flush_cache is None
    assert ENGINE.endpoints.apis[0] in ("chat", "completions")


def test_leave_fit_on_is_offered_only_where_fit_could_change_the_outcome() -> None:
    """fit lowers only the sizes left unset, and only when it is off can leaving it on help:
    the real server died the same way with an explicit ctx_size and fit on."""
    kv = FIXES[FatalCause.KV_CACHE_NO_MEMORY]
    fit = next(f.text for f in kv if f.text.startswith("Leave fit on"))
    base = ServerConfig(model_path="/m/target.gguf", engine="llamacpp")
    assert fit not in useful_fixes(base, kv)  # fit already on (its default): it did not help
    off = dataclasses.replace(base, fit="off")
    assert fit in useful_fixes(off, kv)
    assert fit not in useful_fixes(dataclasses.replace(off, ctx_size=65536), kv)
    assert any(f.startswith("Lower ctx_size") for f in useful_fixes(off, kv))
