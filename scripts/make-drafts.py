"""Make the draft models the real-llama.cpp tests speculate with, from the target GGUF.

Run by scripts/build-llama-server.sh with the llama cache's own Python (which has the ``gguf``
package; the project's .venv does not):

    make-drafts.py --model TARGET.gguf --out DIR --quantize PATH/llama-quantize

It writes into DIR, skipping every file that is already there (each is written under a
temporary name and renamed, so a half-written file never counts as done):

- ``req_Q4_0.gguf``: the target requantized to Q4_0 by the built ``llama-quantize``; as a
  draft it agrees with the target on roughly 40 % of drafted tokens (greedy).
- ``trunc20.gguf``: the target's first 20 blocks only (the rest of the KV metadata and the
  raw tensor bytes copied as they are); a cheap, very different draft (a few % accepted).
- ``vocabmismatch.gguf``: ``trunc20.gguf`` with the token texts of ids 1000..1099 in
  reverse order; the engine refuses it as incompatible ("the target and draft vocabs are not
  compatible") and serves with speculation off.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import gguf

TRUNC_BLOCKS = 20
MISMATCH_IDS = range(1000, 1100)

KvEdit = Callable[[str, Any], Any]
"""(key, value) -> the value to write (called for every metadata key)."""


def _field_value(field: Any) -> tuple[Any, gguf.GGUFValueType, gguf.GGUFValueType | None]:
    """A reader field's value as the writer takes it; strings stay raw bytes (exact copy)."""
    kind = field.types[0]
    if kind == gguf.GGUFValueType.ARRAY:
        sub = field.types[-1]
        if sub == gguf.GGUFValueType.STRING:
            return [bytes(field.parts[i]) for i in field.data], kind, sub
        return [field.parts[i].tolist()[0] for i in field.data], kind, sub
    if kind == gguf.GGUFValueType.STRING:
        return bytes(field.parts[-1]), kind, None
    return field.parts[-1].tolist()[0], kind, None


def _architecture(reader: Any) -> str:
    field = reader.get_field("general.architecture")
    if field is None:
        raise SystemExit("make-drafts: the model has no general.architecture")
    return bytes(field.parts[-1]).decode()


def rewrite(
    source: Path,
    target: Path,
    *,
    keep_tensor: Callable[[str], bool] = lambda _name: True,
    edit: KvEdit = lambda _key, value: value,
) -> None:
    """Copy ``source`` to ``target`` (a new file) through GGUFReader -> GGUFWriter: every
    metadata key (through ``edit``) and the raw bytes of the tensors ``keep_tensor`` accepts."""
    reader = gguf.GGUFReader(source)
    arch = _architecture(reader)
    writer = gguf.GGUFWriter(target, arch)
    for key, field in reader.fields.items():
        if key.startswith("GGUF.") or key == "general.architecture":
            continue  # the header's counts and the architecture: the writer writes its own
        value, kind, sub = _field_value(field)
        if key == "general.alignment":
            writer.data_alignment = int(value)
        writer.add_key_value(key, edit(key, value), kind, sub_type=sub)
    for tensor in reader.tensors:
        if keep_tensor(tensor.name):
            writer.add_tensor(tensor.name, tensor.data, raw_dtype=tensor.tensor_type)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


def _first_blocks(n: int) -> Callable[[str], bool]:
    def keep(name: str) -> bool:
        if name.startswith("blk."):
            return int(name.split(".")[1]) < n
        return True  # token_embd.weight, output_norm.weight (output is tied to token_embd)

    return keep


def _block_count(arch: str, n: int) -> KvEdit:
    def edit(key: str, value: Any) -> Any:
        return n if key == f"{arch}.block_count" else value

    return edit


def _reversed_tokens(ids: range) -> KvEdit:
    def edit(key: str, value: Any) -> Any:
        if key != "tokenizer.ggml.tokens":
            return value
        tokens = list(value)
        tokens[ids.start : ids.stop] = tokens[ids.start : ids.stop][::-1]
        return tokens

    return edit


def _made(out: Path, name: str, make: Callable[[Path], None]) -> None:
    """Make ``out/name`` unless it exists: write a temporary file, then rename it into place."""
    final = out / name
    if final.exists():
        print(f"make-drafts: {name} exists", file=sys.stderr)
        return
    temporary = out / f".{final.stem}.{os.getpid()}.tmp.gguf"
    try:
        make(temporary)
        temporary.replace(final)
    finally:
        with contextlib.suppress(FileNotFoundError):
            temporary.unlink()
    print(f"make-drafts: made {name} ({final.stat().st_size:,} bytes)", file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", type=Path, required=True, help="the target GGUF")
    parser.add_argument("--out", type=Path, required=True, help="folder for the drafts")
    parser.add_argument("--quantize", type=Path, required=True, help="the llama-quantize binary")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)

    def requantize(path: Path) -> None:
        result = subprocess.run(
            [str(args.quantize), "--allow-requantize", str(args.model), str(path), "Q4_0"],
            capture_output=True,
            text=True,
            stdin=subprocess.DEVNULL,
            timeout=600,
        )
        if result.returncode != 0:
            sys.stderr.write(result.stdout[-2000:] + result.stderr[-4000:])
            raise SystemExit(f"make-drafts: llama-quantize failed ({result.returncode})")

    _made(args.out, "req_Q4_0.gguf", requantize)

    def truncate(path: Path) -> None:
        arch = _architecture(gguf.GGUFReader(args.model))
        rewrite(
            args.model,
            path,
            keep_tensor=_first_blocks(TRUNC_BLOCKS),
            edit=_block_count(arch, TRUNC_BLOCKS),
        )

    _made(args.out, f"trunc{TRUNC_BLOCKS}.gguf", truncate)
    _made(
        args.out,
        "vocabmismatch.gguf",
        lambda path: rewrite(
            args.out / f"trunc{TRUNC_BLOCKS}.gguf", path, edit=_reversed_tokens(MISMATCH_IDS)
        ),
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
