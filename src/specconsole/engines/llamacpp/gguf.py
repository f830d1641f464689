"""The model's own limits, read from its GGUF header: the training context and what one
token of KV cache costs.

Why: llama-server takes ``-c`` at its word — a 20,000,000-token context on a 135M model whose
``n_ctx_train`` is 8,192 is allocated (460 GB of KV) before it fails — so "will it load" is
answered from the model itself, before deploy: ``<arch>.context_length`` (the training
context: each slot is capped at it, while the KV cache is still allocated for the whole
``-c``), ``<arch>.block_count``, ``<arch>.attention.head_count_kv`` and the head size
(``<arch>.attention.key_length`` / ``value_length``, else ``embedding_length /
head_count``): an f16 KV cache takes ``layers x kv_heads x (key + value) x 2`` bytes a token.

The file is on the box, so this module is also the program that reads it there: standard
library only and self-contained, shipped as ``python3 -c`` (:func:`box_command`) and printing
one JSON line per file (``{"path": ..., "facts": {...}}`` or ``{"path": ..., "error": ...}``)
and the box's available memory. Only the header's key/value section is read (arrays are
skipped by their lengths), never the tensors.
"""

from __future__ import annotations

import json
import struct
import sys
from typing import Any, BinaryIO

MAGIC = b"GGUF"
MAX_STRING = 1 << 24
MAX_KEYS = 100_000
_SCALARS = dict(enumerate(("<B", "<b", "<H", "<h", "<I", "<i", "<f", "<?"))) | {
    10: "<Q",
    11: "<q",
    12: "<d",
}
_STRING, _ARRAY = 8, 9
WANTED = (
    "context_length",
    "block_count",
    "embedding_length",
    "attention.head_count",
    "attention.head_count_kv",
    "attention.key_length",
    "attention.value_length",
)


class GgufError(ValueError):
    """Not a GGUF file, or one this reader cannot follow; the message says where."""


def _read(f: BinaryIO, n: int) -> bytes:
    data = f.read(n)
    if len(data) != n:
        raise GgufError("the file ends inside its header")
    return data


def _unpack(f: BinaryIO, fmt: str) -> Any:
    return struct.unpack(fmt, _read(f, struct.calcsize(fmt)))[0]


def _string(f: BinaryIO) -> str:
    n = _unpack(f, "<Q")
    if n > MAX_STRING:
        raise GgufError(f"a {n}-byte string in the header")
    return _read(f, n).decode("utf-8", "replace")


def _value(f: BinaryIO, kind: int, keep: bool) -> Any:
    if kind in _SCALARS:
        return _unpack(f, _SCALARS[kind])
    if kind == _STRING:
        return _string(f) if keep else f.seek(_unpack(f, "<Q"), 1)
    if kind == _ARRAY:
        sub, count = _unpack(f, "<I"), _unpack(f, "<Q")
        if sub in _SCALARS:
            f.seek(struct.calcsize(_SCALARS[sub]) * count, 1)
        else:
            for _ in range(count):
                _value(f, sub, False)
        return None
    raise GgufError(f"unknown value type {kind}")


def read_header(f: BinaryIO) -> dict[str, Any]:
    """The header's scalar and string values (arrays skipped), by key."""
    if _read(f, 4) != MAGIC:
        raise GgufError("not a GGUF file (no GGUF magic)")
    version = _unpack(f, "<I")
    if version < 2:
        raise GgufError(f"GGUF version {version} is not read here")
    _tensors, keys = _unpack(f, "<Q"), _unpack(f, "<Q")
    if keys > MAX_KEYS:
        raise GgufError(f"{keys} header keys")
    out: dict[str, Any] = {}
    for _ in range(keys):
        key = _string(f)
        kind = _unpack(f, "<I")
        out[key] = _value(f, kind, True)
    return out


def model_facts(header: dict[str, Any]) -> dict[str, Any]:
    """``n_ctx_train`` and the f16 KV bytes a token from a header's values (None where the
    header lacks them)."""
    arch = header.get("general.architecture")
    if not isinstance(arch, str):
        raise GgufError("no general.architecture in the header")
    got = {name: header.get(f"{arch}.{name}") for name in WANTED}
    heads, kv_heads = (
        got["attention.head_count"],
        got["attention.head_count_kv"] or got["attention.head_count"],
    )
    width = got["embedding_length"]
    key = got["attention.key_length"] or (width // heads if width and heads else None)
    value = got["attention.value_length"] or key
    layers = got["block_count"]
    kv = None
    if layers and kv_heads and key and value:
        kv = int(layers) * int(kv_heads) * (int(key) + int(value)) * 2
    return {
        "architecture": arch,
        "n_ctx_train": got["context_length"],
        "kv_bytes_per_token": kv,
        "layers": layers,
        "kv_heads": kv_heads,
        "head_size": key,
    }


def _available() -> int | None:
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError):
        return None
    return None


def main(paths: list[str]) -> None:
    from pathlib import Path

    for path in paths:
        try:
            with open(path, "rb") as f:
                facts = model_facts(read_header(f))
            facts["file_bytes"] = Path(path).stat().st_size
            print(json.dumps({"path": path, "facts": facts}))
        except (OSError, GgufError, struct.error) as exc:
            print(json.dumps({"path": path, "error": f"{type(exc).__name__}: {exc}"}))
    print(json.dumps({"mem_available_bytes": _available()}))


def box_command(python: str, paths: list[str]) -> list[str]:
    """The argv that runs this reader on the box (the module's own source, no package)."""
    import inspect

    source = inspect.getsource(sys.modules[__name__])
    source = source.replace("from __future__ import annotations\n", "", 1)
    return [python, "-c", source, *paths]  # its own ``__main__`` guard runs it


if __name__ == "__main__":  # pragma: no cover - the box runs it through box_command
    main(sys.argv[1:])
