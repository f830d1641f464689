"""present/editor_fields: the editor's fields in the flag names of the release on the box."""

from __future__ import annotations

import dataclasses

import pytest

from specconsole.core.config.model import ServerConfig
from specconsole.core.config.render import to_argv
from specconsole.core.config.validation import validate
from specconsole.engines.sglang.flags import render_flags as sglang_flags
from specconsole.engines.sglang.keys import SpecAlgorithm
from specconsole.engines.sglang.releases import KNOWN_RELEASES
from specconsole.present.editor_fields import (
    FormField,
    default_fields,
    editing_release,
    editor_fields,
    release_line,
    shown_fields,
    with_release,
)

BASE = ServerConfig(
    model_path="/models/target",
    speculative_algorithm=SpecAlgorithm.EAGLE3,
    speculative_draft_model_path="/models/draft",
)
SAMPLES: dict[str, object] = {"int": 7, "float": 0.5, "choice": SpecAlgorithm.EAGLE}


@pytest.mark.parametrize("version", [None, *KNOWN_RELEASES])
def test_every_shown_flag_is_the_one_the_renderer_emits(version: str | None) -> None:
    for field in editor_fields("sglang", version):
        if field.kind == "args":
            continue
        config = dataclasses.replace(
            BASE, engine_version=version, **{field.name: SAMPLES[field.kind]}
        )
        words = sglang_flags(config)
        assert field.flag in words, (version, field.name, field.flag, words)
        assert words[words.index(field.flag) + 1] == str(SAMPLES[field.kind])


@pytest.mark.parametrize(
    ("version", "flag"),
    [
        ("0.5.9", "--cuda-graph-max-bs"),
        ("0.5.14", "--cuda-graph-max-bs-decode"),
        ("0.5.23", "--cuda-graph-max-bs-decode"),
        (None, "--cuda-graph-max-bs"),
        ("not-a-release", "--cuda-graph-max-bs"),
    ],
)
def test_cuda_graph_max_bs_is_labelled_with_the_releases_flag(
    version: str | None, flag: str
) -> None:
    (field,) = [f for f in editor_fields("sglang", version) if f.name == "cuda_graph_max_bs"]
    assert field.flag == flag
    if flag == "--cuda-graph-max-bs":
        assert field.label == "cuda_graph_max_bs" and not field.note
    else:
        assert field.label == (
            "cuda_graph_max_bs → --cuda-graph-max-bs-decode (--cuda-graph-max-bs in older releases)"
        )


def test_the_default_field_list_is_the_unknown_releases() -> None:
    assert editor_fields("sglang", None) == default_fields()
    flags = [f.flag for f in default_fields()]
    assert flags[:2] == ["--speculative-algorithm", "--speculative-num-steps"]


def test_vllm_fields_are_its_own_keys_and_say_which_travel_in_its_json() -> None:
    fields = editor_fields("vllm", None)
    by_name = {f.name: f for f in fields}
    config = ServerConfig(
        model_path="/models/target",
        engine="vllm",
        method="eagle3",
        speculative_model="/models/draft",
        gpu_memory_utilization=0.8,
        num_speculative_tokens=3,
        max_num_seqs=32,
        tensor_parallel_size=2,
    )
    words = to_argv(config)
    for field in fields:
        assert field.rendered
        if field.flag:
            assert field.flag in words, (field.name, words)
    assert by_name["gpu_memory_utilization"].label == "gpu_memory_utilization"
    assert by_name["num_speculative_tokens"].label == (
        "num_speculative_tokens → --speculative-config (num_speculative_tokens in its JSON)"
    )


def test_a_field_the_engine_does_not_render_is_shown_only_while_set() -> None:
    unrendered = FormField("speculative_eagle_topk", "int", "tree width", note="not rendered")
    fields = (unrendered, FormField("extra_args", "args", "further flags"))
    assert not unrendered.rendered
    shown = {f.name for f in shown_fields(fields, BASE)}
    assert shown == {"extra_args"}
    set_topk = dataclasses.replace(BASE, speculative_eagle_topk=4)
    assert "speculative_eagle_topk" in {f.name for f in shown_fields(fields, set_topk)}
    # set only in the deployed configuration: shown too, so revert can put it back
    assert "speculative_eagle_topk" in {f.name for f in shown_fields(fields, BASE, set_topk)}
    assert "speculative_eagle_topk" not in {f.name for f in shown_fields(fields, BASE, None)}


def test_validation_sees_the_release_and_the_declared_one_wins() -> None:
    old_flag = dataclasses.replace(BASE, extra_args=("--cuda-graph-max-bs", "8"))
    pipeline = dataclasses.replace(BASE, extra_args=("--pp-size", "2"))

    def errors(config: ServerConfig) -> list[str]:
        return [i.message for i in validate(config) if i.severity.value == "error"]

    def removed(config: ServerConfig) -> bool:
        return any("no longer accepts --cuda-graph-max-bs" in m for m in errors(config))

    assert removed(with_release(old_flag, "0.5.23"))  # 0.5.23 dropped the old name
    assert not removed(with_release(old_flag, "0.5.14"))  # a deprecated alias there
    assert not removed(old_flag)
    # pipeline parallelism with speculative decoding: refused up to 0.5.2x, allowed in 0.5.23
    assert any("Pipeline parallelism" in m for m in errors(with_release(pipeline, "0.5.14")))
    assert not any("Pipeline parallelism" in m for m in errors(with_release(pipeline, "0.5.23")))
    declared = dataclasses.replace(old_flag, engine_version="0.5.14")
    assert with_release(declared, "0.5.23") == declared
    assert editing_release(declared, "0.5.23", "detected") == ("0.5.14", "declared")
    assert editing_release(BASE, "0.5.23", "detected") == ("0.5.23", "detected")
    assert editing_release(BASE, None, "unknown") == (None, "")
    assert with_release(BASE, None) == BASE
    vllm = dataclasses.replace(BASE, engine="vllm")  # vLLM checks its own releases too
    assert with_release(vllm, "0.34.0") == dataclasses.replace(vllm, engine_version="0.34.0")
    assert with_release(vllm, None) == vllm


def test_release_line_says_what_the_editor_follows() -> None:
    assert release_line("sglang", None) == ""
    assert release_line("sglang", "0.5.23", "detected") == (
        "SGLang 0.5.23 (detected): its flag names and rules"
    )
    assert "newer than the releases checked" in release_line("sglang", "0.6.1")
    assert "not one of the releases checked" in release_line("sglang", "0.5.11")
    assert "engine_version" in release_line("sglang", "five")
    assert release_line("vllm", "0.5.23").startswith("vLLM")
