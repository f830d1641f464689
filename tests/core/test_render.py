"""Rendering to argv / command / unit, reading back, and round trips."""

from __future__ import annotations

import dataclasses
import json
import shlex
import string

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from specconsole.core.config.errors import ConfigError
from specconsole.core.config.model import ServerConfig, SpecAlgorithm, config_from_table
from specconsole.core.config.render import to_argv, to_command
from specconsole.core.launch.command import parse_command
from specconsole.core.launch.systemd import (
    UnitOptions,
    parse_unit,
    systemd_quote,
    systemd_split,
    to_unit,
)
from specconsole.engines.llamacpp.flags import MODELLED_FLAGS as LLAMA_MODELLED_FLAGS
from specconsole.engines.sglang.flags import MODELLED_FLAGS
from specconsole.engines.vllm.flags import MODELLED_FLAGS as VLLM_MODELLED_FLAGS

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
        speculative_algorithm=SpecAlgorithm.EAGLE3,
        speculative_draft_model_path="/models/EAGLE3",
        speculative_num_steps=3,
        mem_fraction_static=0.9,
        max_running_requests=128,
        tp_size=2,
        context_length=32768,
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
        speculative_algorithm=SpecAlgorithm.NGRAM,
        speculative_num_steps=4,
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
                speculative_algorithm=SpecAlgorithm.EAGLE,
                speculative_draft_model_path="/d",
                speculative_num_steps=5,
                mem_fraction_static=0.9,
                tp_size=2,
                max_running_requests=32,
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
# Property tests: render -> parse -> render is identical
# --------------------------------------------------------------------------------------------

_text = st.text(
    alphabet=st.characters(blacklist_categories=("Cs", "Cc"), blacklist_characters="\x00"),
    min_size=1,
    max_size=20,
)
_path = _text.filter(lambda s: not s.startswith("-") and s.strip() == s and s)
_flag_names = (
    st.text(alphabet=string.ascii_lowercase + "-", min_size=1, max_size=12)
    .map(lambda s: "--" + s.strip("-"))
    .filter(
        lambda f: (
            f not in MODELLED_FLAGS
            and f not in VLLM_MODELLED_FLAGS
            and f not in LLAMA_MODELLED_FLAGS
            and f != "--"
        )
    )
)
_extra = st.lists(
    st.one_of(
        _flag_names,
        _text.filter(lambda s: not s.startswith("-")),
        st.tuples(_flag_names, _text).map(lambda t: f"{t[0]}={t[1]}"),
    ),
    max_size=6,
).map(tuple)
_env = st.lists(
    st.tuples(
        st.from_regex(r"[A-Z_][A-Z0-9_]{0,8}", fullmatch=True),
        _text.filter(lambda s: "\n" not in s),
    ),
    max_size=3,
    unique_by=lambda t: t[0],
).map(tuple)
_opt_int = st.one_of(st.none(), st.integers(1, 100_000))


_LLAMA_OPTIONS = st.fixed_dictionaries(
    {},
    optional={
        "spec_type": st.sampled_from(["none", "draft-simple", "ngram-mod"]),
        "spec_draft_n_max": st.integers(0, 64),
        "spec_draft_n_min": st.integers(0, 8),
        "spec_draft_p_min": st.floats(0, 1),
        "spec_draft_ngl": st.one_of(st.integers(0, 99), st.sampled_from(["auto", "all"])),
        "spec_draft_threads": st.integers(-1, 8),
        "ctx_size": st.integers(0, 1_000_000),
        "parallel": st.integers(-1, 256),
        "threads": st.integers(-1, 64),
        "n_gpu_layers": st.one_of(st.integers(0, 99), st.sampled_from(["auto", "all"])),
        "fit": st.sampled_from(["on", "off"]),
        "metrics": st.just(True),  # false renders nothing: it reads back unset
    },
)


