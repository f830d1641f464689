"""The vLLM engine's own knowledge: its release asked of the box and of the server, the
per-batch-size K (vLLM's rules and texts, rendered and read back), its crash remedies in its
own words, its vocabulary and its counters."""

from __future__ import annotations

import dataclasses
import json

import pytest

from specconsole.core.config.model import ServerConfig, config_from_table
from specconsole.core.config.render import to_argv, to_command
from specconsole.core.config.validation import validate
from specconsole.core.engine.registry import get_engine
from specconsole.core.engine.vocabulary import field_short
from specconsole.core.launch.command import parse_command
from specconsole.core.logs.events import FatalCause
from specconsole.core.logs.parser import parse_lines

VLLM = get_engine("vllm")
VLLM_KEYS = {f.name for f in VLLM.option_fields}
BASE = {
    "engine": "vllm",
    "model_path": "/models/target",
    "method": "eagle3",
    "speculative_model": "/models/draft",
    "num_speculative_tokens": 5,
}


def _errors(config: ServerConfig) -> list[tuple[str | None, str]]:
    return [(i.field, i.message) for i in validate(config) if i.severity.value == "error"]


def test_its_release_is_asked_through_the_launchers_python_and_read_from_version() -> None:
    python, dash_c, script = VLLM.detect_command("/opt/venv/bin/python")
    assert (python, dash_c) == ("/opt/venv/bin/python", "-c")
    assert "_version.py" in script and "__import__('vllm').__version__" in script
    noisy = "INFO 11-21 08:40:02 [__init__.py:216] Automatically detected platform cuda.\n0.11.0\n"
    assert VLLM.parse_release(noisy) == "0.11.0"
    assert VLLM.parse_release("ModuleNotFoundError: No module named 'vllm'") is None
    assert VLLM.release_from_server_info({"version": "0.34.0"}) == "0.34.0"
    assert VLLM.release_from_server_info({"version": "dev"}) is None
    assert VLLM.endpoints.server_info == "/version" and VLLM.endpoints.flush_cache is None
    config = config_from_table(BASE)
    assert VLLM.with_release(config, "0.34.0").engine_version == "0.34.0"
    assert VLLM.with_release(dataclasses.replace(config, engine_version="0.11.0"), "0.34.0") == (
        dataclasses.replace(config, engine_version="0.11.0")
    )


def test_its_counters_are_declared_as_data() -> None:
    counters = VLLM.endpoints.spec_counters
    assert counters is not None
    assert counters.drafts == "vllm:spec_decode_num_drafts_total"
    assert counters.per_position == "vllm:spec_decode_num_accepted_tokens_per_pos_total"
    assert counters.position_label == "position"


@pytest.mark.parametrize(
    "text",
    [
        "1-8:5,9-64:3,65-1024:1",
        "[[1, 8, 5], [9, 64, 3], [65, 1024, 1]]",
        " 1-8:5, 9-64:3,65-1024:1 ",
    ],
)
def test_a_k_per_batch_size_renders_in_the_json_and_reads_back(text: str) -> None:
    config = config_from_table({**BASE, "num_speculative_tokens_per_batch_size": text})
    assert not _errors(config)
    argv = to_argv(config)
    spec = json.loads(argv[argv.index("--speculative-config") + 1])
    assert spec["num_speculative_tokens_per_batch_size"] == [[1, 8, 5], [9, 64, 3], [65, 1024, 1]]
    normalized, _ = VLLM.normalize(config)
    assert normalized.num_speculative_tokens_per_batch_size == "1-8:5,9-64:3,65-1024:1"
    assert parse_command(to_command(normalized)) == normalized


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("2-8:5", "The first batch-size range must start at 1"),
        ("1-8:5,8-64:3", "Batch-size ranges must be non-overlapping and sorted."),
        ("1-8:-1", "values must be >= 0."),
        ("8-1:2", "Batch-size range start must be <= end for (8, 1, 2)."),
        ("1-8", "is not START-END:K"),
        ("[[1, 8]]", "must be a 3-item sequence"),
    ],
)
def test_vllms_refusals_of_a_schedule_in_its_words(text: str, said: str) -> None:
    config = config_from_table({**BASE, "num_speculative_tokens_per_batch_size": text})
    errors = _errors(config)
    assert any(f == "num_speculative_tokens_per_batch_size" and said in m for f, m in errors), (
        errors
    )


