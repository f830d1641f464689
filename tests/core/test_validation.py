"""Every validation rule, and SGLang's auto-adjustments (normalize)."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given
from hypothesis import strategies as st

from specconsole.core.config.issues import Issue, Severity
from specconsole.core.config.model import ServerConfig, config_from_table
from specconsole.core.config.validation import errors, normalized, validate
from specconsole.core.engine.registry import engine_names
from specconsole.engines.sglang.keys import KEYS, SpecAlgorithm
from specconsole.engines.sglang.normalize import MSG_MAX_RUNNING_RESET
from specconsole.engines.sglang.rules import MSG_DRAFT_ADJUSTED

normalize = normalized
"""The configuration as its engine will run it (what a trial records)."""


EAGLE3 = ServerConfig(
    model_path="/models/Llama-3.1-8B-Instruct",
    speculative_algorithm=SpecAlgorithm.EAGLE3,
    speculative_draft_model_path="/models/EAGLE3",
    speculative_num_steps=3,
    speculative_eagle_topk=4,
    speculative_num_draft_tokens=8,
    max_running_requests=64,
    mem_fraction_static=0.85,
)


VLLM = ServerConfig(
    model_path="/models/Llama-3.1-8B-Instruct",
    engine="vllm",
    method="eagle3",
    speculative_model="/models/EAGLE3",
    num_speculative_tokens=3,
    max_num_seqs=64,
    gpu_memory_utilization=0.85,
)
"""The same launch in vLLM's keys."""


def cfg(**changes: object) -> ServerConfig:
    """EAGLE3 with ``changes`` (VLLM's with them when they name vLLM as the engine)."""
    base = VLLM if changes.get("engine") == "vllm" else EAGLE3
    return dataclasses.replace(base, **changes)  # type: ignore[arg-type]


def find(issues: list[Issue], field: str | None, severity: Severity) -> list[Issue]:
    return [i for i in issues if i.field == field and i.severity is severity]


def test_good_config_has_no_errors_or_warnings() -> None:
    issues = validate(EAGLE3)
    assert [i.severity for i in issues] == [Severity.NOTICE]  # the topk>1 cost notice
    assert validate(ServerConfig(model_path="m")) == []