@st.composite
def llama_configs(draw: st.DrawFn) -> ServerConfig:
    """llama-server configurations: its own keys (any spelling reads back), a draft or not,
    its launchers; extra args that are not its modelled flags."""
    table = {
        "engine": "llamacpp",
        "model_path": draw(_path),
        "launcher": draw(st.sampled_from(["llama-server", "/opt/llama.cpp/bin/llama-server"])),
        **draw(_LLAMA_OPTIONS),
    }
    draft = draw(st.one_of(st.none(), _path))
    if draft is not None:
        table["speculative_draft_model_path"] = draft
    config = config_from_table(table)
    return dataclasses.replace(
        config,
        host=draw(st.sampled_from(["127.0.0.1", "0.0.0.0", "::1"])),
        port=draw(st.integers(1, 65535)),
        extra_args=draw(_extra),
        env=draw(_env),
        working_directory=draw(
            st.one_of(
                st.none(), _path.filter(lambda p: not p.endswith("\\")).map(lambda p: "/" + p)
            )
        ),
    )


@st.composite
def configs(draw: st.DrawFn, engine: str) -> ServerConfig:
    if engine == "llamacpp":
        return draw(llama_configs())
    algo = draw(st.one_of(st.none(), st.sampled_from(list(SpecAlgorithm))))
    launchers = (
        ["vllm serve", "python3 -m vllm.entrypoints.openai.api_server"]
        if engine == "vllm"
        else [
            "python3 -m sglang.launch_server",
            "sglang serve",
            "/srv/.venv/bin/python -m specconsole.sim",
            "'/opt/my venv/bin/python' -m sglang.launch_server",
        ]
    )
    spec = algo is not None
    if engine == "vllm":
        draft_model = (
            draw(st.one_of(st.none(), _path)) if spec and algo is not SpecAlgorithm.NGRAM else None
        )
        tree: dict = {"speculative_num_steps": draw(_opt_int) if spec else None}
    else:
        draft_model = draw(st.one_of(st.none(), _path))
        tree = {
            "speculative_num_steps": draw(_opt_int),
            "speculative_eagle_topk": draw(_opt_int),
            "speculative_num_draft_tokens": draw(_opt_int),
        }
    return ServerConfig(
        model_path=draw(_path),
        engine=engine,
        speculative_algorithm=algo,
        speculative_draft_model_path=draft_model,
        mem_fraction_static=draw(st.one_of(st.none(), st.floats(0.01, 0.99))),
        max_running_requests=draw(_opt_int),
        tp_size=draw(_opt_int),
        context_length=draw(_opt_int),
        cuda_graph_max_bs=None if engine == "vllm" else draw(_opt_int),
        attention_backend=None if engine == "vllm" else draw(st.one_of(st.none(), _path)),
        host=draw(st.sampled_from(["127.0.0.1", "0.0.0.0", "::1"])),
        port=draw(st.integers(1, 65535)),
        extra_args=draw(_extra),
        env=draw(_env),
        launcher=draw(st.sampled_from(launchers)),
        working_directory=draw(
            st.one_of(
                st.none(), _path.filter(lambda p: not p.endswith("\\")).map(lambda p: "/" + p)
            )
        ),
        user=draw(st.one_of(st.none(), st.from_regex(r"[a-z][a-z0-9_-]{0,10}", fullmatch=True))),
        **tree,
    )


_any_config = st.one_of(configs("sglang"), configs("vllm"), configs("llamacpp"))


@settings(max_examples=200, deadline=None)
@given(_any_config)
def test_argv_round_trip(config: ServerConfig) -> None:
    argv = to_argv(config)
    parsed = parse_command(argv)
    assert to_argv(parsed) == argv
    assert parse_command(to_command(config)) == parsed
    if config.engine in ("sglang", "llamacpp"):
        assert parsed == dataclasses.replace(config, env=(), working_directory=None, user=None)


@settings(max_examples=200, deadline=None)
@given(_any_config)
def test_unit_round_trip(config: ServerConfig) -> None:
    unit = to_unit(config)
    parsed = parse_unit(unit)
    assert to_unit(parsed) == unit
    if config.engine == "sglang":
        assert parsed == config


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