def test_a_release_without_the_key_is_told_and_a_k_above_the_maximum_is_capped() -> None:
    old = config_from_table(
        {**BASE, "engine_version": "0.11.0", "num_speculative_tokens_per_batch_size": "1-1024:3"}
    )
    assert any(
        "vLLM 0.11.0 has no num_speculative_tokens_per_batch_size" in m for _f, m in _errors(old)
    )
    capped = config_from_table({**BASE, "num_speculative_tokens_per_batch_size": "1-8:7,9-1024:2"})
    notes = [i.message for i in validate(capped) if i.severity.value == "notice"]
    assert any("caps each K at num_speculative_tokens (5)" in n for n in notes), notes


@pytest.mark.parametrize(
    ("release", "severity"),
    [("0.11.0", "error"), ("0.32.0", "error"), (None, "warning"), ("0.34.0", None)],
)
def test_a_k_beyond_the_rejection_samplers_cap_is_refused_where_the_release_asserts_it(
    release: str | None, severity: str | None
) -> None:
    """The real 0.32 server starts with K 4096 and dies on its first drafting request
    (tests/data/vllm/runtime-huge-k.log): refused before deploy on a release that asserts
    ``max_spec_len <= 128``, warned while the release is unknown, allowed from 0.34."""
    table = {**BASE, "method": "ngram", "num_speculative_tokens": 129}
    del table["speculative_model"]
    if release:
        table["engine_version"] = release
    told = [i for i in validate(config_from_table(table)) if i.field == "num_speculative_tokens"]
    if severity is None:
        assert not told, told
        return
    (issue,) = told
    assert issue.severity.value == severity
    assert "at most 128 draft tokens" in issue.message, issue.message
    assert "set num_speculative_tokens to 128 or less" in (issue.fix or ""), issue
    at_cap = {**table, "num_speculative_tokens": 128}
    assert not [
        i for i in validate(config_from_table(at_cap)) if i.field == "num_speculative_tokens"
    ]


def test_crash_remedies_speak_vllm_and_change_the_keys_they_name() -> None:
    head = "(EngineCore_DP0 pid=7) ERROR 10-09 14:02:57 [core.py:708] "
    log = [
        head + "EngineCore failed to start.",
        head + "Traceback (most recent call last):",
        head + "ValueError: No available memory for the cache blocks. Try increasing "
        "`gpu_memory_utilization` when initializing the engine.",
    ]
    (fatal,) = [e for e in parse_lines(log, engine="vllm") if e.kind == "fatal"]
    assert fatal.cause == FatalCause.KV_CACHE_NO_MEMORY
    texts = [f.text for f in fatal.fixes]
    assert any("gpu_memory_utilization" in t for t in texts), texts
    assert any("max_model_len" in t for t in texts), texts
    from specconsole.engines.vllm.fatal import FIXES

    for fixes in FIXES.values():
        for fix in fixes:
            assert "SGLang" not in fix.text and "mem_fraction_static" not in fix.text, fix
            for field, _value in fix.changes:
                assert field in fix.text and field in VLLM_KEYS, fix


def test_its_keys_are_its_own_words_with_its_abbreviations() -> None:
    for key in ("num_speculative_tokens", "gpu_memory_utilization", "max_num_seqs", "method"):
        assert key in VLLM_KEYS
    assert field_short("vllm", "num_speculative_tokens") == "spec-tokens"
    assert field_short("sglang", "speculative_num_steps") == "steps"
    by_name = {f.name: f for f in VLLM.editor_fields(None)}
    assert by_name["gpu_memory_utilization"].flag == "--gpu-memory-utilization"
    assert by_name["num_speculative_tokens"].flag == "--speculative-config"
    assert by_name["num_speculative_tokens"].note == "num_speculative_tokens in its JSON"


def test_the_simulators_vllm_command_reads_back_as_vllm() -> None:
    config = ServerConfig(
        model_path="/models/target",
        engine="vllm",
        method="eagle3",
        speculative_model="/models/draft",
        num_speculative_tokens=3,
        launcher="/venv/bin/python -m specconsole.sim vllm serve",
        port=8123,
    )
    argv = to_argv(config)
    assert argv[:6] == [
        "/venv/bin/python",
        "-m",
        "specconsole.sim",
        "vllm",
        "serve",
        "/models/target",
    ]
    back = parse_command(to_command(config))
    assert back.engine == "vllm" and back.num_speculative_tokens == 3 and back.port == 8123
    assert back.launcher == config.launcher
