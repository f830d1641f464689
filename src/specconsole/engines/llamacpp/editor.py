"""The console editor's fields as llama-server spells them.

Why here: the editor labels each box with the ``[server]`` key and the flag it renders as;
llama.cpp's knobs are its own keys (:mod:`.options`), shown in their declared order, then
``extra_args``. There is no release to name: the flags are the box's own ``--help``'s.
"""

from __future__ import annotations

from specconsole.core.engine.protocol import EditorField
from specconsole.engines.llamacpp.options import OPTION_FIELDS

__all__ = ["editor_fields", "release_line"]

_EDITED = (
    "spec_type",
    "spec_draft_n_max",
    "spec_draft_n_min",
    "spec_draft_p_min",
    "spec_draft_ngl",
    "spec_draft_threads",
    "ctx_size",
    "parallel",
    "threads",
    "n_gpu_layers",
)
"""The keys a tuner edits (the rest are set in the plan or extra_args)."""


def editor_fields(version: str | None) -> tuple[EditorField, ...]:
    """The editor's fields (llama.cpp's spelling does not follow a release number)."""
    by_name = {f.name: f for f in OPTION_FIELDS}
    fields = [
        EditorField(name, by_name[name].kind, by_name[name].hint, by_name[name].flag)
        for name in _EDITED
    ]
    fields.append(EditorField("extra_args", "args", "further flags, shell-quoted"))
    return tuple(fields)


def release_line(version: str | None, source: str = "") -> str:
    """What the editor says about the flags it uses."""
    return "llama.cpp: flags as the box's llama-server --help spells them"
