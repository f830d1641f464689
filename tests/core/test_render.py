"""Rendering to argv / command / unit, reading back, and round trips."""

from __future__ import annotations

import dataclasses
import json
import shlex

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from specconsole.core.config.errors import ConfigError
from specconsole.core.config.model import ServerConfig
from specconsole.core.config.render import to_argv, to_command
from specconsole.core.engine.registry import engine_names
from specconsole.core.launch.command import parse_command
from specconsole.core.launch.systemd import (
    UnitOptions,
    parse_unit,
    systemd_quote,
    systemd_split,
    to_unit,
)
from specconsole.engines.sglang.keys import SpecAlgorithm
from tests.engines.described import configs

EAGLE3 = ServerConfig(
    model_path="/models/Llama-3.1-8B-Instruct",
    speculative_algorithm=SpecAlgorithm.EAGLE3,
    speculative_draft_model_path="/models/EAGLE3-LLaMA3.1-Instruct-8B",
    speculative_num_steps=3,
    speculative_eagle_topk=4,
    speculative_num_draft_tokens=8,
    mem_fraction_static=0.85,
    cuda_graph_max_bs=64,
    max_running_requests=64,
    tp_size=2,
    context_length=8192,
    attention_backend="fa3",
    host="0.0.0.0",
    port=30001,
    extra_args=("--enable-metrics", "--log-level", "info"),
    env=(("SGLANG_LOG_MS", "1"), ("CUDA_VISIBLE_DEVICES", "0,1")),
    user="sglang",
    working_directory="/opt/sglang",
)


def test_sglang_argv_exact_flags() -> None:
    assert to_argv(EAGLE3) == [
        "python3", "-m", "sglang.launch_server",
        "--model-path", "/models/Llama-3.1-8B-Instruct",
        "--speculative-algorithm", "EAGLE3",
        "--speculative-draft-model-path", "/models/EAGLE3-LLaMA3.1-Instruct-8B",
        "--speculative-num-steps", "3",
        "--speculative-eagle-topk", "4",
        "--speculative-num-draft-tokens", "8",
        "--mem-fraction-static", "0.85",
        "--cuda-graph-max-bs", "64",
        "--max-running-requests", "64",
        "--tp-size", "2",
        "--context-length", "8192",
        "--attention-backend", "fa3",
        "--host", "0.0.0.0",
        "--port", "30001",
        "--enable-metrics", "--log-level", "info",
    ]  # fmt: skip


def test_minimal_argv_and_launchers() -> None:
    assert to_argv(ServerConfig(model_path="m", launcher="sglang serve")) == [
        "sglang", "serve", "--model-path", "m", "--host", "127.0.0.1", "--port", "30000",
    ]  # fmt: skip
    sim = ServerConfig(model_path="m", launcher="/srv/.venv/bin/python -m specconsole.sim")
    assert to_argv(sim)[:3] == ["/srv/.venv/bin/python", "-m", "specconsole.sim"]


def test_command_is_shell_quoted() -> None:
    config = ServerConfig(model_path="/models/my model", env=(("A", "x y"),))
    command = to_command(config)
    assert command.startswith("python3 -m sglang.launch_server --model-path '/models/my model'")
    assert shlex.split(command) == to_argv(config)
    assert to_command(config, with_env=True).startswith("'A=x y' python3")