# (changes, field, severity, text in message, text in fix)
RULES: list[tuple[dict, str | None, Severity, str, str]] = [
    # all three tree sizes or none
    (
        {"speculative_num_draft_tokens": None},
        "speculative_num_draft_tokens",
        Severity.ERROR,
        "set all three",
        "together",
    ),
    (
        {"speculative_eagle_topk": None, "speculative_num_draft_tokens": None},
        "speculative_eagle_topk",
        Severity.ERROR,
        "are missing",
        "remove all three",
    ),
    # topk == 1 => draft = steps + 1 (adjusted by SGLang, a notice)
    (
        {"speculative_eagle_topk": 1, "speculative_num_draft_tokens": 8},
        "speculative_num_draft_tokens",
        Severity.NOTICE,
        MSG_DRAFT_ADJUSTED,
        "speculative_num_draft_tokens = 4",
    ),
    # draft <= steps * topk + 1
    (
        {"speculative_eagle_topk": 2, "speculative_num_draft_tokens": 8},
        "speculative_num_draft_tokens",
        Severity.ERROR,
        "illegal memory access",
        "<= 7",
    ),
    # trtllm_mha with topk > 1
    (
        {"attention_backend": "trtllm_mha"},
        "speculative_eagle_topk",
        Severity.ERROR,
        "trtllm_mha backend only supports topk = 1",
        "speculative_eagle_topk = 1",
    ),
    (
        {"extra_args": ("--decode-attention-backend", "trtllm_mha")},
        "speculative_eagle_topk",
        Severity.ERROR,
        "trtllm_mha",
        "topk = 1",
    ),
    # no explicit max_running_requests with speculative decoding
    ({"max_running_requests": None}, "max_running_requests", Severity.WARNING, "48", "explicitly"),
    # mem fraction in (0, 1)
    (
        {"mem_fraction_static": 1.0},
        "mem_fraction_static",
        Severity.ERROR,
        "between 0 and 1",
        "0.85",
    ),
    (
        {"mem_fraction_static": 0.0},
        "mem_fraction_static",
        Severity.ERROR,
        "between 0 and 1",
        "0.85",
    ),
    (
        {"mem_fraction_static": float("nan")},
        "mem_fraction_static",
        Severity.ERROR,
        "between",
        "0.85",
    ),
    ({"mem_fraction_static": "0.8"}, "mem_fraction_static", Severity.ERROR, "number", "0.85"),
    # positive integers
    (
        {"speculative_num_steps": 0},
        "speculative_num_steps",
        Severity.ERROR,
        "positive",
        "1 or more",
    ),
    (
        {"speculative_eagle_topk": -1},
        "speculative_eagle_topk",
        Severity.ERROR,
        "positive",
        "1 or more",
    ),
    ({"cuda_graph_max_bs": 0}, "cuda_graph_max_bs", Severity.ERROR, "positive", "1 or more"),
    ({"max_running_requests": 0}, "max_running_requests", Severity.ERROR, "positive", "1 or more"),
    ({"tp_size": 0}, "tp_size", Severity.ERROR, "positive", "1 or more"),
    ({"context_length": -5}, "context_length", Severity.ERROR, "positive", "1 or more"),
    ({"tp_size": "2"}, "tp_size", Severity.ERROR, "integer", "whole number"),
    ({"tp_size": True}, "tp_size", Severity.ERROR, "integer", "whole number"),
    ({"port": 70000}, "port", Severity.ERROR, "1-65535", "port = 30000"),
    # required pieces
    ({"model_path": ""}, "model_path", Severity.ERROR, "no model", "model_path ="),
    ({"model_path": "--model"}, "model_path", Severity.ERROR, "flag", "model"),
    (
        {"speculative_draft_model_path": None},
        "speculative_draft_model_path",
        Severity.ERROR,
        "needs a draft model",
        "speculative_draft_model_path",
    ),
    ({"launcher": " "}, "launcher", Severity.ERROR, "no launcher", "sglang.launch_server"),
    ({"host": ""}, "host", Severity.ERROR, "no host", "127.0.0.1"),
    ({"working_directory": "opt/x"}, "working_directory", Severity.ERROR, "absolute", "full path"),
    ({"working_directory": "/opt/x\\"}, "working_directory", Severity.ERROR, "backslash", "rename"),
    ({"user": "two words"}, "user", Severity.ERROR, "account", "user name"),
    ({"env": (("1BAD", "x"),)}, "env", Severity.ERROR, "valid variable", "letters"),
    ({"env": (("A", "x"), ("A", "y"))}, "env", Severity.ERROR, "twice", "keep one"),
    ({"env": (("A", 1),)}, "env", Severity.ERROR, "string", "quote"),
    ({"extra_args": ("--tp-size", "2")}, "extra_args", Severity.ERROR, "modelled", "set tp_size"),
    (
        {"extra_args": ("--mem-fraction-static=0.5",)},
        "extra_args",
        Severity.ERROR,
        "modelled",
        "mem_fraction_static",
    ),
    ({"extra_args": [1]}, "extra_args", Severity.ERROR, "list of strings", "extra_args"),
    # SGLang incompatibilities
    (
        {"extra_args": ("--pp-size", "2")},
        "extra_args",
        Severity.ERROR,
        "Pipeline parallelism",
        "--pp-size",
    ),
    (
        {
            "speculative_algorithm": SpecAlgorithm.STANDALONE,
            "extra_args": ("--enable-dp-attention",),
        },
        "extra_args",
        Severity.ERROR,
        "standalone",
        "dp-attention",
    ),
    (
        {"extra_args": ("--enable-mixed-chunk",)},
        "extra_args",
        Severity.WARNING,
        "Mixed chunked",
        "remove",
    ),
    (
        {"extra_args": ("--page-size", "16"), "attention_backend": "torch_native"},
        "attention_backend",
        Severity.ERROR,
        "page_size > 1",
        "backends",
    ),
    (
        {"cuda_graph_max_bs": 16},
        "cuda_graph_max_bs",
        Severity.NOTICE,
        "without CUDA graphs",
        "raise cuda_graph_max_bs",
    ),
    (
        {"speculative_eagle_topk": 4},
        "speculative_eagle_topk",
        Severity.NOTICE,
        "more memory",
        "topk=1",
    ),
    # speculative fields without an algorithm
    (
        {"speculative_algorithm": None},
        "speculative_num_steps",
        Severity.WARNING,
        "ignored",
        "speculative_algorithm",
    ),
    # NGRAM specifics
    (
        {"speculative_algorithm": SpecAlgorithm.NGRAM},
        "speculative_draft_model_path",
        Severity.WARNING,
        "NGRAM",
        "remove",
    ),
    (
        {"speculative_algorithm": SpecAlgorithm.NGRAM},
        "speculative_num_steps",
        Severity.WARNING,
        "NGRAM ignores",
        "remove",
    ),
    (
        {"speculative_algorithm": SpecAlgorithm.NGRAM, "extra_args": ("--enable-dp-attention",)},
        "extra_args",
        Severity.ERROR,
        "NGRAM",
        "dp-attention",
    ),
    # vLLM rules (in vLLM's own keys: cfg() of VLLM's)
    (
        {"engine": "vllm", "num_speculative_tokens": None},
        "num_speculative_tokens",
        Severity.ERROR,
        "num_speculative_tokens",
        "num_speculative_tokens",
    ),
    (
        {"engine": "vllm", "gpu_memory_utilization": 1.5},
        "gpu_memory_utilization",
        Severity.ERROR,
        "between 0 and 1",
        "0.9",
    ),
    (
        {"engine": "vllm", "extra_args": ("--max-num-seqs", "8")},
        "extra_args",
        Severity.ERROR,
        "modelled",
        "max_num_seqs",
    ),
    (
        {"engine": "vllm", "extra_args": ("--gpu_memory_utilization=0.5",)},
        "extra_args",
        Severity.ERROR,
        "modelled",
        "gpu_memory_utilization",
    ),
    (
        {"engine": "vllm", "method": "eagle", "speculative_model": None},
        "speculative_model",
        Severity.ERROR,
        "eagle method needs a draft model",
        "speculative_model",
    ),
    ({"engine": "tensorrt"}, "engine", Severity.ERROR, "unknown engine", "vllm"),
    (
        {"speculative_algorithm": "MEDUSA"},
        "speculative_algorithm",
        Severity.ERROR,
        "unknown",
        "EAGLE3",
    ),
]


