"""llama.cpp's load forecast from the models' own limits (issue 41): the GGUF header read on
the box by a stdlib program, the training context and the KV bytes a token, the box's memory
— a 20,000,000-token context on a 135M model is predicted not to load before deploy, and the
capacity the server will report is predicted exactly."""

from __future__ import annotations

import json
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from specconsole.core.config.model import config_from_table
from specconsole.core.engine.registry import get_engine
from specconsole.core.measure.forecast import ModelFacts, check
from specconsole.engines.llamacpp.gguf import GgufError, model_facts, read_header
from specconsole.engines.llamacpp.limits import forecast_load, parse_facts

ENGINE = get_engine("llamacpp")
GB = 1_000_000_000


def _gguf(path: Path, arch: str = "llama", **values: int) -> Path:
    """A GGUF header as llama.cpp writes one: strings, u32 scalars and a big string array
    (the tokenizer's) before the architecture's keys, which the reader must skip."""

    def s(text: str) -> bytes:
        data = text.encode()
        return struct.pack("<Q", len(data)) + data

    kvs = [s("general.architecture") + struct.pack("<I", 8) + s(arch)]
    tokens = b"".join(s(f"tok{i}") for i in range(3000))
    kvs.append(s("tokenizer.ggml.tokens") + struct.pack("<IIQ", 9, 8, 3000) + tokens)
    kvs.append(s("tokenizer.ggml.scores") + struct.pack("<IIQ", 9, 6, 3000) + b"\0" * 12000)
    for key, value in values.items():
        kvs.append(s(f"{arch}.{key.replace('__', '.')}") + struct.pack("<II", 4, value))
    path.write_bytes(b"GGUF" + struct.pack("<IQQ", 3, 0, len(kvs)) + b"".join(kvs))
    return path


SMOLLM2 = {
    "context_length": 8192,
    "block_count": 30,
    "embedding_length": 576,
    "attention__head_count": 9,
    "attention__head_count_kv": 3,
}


def test_the_header_gives_the_training_context_and_the_kv_bytes_a_token(tmp_path: Path) -> None:
    with _gguf(tmp_path / "t.gguf", **SMOLLM2).open("rb") as f:
        facts = model_facts(read_header(f))
    # 30 layers x 3 KV heads x (64 + 64) x 2 B (f16): 23,040 B, as llama.cpp allocates
    assert facts["n_ctx_train"] == 8192 and facts["kv_bytes_per_token"] == 23_040
    (tmp_path / "bad.gguf").write_bytes(b"GGML" + b"\0" * 64)
    with pytest.raises(GgufError, match="not a GGUF file"), (tmp_path / "bad.gguf").open("rb") as f:
        read_header(f)


def test_the_box_program_is_stdlib_only_and_says_what_it_could_not_read(tmp_path: Path) -> None:
    good = _gguf(tmp_path / "t.gguf", **SMOLLM2)
    argv = ENGINE.model_facts_command(sys.executable, [str(good), str(tmp_path / "none.gguf")])
    assert argv[:2] == [sys.executable, "-c"]
    done = subprocess.run(
        [argv[0], "-I", "-S", *argv[1:]], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    facts = ENGINE.parse_model_facts(done.stdout)
    assert [f.path for f in facts] == [str(good), str(tmp_path / "none.gguf")]
    assert facts[0].kv_bytes_per_token == 23_040 and facts[0].file_bytes == good.stat().st_size
    assert facts[0].mem_available_bytes is None or facts[0].mem_available_bytes > 0
    assert facts[1].kv_bytes_per_token is None and "FileNotFoundError" in facts[1].detail
    lines = [json.loads(x) for x in done.stdout.splitlines()]
    assert len(lines) == 3 and "mem_available_bytes" in lines[-1]


def _facts(path: str, kv: int, available: int = 22 * GB) -> ModelFacts:
    return ModelFacts(path, 8192, kv, 98_362_432, available, "30 layers x 3 KV heads x 64")


def _config(**changes: object):  # type: ignore[no-untyped-def]
    table = {
        "engine": "llamacpp",
        "model_path": "/m/target.gguf",
        "speculative_draft_model_path": "/m/draft.gguf",
        "spec_type": "draft-simple",
        "metrics": True,
    }
    return config_from_table({**table, **changes})


FACTS = (_facts("/m/target.gguf", 23_040), _facts("/m/draft.gguf", 15_360))


def test_an_absurd_context_is_predicted_not_to_load_with_the_numbers() -> None:
    got = forecast_load(_config(ctx_size=20_000_000), FACTS)
    assert got is not None and got.loads is False
    assert got.load_reason.startswith("a 20,000,000-token context takes 768.0 GB of KV cache")
    assert "(38,400 B a token)" in got.load_reason  # the draft's KV cache counts too
    assert "exceeds the box's 22.0 GB available" in got.load_reason
    assert "each slot is capped at n_ctx_train 8,192" in got.load_reason
    assert got.capacity == 8192  # 4 auto slots over one unified cache, capped


@pytest.mark.parametrize(
    ("changes", "capacity"),
    [
        ({"ctx_size": 2048}, 2048),  # no --parallel: 4 slots, one unified cache of -c
        ({"ctx_size": 2048, "parallel": 1}, 2048),
        ({"ctx_size": 4096, "parallel": 4}, 4096),  # 4 slots x 1,024
        ({"ctx_size": 65536, "parallel": 2}, 16384),  # 2 x 32,768 capped at 8,192
        ({}, 8192),  # -c unset (0): the training context
    ],
)
def test_the_capacity_the_server_will_report(changes: dict, capacity: int) -> None:
    got = forecast_load(_config(**changes), FACTS)
    assert got is not None and got.loads is True and got.capacity == capacity


def test_without_the_headers_or_the_memory_nothing_is_claimed() -> None:
    assert forecast_load(_config(ctx_size=2048), ()) is None
    assert forecast_load(_config(ctx_size=2048), (ModelFacts("/m/target.gguf"),)) is None
    assert forecast_load(_config(ctx_size=2048), parse_facts("")) is None  # nothing read
    got = forecast_load(_config(ctx_size=2048), (ModelFacts("/m/target.gguf", 8192, 23_040),))
    assert got is not None and got.loads is None and "memory unknown" in got.load_reason


def test_a_prediction_is_checked_against_what_ran() -> None:
    ok = forecast_load(_config(ctx_size=4096, parallel=4), FACTS)
    right = check(ok, "ok", 4096, [(1, 30.0)])
    assert right is not None and right.load_right and right.capacity_error == 0.0
    assert right.misses == () and right.mape == 0.0
    wrong = check(ok, "crashed", None, [])
    assert wrong is not None and wrong.load_right is False
    assert wrong.misses[0].startswith("predicted to load (a 4,096-token context takes")
    off = check(ok, "ok", 3900, [])
    assert off is not None and off.misses == (
        "capacity predicted 4,096, measured 3,900 (+5.0%, beyond its ±1%)",
    )
