"""Benchmark workloads: ``--dataset sharegpt:FILE | jsonl:FILE | random | builtin``.

Why: speculative decoding's accept length depends on the text, so a tuner must be able to
benchmark the traffic it will serve — a ShareGPT-format export, a JSONL file of real
prompts — not only one synthetic shape. Lengths follow bench_serving: ``--input-len`` /
``--output-len`` with ``--range-ratio`` R draw each request's lengths uniformly from
``[max(1, int(len × R)), len]`` (R = 1: fixed lengths; bench_serving's
``--random-range-ratio``), seeded by ``--seed``.

Files are **streamed**: a ShareGPT JSON array (or JSON-lines) file is decoded one entry at a
time and only the entries the run uses are kept (the pool is at most ``limit`` prompts);
nothing reads the whole file into memory. Each dataset is identified in every record by
``dataset_name`` and ``dataset_sha256`` (of the file's bytes, hashed in blocks; of the packaged
prompt file for ``builtin``; of the generating parameters for ``random``).

* ``sharegpt:FILE``: bench_serving's ShareGPT format — objects with ``conversations``:
  ``[{"from": "human", "value": ...}, {"from": "gpt", "value": ...}, ...]``; the first human
  turn is the prompt (entries without one, or under 2 estimated tokens, are skipped). Its
  output length is the answer's (the turn after it, ~4 characters a token), as bench_serving
  samples ShareGPT — unless ``--output-len`` / ``[bench] output_len`` is given, which fixes
  it (bench_serving's ``--sharegpt-output-len``).
* ``jsonl:FILE`` (or a bare path): ``{"prompt": ...}``, ``{"messages": [...]}`` (a last
  ``assistant`` message is the recorded answer, not part of the prompt) or bench_serving's
  custom ``{"conversations": [...]}`` per line; an optional ``"output_len"`` sets that
  request's output length, a recorded answer sets it as for ShareGPT.
* ``builtin``, ``random``: see :mod:`specconsole.bench.workload.prompts`.
* ``coding``, ``prose``: built-in sets like ``builtin``, each prompt in the model's chat
  template on the text APIs (the chat API sends it as a user message: the server applies
  the template), :mod:`specconsole.core.config.chat_templates`.
* ``alternating:coding,prose`` (any of ``builtin``, ``random``, ``coding``, ``prose``, two or
  more): shifting traffic — each level runs its requests in phases, one built-in workload
  at a time in turn (coding, prose, coding, ...), each prompt tagged with its category
  (``Prompt.category``); the engine's counters are read at each phase's end, so each
  category's acceptance is reported per level (:mod:`specconsole.bench.ladder_run`).
"""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Iterator
from dataclasses import replace
from importlib import resources
from pathlib import Path
from typing import Any

from specconsole.bench.workload.prompts import (
    ALTERNATING,
    BUILTIN,
    MAX_ENTRY_BYTES,
    MIN_TOKENS,
    RANDOM,
    TEMPLATED,
    Prompt,
    PromptError,
    _fit_to_length,
    builtin_texts,
    conversation_prompt,
    estimate_tokens,
    load_jsonl_lines,
    random_text,
)
from specconsole.core.config.chat_templates import DEFAULT_TEMPLATE, apply_template

SHAREGPT = "sharegpt"
JSONL = "jsonl"
_READ_BLOCK = 1 << 16


PHASED: tuple[str, ...] = (BUILTIN, RANDOM, *TEMPLATED)
"""The built-in workloads an alternating one takes turns between."""


def phases_of(source: str) -> tuple[str, ...]:
    """The workloads ``alternating:A,B,...`` takes turns between (raises PromptError naming
    the fix); ``()`` for any other source."""
    kind, sep, rest = source.partition(":")
    if kind != ALTERNATING or not sep:
        return ()
    names = tuple(n.strip() for n in rest.split(",") if n.strip())
    unknown = [n for n in names if n not in PHASED]
    if len(names) < 2 or unknown or len(set(names)) != len(names):
        raise PromptError(
            f"--dataset {source!r}: give two or more different built-in workloads to take "
            f"turns between, e.g. alternating:coding,prose (any of {', '.join(PHASED)})"
        )
    return names


def parse_source(source: str) -> tuple[str, str | None]:
    """``"sharegpt:FILE"`` → ``("sharegpt", FILE)``; a bare path means ``jsonl``;
    ``alternating:A,B`` → ``("alternating", "A,B")``."""
    if source in (BUILTIN, RANDOM, *TEMPLATED):
        return source, None
    if phases_of(source):
        return ALTERNATING, ",".join(phases_of(source))
    kind, sep, path = source.partition(":")
    if sep and kind in (SHAREGPT, JSONL):
        if not path:
            raise PromptError(f"--dataset {source!r}: give a file after '{kind}:'")
        return kind, str(Path(path).expanduser())
    return JSONL, str(Path(source).expanduser())