def test_vllm_rendering() -> None:
    config = ServerConfig(
        model_path="/models/Llama-3.1-8B-Instruct",
        engine="vllm",
        launcher="vllm serve",
        method="eagle3",
        speculative_model="/models/EAGLE3",
        num_speculative_tokens=3,
        gpu_memory_utilization=0.9,
        max_num_seqs=128,
        tensor_parallel_size=2,
        max_model_len=32768,
        port=8000,
    )
    argv = to_argv(config)
    assert argv[:3] == ["vllm", "serve", "/models/Llama-3.1-8B-Instruct"]
    i = argv.index("--speculative-config")
    assert json.loads(argv[i + 1]) == {
        "method": "eagle3", "model": "/models/EAGLE3", "num_speculative_tokens": 3,
    }  # fmt: skip
    assert (
        argv[i + 1]
        == '{"method": "eagle3", "model": "/models/EAGLE3", "num_speculative_tokens": 3}'
    )
    assert argv[i + 2 :] == [
        "--gpu-memory-utilization", "0.9", "--max-num-seqs", "128",
        "--tensor-parallel-size", "2", "--max-model-len", "32768",
        "--host", "127.0.0.1", "--port", "8000",
    ]  # fmt: skip
    assert to_command(config).startswith(
        'vllm serve /models/Llama-3.1-8B-Instruct --speculative-config \'{"method": "eagle3"'
    )
    # The default SGLang launcher on a vLLM config becomes `vllm serve`.
    assert to_argv(ServerConfig(model_path="m", engine="vllm"))[:3] == ["vllm", "serve", "m"]
    # The api_server module takes --model.
    api = ServerConfig(
        model_path="m", engine="vllm", launcher="python3 -m vllm.entrypoints.openai.api_server"
    )
    assert to_argv(api)[3:5] == ["--model", "m"]
    ngram = ServerConfig(
        model_path="m",
        engine="vllm",
        method="ngram",
        num_speculative_tokens=4,
    )
    j = to_argv(ngram).index("--speculative-config")
    assert json.loads(to_argv(ngram)[j + 1]) == {"method": "ngram", "num_speculative_tokens": 4}


def test_unit_file_contents() -> None:
    unit = to_unit(EAGLE3, UnitOptions(description="EAGLE3 tuning"))
    lines = unit.splitlines()
    for expected in (
        "[Unit]",
        "Description=EAGLE3 tuning",
        "After=network-online.target",
        "Wants=network-online.target",
        "[Service]",
        "User=sglang",
        "WorkingDirectory=/opt/sglang",
        "Environment=SGLANG_LOG_MS=1",
        "Environment=CUDA_VISIBLE_DEVICES=0,1",
        "ExecStart=/usr/bin/env python3 -m sglang.launch_server \\",
        "    --speculative-eagle-topk 4 \\",
        "Restart=no",
        "TimeoutStartSec=900",
        "KillMode=mixed",
        "[Install]",
        "WantedBy=multi-user.target",
    ):
        assert expected in lines, expected
    assert lines[lines.index("    --log-level info")] == "    --log-level info"  # last line


def test_unit_quoting_of_awkward_values() -> None:
    config = ServerConfig(
        model_path="/models/a b",
        env=(("X", 'say "hi" 100% $HOME\\n'),),
        extra_args=("--json-model-override-args", '{"rope_scaling": {"factor": 2}}', "--x=$Y"),
        description="50% of GPU",
    )
    unit = to_unit(config)
    assert 'Environment="X=say \\"hi\\" 100%% $HOME\\\\n"' in unit
    assert '"--x=$$Y"' in unit
    assert "Description=50%% of GPU" in unit
    back = parse_unit(unit)
    assert back == config
    assert back.description == "50% of GPU"
    assert to_unit(back) == unit


def test_unit_absolute_launcher_not_wrapped() -> None:
    config = ServerConfig(model_path="m", launcher="/opt/venv/bin/python -m sglang.launch_server")
    assert "ExecStart=/opt/venv/bin/python -m sglang.launch_server \\" in to_unit(config)
    assert "/usr/bin/env" not in to_unit(config)


USER_UNIT = r"""
[Unit]
Description=SGLang Llama 8B
After=network.target

[Service]
User=ml
WorkingDirectory=-/home/ml/sglang
Environment="HF_HOME=/data/hf" SGLANG_ENABLE_SPEC_V2=True
Environment=CUDA_VISIBLE_DEVICES=0
ExecStart=/home/ml/.venv/bin/python -m sglang.launch_server \
  --model-path meta-llama/Llama-3.1-8B-Instruct \
  # the draft
  --speculative-algorithm EAGLE3 --speculative-draft-model ${HF_HOME}/eagle3 \
  --speculative-num-steps=3 --speculative-eagle-topk 1 --speculative-num-draft-tokens 4 \
  --tensor-parallel-size 1 --mem-fraction-static 0.8 --enable-metrics \
  --chunked-prefill-size 4096 --port 30000 --host 0.0.0.0 --log-level info
Restart=always

[Install]
WantedBy=multi-user.target
"""


