"""The [server] TOML table <-> ServerConfig mapping and its error messages."""

from __future__ import annotations

import tomllib

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from specconsole.core.config.errors import ConfigError
from specconsole.core.config.model import (
    FIELD_KINDS,
    ServerConfig,
    config_from_table,
    config_to_table,
    effective_launcher,
    replace_config,
)
from specconsole.engines.sglang.keys import KEYS, SpecAlgorithm

FULL_TOML = """
[server]
engine = "sglang"
engine_version = "0.5.23"
model_path = "/models/Llama-3.1-8B-Instruct"
speculative_algorithm = "EAGLE3"
speculative_draft_model_path = "/models/EAGLE3-LLaMA3.1-Instruct-8B"
speculative_num_steps = 3
speculative_eagle_topk = 4
speculative_num_draft_tokens = 8
mem_fraction_static = 0.85
cuda_graph_max_bs = 64
max_running_requests = 64
tp_size = 1
context_length = 8192
attention_backend = "fa3"
host = "127.0.0.1"
port = 30000
launcher = "sglang serve"
working_directory = "/opt/sglang"
user = "sglang"
extra_args = ["--enable-metrics", "--chunked-prefill-size", "4096"]
description = "EAGLE3 baseline"

[server.env]
SGLANG_LOG_MS = "1"
CUDA_VISIBLE_DEVICES = "0"
"""


def test_full_table_reads_every_key() -> None:
    table = tomllib.loads(FULL_TOML)["server"]
    config = config_from_table(table)
    assert config == ServerConfig(
        model_path="/models/Llama-3.1-8B-Instruct",
        engine_version="0.5.23",
        speculative_algorithm=SpecAlgorithm.EAGLE3,
        speculative_draft_model_path="/models/EAGLE3-LLaMA3.1-Instruct-8B",
        speculative_num_steps=3,
        speculative_eagle_topk=4,
        speculative_num_draft_tokens=8,
        mem_fraction_static=0.85,
        cuda_graph_max_bs=64,
        max_running_requests=64,
        tp_size=1,
        context_length=8192,
        attention_backend="fa3",
        launcher="sglang serve",
        working_directory="/opt/sglang",
        user="sglang",
        extra_args=("--enable-metrics", "--chunked-prefill-size", "4096"),
        env=(("SGLANG_LOG_MS", "1"), ("CUDA_VISIBLE_DEVICES", "0")),
    )
    assert config.description == "EAGLE3 baseline"
    assert set(table) == set(FIELD_KINDS) | {k.name for k in KEYS}  # every key
    assert config_to_table(config) == table


def test_minimal_table_and_defaults() -> None:
    config = config_from_table({"model_path": "m"})
    assert config == ServerConfig(model_path="m")
    assert config_to_table(config) == {
        "model_path": "m",
        "engine": "sglang",
        "host": "127.0.0.1",
        "port": 30000,
        "launcher": "python3 -m sglang.launch_server",
    }


def test_vllm_gets_vllm_launcher() -> None:
    config = config_from_table({"model_path": "m", "engine": "vllm"})
    assert config.launcher == "vllm serve"
    assert effective_launcher(ServerConfig(model_path="m", engine="vllm")) == "vllm serve"


def test_aliases_and_lenient_forms() -> None:
    config = config_from_table(
        {
            "model": "m",
            "tensor_parallel_size": 2,
            "speculative_draft_model": "d",
            "speculative_algorithm": "eagle",
            "mem_fraction_static": 1,
            "extra_args": "--enable-metrics --log-level info",
            "env": {"FLAG": True, "N": 3},
        }
    )
    assert config.tp_size == 2 and config.speculative_draft_model_path == "d"
    assert config.speculative_algorithm is SpecAlgorithm.EAGLE
    assert config.mem_fraction_static == 1.0
    assert config.extra_args == ("--enable-metrics", "--log-level", "info")
    assert config.env == (("FLAG", "1"), ("N", "3"))
    assert config_from_table({"model_path": "m", "speculative_algorithm": "none"}) == ServerConfig(
        model_path="m"
    )