def file_sha256(path: str) -> str:
    digest = hashlib.sha256()
    try:
        with open(path, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                digest.update(block)
    except OSError as exc:
        raise PromptError(f"--dataset: cannot read {path}: {exc.strerror or exc}") from exc
    return digest.hexdigest()


def iter_json_entries(path: str) -> Iterator[tuple[int, Any]]:
    """``(entry number, object)`` from a JSON array file or a JSON-lines file, decoded
    incrementally (one entry in memory at a time)."""
    decoder = json.JSONDecoder()
    try:
        f = open(path, encoding="utf-8")  # noqa: SIM115 - closed in the finally below
    except OSError as exc:
        raise PromptError(f"--dataset: cannot read {path}: {exc.strerror or exc}") from exc
    try:
        yield from _entries(f, path, decoder)
    except UnicodeDecodeError as exc:
        raise PromptError(
            f"{path} is not UTF-8 text ({exc.reason} at byte {exc.start} of a block); fix: "
            "give a ShareGPT JSON file or a JSON-lines file (is it a binary file?)"
        ) from None
    except OSError as exc:
        raise PromptError(f"--dataset: cannot read {path}: {exc.strerror or exc}") from exc
    finally:
        f.close()


def _entries(f: Any, path: str, decoder: json.JSONDecoder) -> Iterator[tuple[int, Any]]:
    """The entries of an open dataset file (see :func:`iter_json_entries`). An entry that is
    not valid JSON within ``MAX_ENTRY_BYTES``, or nests too deeply, is a PromptError: never held
    whole nor recursed into. A cut entry is decoded again only once the buffer has doubled, so
    a long entry costs O(n log n), not O(n²)."""
    buf, eof, number, started, retry_at = "", False, 0, False, 0
    while True:
        buf = buf.lstrip(" \t\r\n,")
        if not started and buf.startswith("["):
            buf, started = buf[1:], True
            continue
        if buf.startswith("]"):
            return
        if buf and (eof or len(buf) >= retry_at):
            try:
                obj, end = decoder.raw_decode(buf)
            except RecursionError:
                raise PromptError(
                    f"{path}: entry {number + 1} nests too deeply; fix: give flat "
                    "conversation objects"
                ) from None
            except json.JSONDecodeError as exc:
                if eof or len(buf) > MAX_ENTRY_BYTES:
                    raise PromptError(
                        f"{path}: entry {number + 1} is not valid JSON ({exc.msg}); the file "
                        "must be a JSON array of objects or one JSON object per line"
                        + (
                            f" (none within {MAX_ENTRY_BYTES >> 20} MiB)"
                            if len(buf) > MAX_ENTRY_BYTES
                            else ""
                        )
                    ) from exc
                retry_at = 2 * len(buf)
            else:
                number += 1
                buf, retry_at = buf[end:], 0
                yield number, obj
                continue
        elif not buf and eof:
            return
        block = f.read(_READ_BLOCK)
        eof = not block
        buf += block


def _sharegpt_prompts(path: str, limit: int, *, need_reply: bool) -> list[Prompt]:
    """The first ``limit`` usable conversations: a first human turn of 2 or more estimated
    tokens and, when the lengths come from the dataset (``need_reply``), an answer of 2 or
    more (bench_serving prunes shorter ones)."""
    out: list[Prompt] = []
    for number, entry in iter_json_entries(path):
        turns = entry.get("conversations") if isinstance(entry, dict) else None
        if not isinstance(turns, list):
            raise PromptError(
                f'{path}: entry {number} has no "conversations" list; ShareGPT entries look '
                'like {"conversations": [{"from": "human", "value": "..."}, ...]}'
            )
        prompt = conversation_prompt(turns, f"{path}: entry {number}")
        if prompt is None:
            continue
        if need_reply and (prompt.reply_tokens or 0) < MIN_TOKENS:
            continue
        out.append(prompt)
        if len(out) >= limit:
            break
    if not out:
        raise PromptError(f"--dataset: {path} holds no usable ShareGPT conversations")
    return out


def _lengths(rng: random.Random, length: int, ratio: float) -> int:
    low = max(1, int(length * ratio))
    return length if low >= length else rng.randint(low, length)


def load_dataset(
    source: str,
    count: int,
    *,
    input_len: int,
    output_len: int,
    range_ratio: float = 1.0,
    seed: int = 42,
    reply_lengths: bool = False,
    chat_template: str | None = None,
) -> tuple[list[Prompt], dict[str, Any]]:
    """``count`` prompts (each with its output length) and the settings that identify the
    workload in records: ``dataset_name``, ``dataset_path``, ``dataset_sha256``.

    ``reply_lengths``: a request whose entry recorded an answer (a ShareGPT conversation, a
    custom line's assistant turn) generates that answer's estimated token count, as
    bench_serving does without ``--sharegpt-output-len``; otherwise (and for entries without
    one) ``output_len``, drawn with ``range_ratio``. A line's own ``output_len`` always wins.
    ``chat_template``: the family the ``coding`` and ``prose`` prompts are wrapped in.
    """
    if not 0 < range_ratio <= 1:
        raise PromptError("--range-ratio: give a number in (0, 1]; 1 means fixed lengths")
    if input_len <= 0 or output_len <= 0:
        raise PromptError("--input-len and --output-len must be positive numbers of tokens")
    kind, path = parse_source(source)
    if kind == ALTERNATING:
        return _alternating(
            source, count, input_len=input_len, output_len=output_len, range_ratio=range_ratio,
            seed=seed, chat_template=chat_template,
        )  # fmt: skip
    rng = random.Random(seed)
    count = max(count, 1)
    name = "custom" if kind == JSONL else kind  # bench_serving calls a user file "custom"
    settings: dict[str, Any] = {"dataset_name": name, "random_range_ratio": range_ratio}
    prompts: list[Prompt]
    if kind == RANDOM:
        prompts = []
        for _ in range(count):
            n = _lengths(rng, input_len, range_ratio)
            prompts.append(Prompt(text=random_text(n, rng), est_tokens=n))
        settings["dataset_sha256"] = hashlib.sha256(
            f"random:{seed}:{input_len}:{range_ratio}".encode()
        ).hexdigest()
    elif kind == BUILTIN or kind in TEMPLATED:
        file = "prompts" if kind == BUILTIN else kind
        template = (chat_template or DEFAULT_TEMPLATE) if kind in TEMPLATED else None
        texts = builtin_texts(file)
        order = list(range(len(texts)))
        rng.shuffle(order)
        prompts = []
        for i in range(count):
            j = order[i % len(order)]
            others = [t for k, t in enumerate(texts) if k != j]
            text = _fit_to_length(texts[j], others, _lengths(rng, input_len, range_ratio), rng)
            if template is None:
                prompts.append(Prompt(text=text, est_tokens=estimate_tokens(text)))
            else:  # the text APIs get the template; the chat API the message (its server's)
                message = ({"role": "user", "content": text},)
                templated = apply_template(template, text)
                prompts.append(Prompt(templated, message, estimate_tokens(templated)))
        data = resources.files("specconsole.bench").joinpath(f"data/{file}.jsonl").read_bytes()
        settings["dataset_sha256"] = hashlib.sha256(data).hexdigest()
        if template is not None:
            settings["chat_template"] = template
    else:
        assert path is not None
        settings["dataset_path"] = path
        settings["dataset_sha256"] = file_sha256(path)
        if kind == SHAREGPT:
            pool = _sharegpt_prompts(path, count, need_reply=reply_lengths)
        else:
            pool = load_jsonl_lines(path, limit=count)
        order = list(range(len(pool)))
        rng.shuffle(order)
        prompts = [pool[order[i % len(order)]] for i in range(count)]
    if reply_lengths and any(p.reply_tokens for p in prompts):
        settings["output_len_source"] = "dataset"  # bench_serving without --sharegpt-output-len
        prompts = [
            replace(p, output_len=p.reply_tokens) if p.output_len is None and p.reply_tokens else p
            for p in prompts
        ]
    if range_ratio < 1 or kind in (SHAREGPT, JSONL):
        prompts = [
            p
            if p.output_len is not None
            else replace(p, output_len=_lengths(rng, output_len, range_ratio))
            for p in prompts
        ]
    return prompts, settings


def _alternating(
    source: str,
    count: int,
    *,
    input_len: int,
    output_len: int,
    range_ratio: float,
    seed: int,
    chat_template: str | None,
) -> tuple[list[Prompt], dict[str, Any]]:
    """Each phase's workload, ``count`` prompts in all, every one tagged with its category,
    in the phases' order (the load generator draws from each category in turn)."""
    names = phases_of(source)
    share = max(1, -(-max(count, 1) // len(names)))
    prompts: list[Prompt] = []
    digest = hashlib.sha256(source.encode())
    settings: dict[str, Any] = {}
    for name in names:
        pool, own = load_dataset(
            name, share, input_len=input_len, output_len=output_len,
            range_ratio=range_ratio, seed=seed, chat_template=chat_template,
        )  # fmt: skip
        prompts += [replace(p, category=name) for p in pool]
        digest.update(str(own.get("dataset_sha256", "")).encode())
        if "chat_template" in own:
            settings["chat_template"] = own["chat_template"]
    settings.update(
        dataset_name=source,
        random_range_ratio=range_ratio,
        dataset_sha256=digest.hexdigest(),
        phases=list(names),
    )
    return prompts, settings