@pytest.mark.parametrize(("changes", "field", "severity", "message", "fix"), RULES)
def test_rule(changes: dict, field: str | None, severity: Severity, message: str, fix: str) -> None:
    issues = validate(cfg(**changes))
    matching = [i for i in find(issues, field, severity) if message in i.message]
    assert matching, issues
    assert fix in matching[0].fix


def test_sglang_has_no_48_warning_for_vllm() -> None:
    issues = validate(cfg(engine="vllm", max_num_seqs=None))
    assert not find(issues, "max_num_seqs", Severity.WARNING)
    assert errors(issues) == []


def test_an_old_vllm_table_reads_with_a_notice_naming_each_new_key() -> None:
    """A vLLM [server] table written before the keys spoke vLLM: each SGLang-named key is
    read as vLLM's own with a deprecation notice naming it; keys vLLM never rendered are
    dropped with one; a record (no notes collected) reads the same, silently."""
    old = {
        "engine": "vllm",
        "model_path": "/m",
        "speculative_algorithm": "EAGLE3",
        "speculative_draft_model_path": "/d",
        "speculative_num_steps": 3,
        "speculative_eagle_topk": 1,
        "mem_fraction_static": 0.9,
        "max_running_requests": 64,
        "tp_size": 2,
        "context_length": 8192,
    }
    notes: list[Issue] = []
    config = config_from_table(old, notes)
    assert config == ServerConfig(
        model_path="/m",
        engine="vllm",
        method="eagle3",
        speculative_model="/d",
        num_speculative_tokens=3,
        gpu_memory_utilization=0.9,
        max_num_seqs=64,
        tensor_parallel_size=2,
        max_model_len=8192,
    )
    said = {i.field: i for i in notes}
    for former, key in [
        ("speculative_algorithm", "method"),
        ("speculative_draft_model_path", "speculative_model"),
        ("speculative_num_steps", "num_speculative_tokens"),
        ("mem_fraction_static", "gpu_memory_utilization"),
        ("max_running_requests", "max_num_seqs"),
        ("tp_size", "tensor_parallel_size"),
        ("context_length", "max_model_len"),
    ]:
        assert said[former].severity is Severity.WARNING
        assert f"write {key} instead" in said[former].fix, said[former]
    assert "never a vLLM setting" in said["speculative_eagle_topk"].message
    assert config_from_table(old) == config  # a record: the same, without notes
    assert errors(validate(config)) == []


