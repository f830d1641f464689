"""What a generation request asks for, read the same way by every face: its prompt's text and
length in tokens, and its positive integer fields.

Why apart from the faces' routes: the box has no tokenizer — one whitespace-separated word is
one token, a chat message adds four template tokens — and both the SGLang and the vLLM face
must count a request exactly alike, so the same benchmark reads the same numbers from either.
"""

from __future__ import annotations

from typing import Any

__all__ = ["count_prompt_tokens", "model_list", "positive_int", "prompt_text"]


def prompt_text(payload: dict[str, Any]) -> str | None:
    """The text whose kind sets the request's acceptance (:mod:`specconsole.sim.physics.textkind`):
    ``text`` / ``prompt``, or the last user message; None for token ids (no text to read)."""
    for key in ("text", "prompt"):
        value = payload.get(key)
        if isinstance(value, str):
            return value
        if isinstance(value, list) and value and isinstance(value[0], str):
            return value[0]
    messages = payload.get("messages")
    if isinstance(messages, list):
        for m in reversed(messages):
            if isinstance(m, dict) and m.get("role") == "user":
                content = m.get("content")
                if isinstance(content, str):
                    return content
                if isinstance(content, list):
                    return " ".join(
                        str(p.get("text")) for p in content if isinstance(p, dict) and p.get("text")
                    )
    return None


def count_prompt_tokens(payload: dict[str, Any]) -> int:
    """Prompt tokens: ``input_ids`` length, else one token per whitespace-separated word."""
    ids = payload.get("input_ids")
    if isinstance(ids, list):
        return max(len(ids), 1)
    for key in ("text", "prompt"):
        value = payload.get(key)
        if isinstance(value, str):
            return max(len(value.split()), 1)
        if isinstance(value, list) and value and isinstance(value[0], str):
            return max(len(value[0].split()), 1)
        if isinstance(value, list) and value and isinstance(value[0], int):
            return len(value)
    messages = payload.get("messages")
    if isinstance(messages, list):
        total = 0
        for m in messages:
            content = m.get("content") if isinstance(m, dict) else None
            if isinstance(content, str):
                total += len(content.split()) + 4  # chat-template tokens per message
            elif isinstance(content, list):
                for part in content:
                    if isinstance(part, dict) and isinstance(part.get("text"), str):
                        total += len(part["text"].split())
                total += 4
        return max(total, 1)
    return 1


def positive_int(value: Any, name: str, default: int) -> int:
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
    return value


def model_list(name: str, created: int, owned_by: str, root: str, max_len: int) -> dict[str, Any]:
    """``GET /v1/models``' answer: the one served model (every OpenAI-compatible face)."""
    return {
        "object": "list",
        "data": [
            {
                "id": name,
                "object": "model",
                "created": created,
                "owned_by": owned_by,
                "root": root,
                "parent": None,
                "max_model_len": max_len,
            }
        ],
    }