def test_parse_user_unit() -> None:
    config = parse_unit(USER_UNIT)
    assert config == ServerConfig(
        model_path="meta-llama/Llama-3.1-8B-Instruct",
        speculative_algorithm=SpecAlgorithm.EAGLE3,
        speculative_draft_model_path="/data/hf/eagle3",
        speculative_num_steps=3,
        speculative_eagle_topk=1,
        speculative_num_draft_tokens=4,
        tp_size=1,
        mem_fraction_static=0.8,
        host="0.0.0.0",
        port=30000,
        extra_args=("--enable-metrics", "--chunked-prefill-size", "4096", "--log-level", "info"),
        env=(
            ("HF_HOME", "/data/hf"),
            ("SGLANG_ENABLE_SPEC_V2", "True"),
            ("CUDA_VISIBLE_DEVICES", "0"),
        ),
        launcher="/home/ml/.venv/bin/python -m sglang.launch_server",
        working_directory="/home/ml/sglang",
        user="ml",
    )
    assert config.description == "SGLang Llama 8B"


def test_parse_unit_errors() -> None:
    with pytest.raises(ConfigError) as info:
        parse_unit("[Service]\nUser=x\n")
    assert info.value.key == "ExecStart"
    with pytest.raises(ConfigError):
        parse_unit('[Service]\nExecStart=/usr/bin/python -m sglang.launch_server "--model-path\n')


def test_parse_unit_drop_in_reset() -> None:
    text = "[Service]\nExecStart=/bin/false\nExecStart=\nExecStart=sglang serve --model-path m\n"
    assert parse_unit(text).launcher == "sglang serve"


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        (
            "python3 -m sglang.launch_server --model-path m --tp 2 --port=31000",
            ServerConfig(model_path="m", tp_size=2, port=31000),
        ),
        (
            "CUDA_VISIBLE_DEVICES=0 SGLANG_LOG_MS=1 sglang serve --model m --enable-metrics",
            ServerConfig(
                model_path="m",
                launcher="sglang serve",
                extra_args=("--enable-metrics",),
                env=(("CUDA_VISIBLE_DEVICES", "0"), ("SGLANG_LOG_MS", "1")),
            ),
        ),
        (
            "env -u X A=1 exec python -u -X dev -m sglang.launch_server --model-path m "
            "--cuda-graph-max-bs-decode 16 --disable-radix-cache",
            ServerConfig(
                model_path="m",
                cuda_graph_max_bs=16,
                launcher="python -u -X dev -m sglang.launch_server",
                extra_args=("--disable-radix-cache",),
                env=(("A", "1"),),
            ),
        ),
        (
            "/bin/sh -c 'cd /srv/sg && export HF_HOME=/hf && exec python3 -m "
            "sglang.launch_server --model-path m --speculative-algorithm eagle'",
            ServerConfig(
                model_path="m",
                speculative_algorithm=SpecAlgorithm.EAGLE,
                env=(("HF_HOME", "/hf"),),
                working_directory="/srv/sg",
            ),
        ),
        (
            'vllm serve /models/x --speculative-config \'{"method": "eagle", "model": '
            '"/d", "num_speculative_tokens": 5}\' --gpu_memory_utilization 0.9 -tp 2 '
            "--max-num-seqs=32 --enforce-eager",
            ServerConfig(
                model_path="/models/x",
                engine="vllm",
                launcher="vllm serve",
                method="eagle",
                speculative_model="/d",
                num_speculative_tokens=5,
                gpu_memory_utilization=0.9,
                tensor_parallel_size=2,
                max_num_seqs=32,
                host="0.0.0.0",
                port=8000,
                extra_args=("--enforce-eager",),
            ),
        ),
        (
            "python3 -m vllm.entrypoints.openai.api_server --model m --speculative-config "
            '\'{"method": "ngram", "num_speculative_tokens": 4, "prompt_lookup_max": 4}\'',
            ServerConfig(
                model_path="m",
                engine="vllm",
                launcher="python3 -m vllm.entrypoints.openai.api_server",
                host="0.0.0.0",
                port=8000,
                extra_args=(
                    "--speculative-config",
                    '{"method": "ngram", "num_speculative_tokens": 4, "prompt_lookup_max": 4}',
                ),
            ),
        ),
    ],
)
def test_parse_command(command: str, expected: ServerConfig) -> None:
    assert parse_command(command) == expected