def test_errors_sorted_first() -> None:
    issues = validate(cfg(tp_size=0, max_running_requests=None))
    severities = [i.severity for i in issues]
    assert severities == sorted(
        severities, key=[Severity.ERROR, Severity.WARNING, Severity.NOTICE].index
    )
    assert "tp_size" in str(issues[0]) and "Fix:" in str(issues[0])


def test_nextn_needs_no_draft_model() -> None:
    config = cfg(speculative_algorithm=SpecAlgorithm.NEXTN, speculative_draft_model_path=None)
    assert errors(validate(config)) == []


# --------------------------------------------------------------------------------------------
# normalize
# --------------------------------------------------------------------------------------------


def test_topk1_without_draft_tokens_is_filled_not_an_error() -> None:
    config = cfg(speculative_eagle_topk=1, speculative_num_draft_tokens=None)
    issues = validate(config)
    assert errors(issues) == []
    assert find(issues, "speculative_num_draft_tokens", Severity.NOTICE)
    normalized, _ = normalize(config)
    assert normalized.speculative_num_draft_tokens == 4


def test_normalize_topk1_adjusts_draft_tokens() -> None:
    config, notes = normalize(cfg(speculative_eagle_topk=1, speculative_num_draft_tokens=8))
    assert config.speculative_num_draft_tokens == 4
    assert [n.field for n in notes] == ["speculative_num_draft_tokens"]
    assert MSG_DRAFT_ADJUSTED in notes[0].message


@pytest.mark.parametrize(
    ("algo", "arch", "tree"),
    [
        (SpecAlgorithm.EAGLE3, None, (3, 1, 4)),
        (SpecAlgorithm.EAGLE, "Qwen2ForCausalLM", (3, 1, 4)),
        (SpecAlgorithm.EAGLE, "LlamaForCausalLM", (5, 4, 8)),
        (SpecAlgorithm.STANDALONE, "LlamaForCausalLM", (3, 1, 4)),
        (SpecAlgorithm.NEXTN, "DeepseekV3ForCausalLM", (3, 1, 4)),
    ],
)
def test_normalize_auto_tree(algo: SpecAlgorithm, arch: str | None, tree: tuple) -> None:
    config, notes = normalize(
        cfg(
            speculative_algorithm=algo,
            speculative_num_steps=None,
            speculative_eagle_topk=None,
            speculative_num_draft_tokens=None,
        ),
        arch,
    )
    assert (
        config.speculative_num_steps,
        config.speculative_eagle_topk,
        config.speculative_num_draft_tokens,
    ) == tree
    assert notes[0].severity is Severity.NOTICE and "SGLang chooses" in notes[0].message


def test_normalize_max_running_requests_48() -> None:
    config, notes = normalize(cfg(max_running_requests=None))
    assert config.max_running_requests == 48
    assert notes[-1].message == MSG_MAX_RUNNING_RESET


def test_normalize_ngram_default_draft_tokens() -> None:
    config, _ = normalize(
        ServerConfig(
            model_path="m", speculative_algorithm=SpecAlgorithm.NGRAM, max_running_requests=8
        )
    )
    assert config.speculative_num_draft_tokens == 12


def test_normalize_leaves_plain_and_vllm_alone() -> None:
    plain = ServerConfig(model_path="m")
    assert normalize(plain) == (plain, [])
    vllm = cfg(engine="vllm", max_num_seqs=None)
    assert normalize(vllm) == (vllm, [])
    assert normalize(EAGLE3) == (EAGLE3, [])


