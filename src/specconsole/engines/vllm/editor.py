"""The console editor's fields as vLLM spells them.

Why here: vLLM carries the draft settings inside ``--speculative-config``'s JSON and has no
flag at all for some fields (``speculative_eagle_topk``); the editor labels each box with the
``[server]`` key and shows what vLLM calls it — its flag, or the JSON key — or that it renders
nothing, so a vLLM user reads their own words (``--gpu-memory-utilization``,
``num_speculative_tokens``, ``--max-num-seqs``) next to every value they edit.
"""

from __future__ import annotations

from specconsole.core.config.model import TUNING_FIELDS
from specconsole.core.config.releases import parse_version
from specconsole.core.engine.protocol import EditorField
from specconsole.engines.vllm.flags import MODELLED_FLAGS
from specconsole.engines.vllm.releases import KNOWN_RELEASES

__all__ = ["editor_fields", "release_line"]

_SPEC_KEYS: dict[str, str] = {
    "speculative_num_steps": "num_speculative_tokens",
    "speculative_draft_model_path": "model",
    "speculative_algorithm": "method",
}
"""Fields vLLM carries inside ``--speculative-config``'s JSON: its key there."""

WORDS: dict[str, tuple[str, str]] = {
    "speculative_algorithm": ("method", "method"),
    "speculative_draft_model_path": ("speculative model", "draft"),
    "speculative_num_steps": ("num_speculative_tokens", "spec-tokens"),
    "mem_fraction_static": ("gpu_memory_utilization", "gpu-mem"),
    "max_running_requests": ("max_num_seqs", "seqs"),
    "context_length": ("max_model_len", "max-len"),
    "tp_size": ("tensor_parallel_size", "tp"),
}
"""Each shared field as vLLM calls it, and its abbreviation in labels (``spec-tokens=4
gpu-mem=0.9``): a vLLM session's reports, findings and messages speak vLLM."""

_NOT_RENDERED: dict[str, str] = {
    "speculative_eagle_topk": "vLLM drafts a chain (topk 1): not rendered",
    "speculative_num_draft_tokens": "vLLM verifies num_speculative_tokens + 1: not rendered",
    "cuda_graph_max_bs": "vLLM has no such flag here: not rendered",
    "attention_backend": "set VLLM_ATTENTION_BACKEND in env: not rendered",
}
"""Shared fields vLLM has no flag for, and what it does instead."""


def _flag(name: str) -> tuple[str, str]:
    by_field: dict[str, str] = {}
    for flag, field in MODELLED_FLAGS.items():
        by_field.setdefault(field, flag)
    if name in _SPEC_KEYS:
        return "--speculative-config", f"{_SPEC_KEYS[name]} in its JSON"
    if name in by_field:
        return by_field[name], ""
    return "", _NOT_RENDERED.get(name, "vLLM has no flag for it: not rendered")


def editor_fields(version: str | None) -> tuple[EditorField, ...]:
    """The shared fields in vLLM's words (its flags did not change across the releases
    checked). Its own key, the per-batch-size K, is a text a plan or file sets, not a box of
    the editor (whose kinds are numbers, the algorithm and the arguments)."""
    out = []
    for name, kind, hint in TUNING_FIELDS:
        flag, note = ("", "") if kind == "args" else _flag(name)
        word, short = WORDS.get(name, ("", ""))
        out.append(EditorField(name, kind, hint, flag, note, word, short))
    return tuple(out)


def release_line(version: str | None, source: str = "") -> str:
    """What the editor says about the release whose names and rules it uses."""
    where = f" ({source})" if source and source != "unknown" else ""
    if version is None:
        return "vLLM: its flags (speculative settings in --speculative-config)"
    try:
        parse_version(version)
    except ValueError:
        return f"vLLM {version!r} is not a release number: fix [server] engine_version"
    text = f"vLLM {version}{where}: its flags (speculative settings in --speculative-config)"
    if version not in KNOWN_RELEASES:
        text += f"; not one of the releases checked ({', '.join(KNOWN_RELEASES)})"
    return text