@pytest.mark.parametrize(
    ("table", "key", "fix_part"),
    [
        ({}, "server.model_path", "add model_path"),
        (
            {"model_path": "m", "speculative-num-steps": 3},
            "server.speculative-num-steps",
            "speculative_num_steps",
        ),
        (
            {"model_path": "m", "spec_num_steps": 3},
            "server.spec_num_steps",
            "did you mean `speculative_num_steps`",
        ),
        ({"model_path": "m", "enable_metrics": True}, "server.enable_metrics", "--enable-metrics"),
        ({"model_path": "m", "tp_size": "two"}, "server.tp_size", "tp_size = 4"),
        ({"model_path": "m", "tp_size": True}, "server.tp_size", "tp_size = 4"),
        ({"model_path": "m", "tp_size": 1.5}, "server.tp_size", "tp_size = 4"),
        ({"model_path": "m", "mem_fraction_static": "lots"}, "server.mem_fraction_static", "0.85"),
        (
            {"model_path": "m", "speculative_algorithm": "MEDUSA"},
            "server.speculative_algorithm",
            "EAGLE3",
        ),
        ({"model_path": "m", "engine": "trt"}, "server.engine", '"vllm"'),
        ({"model_path": 3}, "server.model_path", "model_path"),
        ({"model_path": "m", "extra_args": [1, 2]}, "server.extra_args", "extra_args"),
        ({"model_path": "m", "extra_args": "'unclosed"}, "server.extra_args", "quoting"),
        ({"model_path": "m", "env": "A=1"}, "server.env", "env = {"),
        ({"model_path": "m", "env": {"A": [1]}}, "server.env.A", 'A = "..."'),
        (
            {"model_path": "m", "tp_size": 2, "tensor_parallel_size": 2},
            "server.tensor_parallel_size",
            "keep one",
        ),
        ({"model_path": "m", "port": None}, "server.port", "set port"),
    ],
)
def test_errors_name_key_and_fix(table: dict, key: str, fix_part: str) -> None:
    with pytest.raises(ConfigError) as info:
        config_from_table(table)
    assert info.value.key == key
    assert fix_part in info.value.fix
    assert key in str(info.value) and "Fix:" in str(info.value)


def test_not_a_table() -> None:
    with pytest.raises(ConfigError):
        config_from_table(["model_path"])  # type: ignore[arg-type]


def test_replace_config_parses_editor_text() -> None:
    base = ServerConfig(model_path="m", tp_size=2)
    changed = replace_config(
        base,
        speculative_num_steps="5",
        mem_fraction_static="0.7",
        speculative_algorithm="eagle3",
        tp_size="",
    )
    assert changed.speculative_num_steps == 5 and changed.mem_fraction_static == 0.7
    assert changed.speculative_algorithm is SpecAlgorithm.EAGLE3 and changed.tp_size is None
    with pytest.raises(ConfigError) as info:
        replace_config(base, speculative_num_steps="x")
    assert info.value.key == "server.speculative_num_steps"


_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=True),
    st.text(max_size=20),
    st.lists(st.text(max_size=5), max_size=3),
    st.dictionaries(st.text(max_size=5), st.text(max_size=5), max_size=3),
)


@given(st.dictionaries(st.sampled_from([*FIELD_KINDS, "bogus", "model"]), _scalars, max_size=8))
@example({"model_path": "m", "env": ["A=1", "A=2"]})  # the counterexample hypothesis once found
def test_from_table_only_raises_config_error(table: dict) -> None:
    try:
        config = config_from_table(table)
    except ConfigError:
        return
    assert config_from_table(config_to_table(config)) == config


def test_config_from_toml() -> None:
    from specconsole.core.config.model import config_from_toml

    assert config_from_toml(FULL_TOML).speculative_num_steps == 3
    with pytest.raises(ConfigError) as info:
        config_from_toml("[server\n")
    assert info.value.key == "toml"
    with pytest.raises(ConfigError) as info:
        config_from_toml("[host]\nalias = 'x'\n")
    assert info.value.key == "server"
