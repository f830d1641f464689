"""The console editor's fields as vLLM spells them.

Why here: vLLM carries the draft settings inside ``--speculative-config``'s JSON and has no
flag at all for some fields (``speculative_eagle_topk``); the editor labels each box with the
``[server]`` key and shows the vLLM flag it renders as, or that it renders none.
"""

from __future__ import annotations

from specconsole.core.config.model import TUNING_FIELDS
from specconsole.core.engine.protocol import EditorField
from specconsole.engines.vllm.flags import MODELLED_FLAGS

__all__ = ["editor_fields", "release_line"]

_SPEC_KEYS: dict[str, str] = {
    "speculative_num_steps": "num_speculative_tokens",
}
"""Fields vLLM carries inside ``--speculative-config``'s JSON (besides the method)."""


def _flag(name: str) -> tuple[str, str]:
    by_field: dict[str, str] = {}
    for flag, field in MODELLED_FLAGS.items():
        by_field.setdefault(field, flag)
    if name in _SPEC_KEYS:
        return "--speculative-config", f"vLLM: {_SPEC_KEYS[name]} in the JSON"
    if name in by_field:
        return by_field[name], ""
    return "", "vLLM has no flag for it: not rendered"


def editor_fields(version: str | None) -> tuple[EditorField, ...]:
    """The fields (vLLM's flags do not change by release in the tables kept here)."""
    out = []
    for name, kind, hint in TUNING_FIELDS:
        flag, note = ("", "") if kind == "args" else _flag(name)
        out.append(EditorField(name, kind, hint, flag, note))
    return tuple(out)


def release_line(version: str | None, source: str = "") -> str:
    """What the editor says about the release whose names it uses."""
    return "vLLM: its flag names (speculative settings in --speculative-config)"