def test_parse_command_accepts_argv_list() -> None:
    parsed = parse_command(to_argv(EAGLE3))
    # The argv carries no environment, user or working directory: those live in the unit.
    assert parsed == dataclasses.replace(EAGLE3, env=(), user=None, working_directory=None)


@pytest.mark.parametrize(
    ("command", "key"),
    [
        ("python3 -m sglang.launch_server --port 1", "--model-path"),
        ("python3 -m sglang.launch_server --model-path m --tp-size", "--tp-size"),
        ("python3 -m sglang.launch_server --model-path m --tp-size two", "--tp-size"),
        (
            "python3 -m sglang.launch_server --model-path m --speculative-algorithm X",
            "--speculative-algorithm",
        ),
        ("vllm serve m --speculative-config '{bad'", "--speculative-config"),
        ("vllm serve --port 8000", "MODEL"),
        ("'unclosed", "command"),
        ("A=1", "command"),
        ("", "command"),
    ],
)
def test_parse_command_errors(command: str, key: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_command(command)
    assert info.value.key == key


@pytest.mark.parametrize(
    "word", ["plain", "", "a b", 'q"uote', "back\\slash", "100%", "$HOME", "tab\there", "new\nline"]
)
def test_systemd_quote_round_trip(word: str) -> None:
    from specconsole.core.launch.systemd import _unescape_exec

    (back,) = systemd_split(systemd_quote(word))
    assert _unescape_exec(back, {}) == word


# --------------------------------------------------------------------------------------------
# Property tests: render -> parse -> render is identical, for every registered engine, on
# configurations drawn from its own declarations (tests/engines/described.py)
# --------------------------------------------------------------------------------------------

_any_config = st.sampled_from(engine_names()).flatmap(configs)
_exact_config = st.sampled_from(engine_names()).flatmap(
    lambda engine: configs(engine, own_flags_only=True)
)
"""Configurations whose every key has a flag of its own: they read back exactly."""


@settings(max_examples=200, deadline=None)
@given(_any_config)
def test_argv_round_trip(config: ServerConfig) -> None:
    argv = to_argv(config)
    parsed = parse_command(argv)
    assert to_argv(parsed) == argv
    assert parse_command(to_command(config)) == parsed


@settings(max_examples=200, deadline=None)
@given(_exact_config)
def test_argv_reads_back_every_key(config: ServerConfig) -> None:
    parsed = parse_command(to_argv(config))
    assert parsed == dataclasses.replace(config, env=(), working_directory=None, user=None)


@settings(max_examples=200, deadline=None)
@given(_any_config)
def test_unit_round_trip(config: ServerConfig) -> None:
    unit = to_unit(config)
    parsed = parse_unit(unit)
    assert to_unit(parsed) == unit


@settings(max_examples=200, deadline=None)
@given(_exact_config)
def test_unit_reads_back_every_key(config: ServerConfig) -> None:
    assert parse_unit(to_unit(config)) == config


_unit_words = st.sampled_from(
    [
        "[Service]",
        "[Unit]",
        "ExecStart=",
        "Environment=",
        "User=",
        "WorkingDirectory=",
        "\\",
        "python3 -m sglang.launch_server",
        "--model-path",
        "m",
        "'",
        '"',
        "$X",
        "%%",
        "=",
        "-",
        "vllm serve",
        "sh -c",
        "env",
        "A=1",
        "--tp-size",
        "--speculative-config",
        "{",
        "\n",
        " ",
    ]
)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(_unit_words, st.text(max_size=10)), max_size=30))
def test_parsers_raise_only_config_error(parts: list[str]) -> None:
    text = "".join(parts)
    for parse in (parse_unit, parse_command):
        try:
            parse(text)
        except ConfigError:
            pass
    try:
        parse_command(parts)
    except ConfigError:
        pass
