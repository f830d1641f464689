"""Will llama-server load this configuration, and what capacity will it report: predicted
from the models' own GGUF headers and the box's memory, before deploy.

Why its own module: llama.cpp allocates the KV cache for the whole ``-c`` (``ctx_size``) at
start — one f16 cell per token per layer and KV head, the draft's too — and dies when malloc
refuses (``ggml_aligned_malloc: insufficient memory``), while each slot's context is capped
at the model's training context (``n_ctx_train``: "the slot context exceeds the training
context of the model - capping"). Both follow from the model file (``gguf.py`` reads it on
the box) and ``MemAvailable``, so a 20,000,000-token context on a 135M model is predicted
not to load, with the numbers, before anything is deployed.

The capacity llama-server reports (``n_slots = N, n_ctx_slot = C, kv_unified = 'B'``, read
by ``logs.py``): without ``--parallel`` it runs 4 slots over one unified cache of ``-c``
tokens; with ``--parallel N`` each slot gets ``-c / N``; either capped at ``n_ctx_train``;
``-c 0`` (or unset) is the training context.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from specconsole.core.config.model import ServerConfig
from specconsole.core.measure.forecast import Forecast, ModelFacts

__all__ = ["AUTO_SLOTS", "forecast_load", "model_files", "parse_facts"]

AUTO_SLOTS = 4
"""Slots llama-server runs without ``--parallel`` (``-np -1``: auto)."""
_GB = 1e9


def model_files(config: ServerConfig) -> tuple[str, ...]:
    """The model files a launch reads: the target and, when given, the draft."""
    files = [config.model_path or "", config.speculative_draft_model_path or ""]
    return tuple(f for f in files if f)


def parse_facts(output: str) -> tuple[ModelFacts, ...]:
    """The box reader's lines (``gguf.main``) as facts; a file it could not read keeps the
    reason as its ``detail``; lines that are not its JSON are ignored."""
    rows: list[dict[str, object]] = []
    available: int | None = None
    for line in output.splitlines():
        try:
            row = json.loads(line)
        except ValueError:
            continue
        if not isinstance(row, dict):
            continue
        if "mem_available_bytes" in row:
            got = row["mem_available_bytes"]
            available = got if isinstance(got, int) and got > 0 else None
        elif isinstance(row.get("path"), str):
            rows.append(row)
    out: list[ModelFacts] = []
    for row in rows:
        facts = row.get("facts")
        if not isinstance(facts, dict):
            out.append(ModelFacts(str(row["path"]), detail=str(row.get("error", "unread"))))
            continue
        layers, heads, size = facts.get("layers"), facts.get("kv_heads"), facts.get("head_size")
        out.append(
            ModelFacts(
                path=str(row["path"]),
                n_ctx_train=_positive(facts.get("n_ctx_train")),
                kv_bytes_per_token=_positive(facts.get("kv_bytes_per_token")),
                file_bytes=_positive(facts.get("file_bytes")),
                mem_available_bytes=available,
                detail=f"{layers} layers x {heads} KV heads x {size}",
            )
        )
    return tuple(out)


def _positive(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def _slots(config: ServerConfig) -> tuple[int, bool]:
    """(slots, unified cache)."""
    parallel = config.parallel
    if not isinstance(parallel, int) or parallel < 1:
        return AUTO_SLOTS, True
    return parallel, False


def forecast_load(config: ServerConfig, facts: Sequence[ModelFacts]) -> Forecast | None:
    """The load and the capacity from the models' headers (None: the target's header was
    not read)."""
    by_path = {f.path: f for f in facts}
    target = by_path.get(config.model_path or "")
    if target is None or target.kv_bytes_per_token is None:
        return None
    draft = by_path.get(config.speculative_draft_model_path or "")
    train = target.n_ctx_train
    ctx = config.ctx_size if isinstance(config.ctx_size, int) and config.ctx_size > 0 else None
    ctx = ctx or train
    if ctx is None:
        return None
    slots, unified = _slots(config)
    per_slot = ctx if unified else max(1, ctx // slots)
    if train:
        per_slot = min(per_slot, train)
    capacity = per_slot if unified else slots * per_slot
    per_token = target.kv_bytes_per_token + ((draft.kv_bytes_per_token or 0) if draft else 0)
    kv = ctx * per_token
    weights = (target.file_bytes or 0) + ((draft.file_bytes or 0) if draft else 0)
    source = f"the GGUF headers ({target.detail or 'target'}"
    source += f"; draft {draft.detail})" if draft and draft.detail else ")"
    capped = f"; each slot is capped at n_ctx_train {train:,}" if train and ctx > train else ""
    need = (
        f"a {ctx:,}-token context takes {kv / _GB:,.1f} GB of KV cache ({per_token:,} B a "
        f"token) and {weights / _GB:,.1f} GB of weights"
    )
    available = target.mem_available_bytes
    offloaded = isinstance(config.n_gpu_layers, int) and config.n_gpu_layers > 0
    if available is None or offloaded:
        where = "layers offloaded to a GPU" if offloaded else "the box's memory unknown"
        return Forecast(
            loads=None,
            load_reason=f"{need}; {where}: not predicted{capped}",
            capacity=capacity,
            capacity_band=0.01,
            source=source,
        )
    loads = kv + weights <= available
    verdict = "fits in" if loads else "exceeds"
    return Forecast(
        loads=loads,
        load_reason=f"{need}: {verdict} the box's {available / _GB:,.1f} GB available{capped}",
        capacity=capacity,
        capacity_band=0.01,
        source=source,
    )