def test_normalized_config_validates_clean_of_tree_issues() -> None:
    config, _ = normalize(cfg(speculative_eagle_topk=1, speculative_num_draft_tokens=9))
    assert not [i for i in validate(config) if i.field == "speculative_num_draft_tokens"]


_values = st.one_of(
    st.none(),
    st.integers(-3, 300),
    st.floats(allow_nan=True),
    st.text(max_size=8),
    st.booleans(),
    st.sampled_from(list(SpecAlgorithm)),
    st.sampled_from(engine_names()),
    st.lists(st.text(max_size=4), max_size=3).map(tuple),
)


_KEYS = [f.name for f in dataclasses.fields(ServerConfig)] + [k.name for k in KEYS]


@given(st.dictionaries(st.sampled_from(_KEYS), _values, max_size=10))
def test_never_raises(changes: dict) -> None:
    shared = {k: v for k, v in changes.items() if k not in {key.name for key in KEYS}}
    keys = {k: v for k, v in changes.items() if k not in shared}  # any value, any type
    config = dataclasses.replace(EAGLE3, **shared)
    options = config.options if isinstance(config.options, tuple) else ()
    config = dataclasses.replace(config, options=(*options, *keys.items()))
    issues = validate(config)
    assert all(isinstance(i, Issue) for i in issues)
    normalized, notes = normalize(config)
    assert all(isinstance(n, Issue) for n in notes)
    assert isinstance(normalized, ServerConfig)


_tree = st.one_of(st.none(), st.integers(1, 12))


@given(
    st.sampled_from(list(SpecAlgorithm)),
    _tree,
    _tree,
    _tree,
    st.one_of(st.none(), st.integers(1, 512)),
    st.sampled_from([None, "LlamaForCausalLM", "Qwen2ForCausalLM"]),
)
def test_normalize_is_idempotent_and_adds_no_errors(
    algo: SpecAlgorithm,
    steps: int | None,
    topk: int | None,
    draft: int | None,
    mrr: int | None,
    arch: str | None,
) -> None:
    config = cfg(
        speculative_algorithm=algo,
        speculative_num_steps=steps,
        speculative_eagle_topk=topk,
        speculative_num_draft_tokens=draft,
        max_running_requests=mrr,
    )
    once, _ = normalize(config, arch)
    twice, notes = normalize(once, arch)
    assert twice == once and notes == []
    before = {(i.field, i.message) for i in errors(validate(config))}
    after = {(i.field, i.message) for i in errors(validate(once))}
    assert after <= before


OLD_VLLM_PLAN = """
[server]
engine = "vllm"
model_path = "/m"
speculative_algorithm = "EAGLE3"
speculative_draft_model_path = "/d"
mem_fraction_static = 0.9

[sweep]
strategy = "boundary"
axis = "speculative_num_steps"

[sweep.axes]
speculative_num_steps = [1, 2, 3]
"""


def test_an_old_vllm_plan_reads_with_its_notices_told_by_the_preflight() -> None:
    """A plan of the SGLang-named vLLM keys: its axes and walk read as vLLM's keys, each old
    name is a notice of the plan, and the pre-flight says every one (never blocking)."""
    from specconsole.core.machine.handlers.preflight import PreflightFacts, check_notices
    from specconsole.core.plans.parse import loads_plan

    plan = loads_plan(OLD_VLLM_PLAN)
    assert plan.axis == "num_speculative_tokens" and dict(plan.axes) == {
        "num_speculative_tokens": (1, 2, 3)
    }
    assert plan.base.method == "eagle3" and plan.base.gpu_memory_utilization == 0.9
    named = [n.field for n in plan.notices]
    assert named == [
        "speculative_algorithm",
        "speculative_draft_model_path",
        "mem_fraction_static",
        "speculative_num_steps",
    ]
    findings = check_notices(PreflightFacts(plan=plan))
    assert len(findings) == 4 and not any(f.blocking for f in findings)
    assert "write num_speculative_tokens instead" in findings[-1].message
    assert loads_plan(OLD_VLLM_PLAN.replace("speculative_num_steps", "num_speculative_tokens"))
