"""The parameter editor's field list for the engine and release that run on the box.

Why it exists: flags change between releases (``core.config.engine_versions``): SGLang 0.5.23 spells
``cuda_graph_max_bs`` as ``--cuda-graph-max-bs-decode`` and refuses the old flag, and vLLM has
no flag at all for some fields (``speculative_eagle_topk``). The editor labels each box with
the ``[server]`` key users know, shows the flag it will render as *for that release*, flags or
hides what the engine does not render, and validates the candidate with that release's rules.
The widget only lays this out; every decision is here, as plain functions.

Flag names come from the same places the renderer asks (``core.config.engine_versions.flag_for`` for
SGLang, ``core.config.modelled_flags.VLLM_MODELLED_FLAGS`` for vLLM), so the editor cannot show a
flag the command line does not use (``tests/present/test_editor_fields.py`` renders each).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from specconsole.core.config.engine_versions import (
    DEFAULT_VERSION,
    KNOWN_RELEASES,
    flag_for,
    parse_version,
)
from specconsole.core.config.model import Engine, ServerConfig
from specconsole.core.config.modelled_flags import VLLM_MODELLED_FLAGS

__all__ = [
    "FIELDS",
    "FormField",
    "editing_release",
    "editor_fields",
    "release_line",
    "shown_fields",
    "with_release",
]


@dataclass(frozen=True, slots=True)
class FormField:
    """One editable ``ServerConfig`` field, as the edited engine release spells it."""

    name: str
    """The ``ServerConfig`` attribute (the stable ``[server]`` key)."""
    kind: str
    """``int``, ``float``, ``algorithm`` or ``args``."""
    hint: str
    """What the field does, one short line."""
    flag: str = ""
    """The flag it renders as for the edited release (``""``: the engine renders none)."""
    note: str = ""
    """Why the field is flagged (renamed in this release, not rendered by this engine)."""

    @property
    def rendered(self) -> bool:
        """Whether the edited engine's command line carries this field."""
        return bool(self.flag) or self.kind == "args"

    @property
    def label(self) -> str:
        """The box's label: the key, and the flag only where it is not the key's own
        spelling (``cuda_graph_max_bs → --cuda-graph-max-bs-decode``), and why."""
        text = self.name
        if self.flag and self.flag != "--" + self.name.replace("_", "-"):
            text += f" → {self.flag}"
        return f"{text} ({self.note})" if self.note else text


_SPECS: tuple[tuple[str, str, str], ...] = (
    ("speculative_algorithm", "algorithm", "EAGLE, EAGLE3, NEXTN, STANDALONE, NGRAM or none"),
    ("speculative_num_steps", "int", "draft depth per verify step"),
    ("speculative_eagle_topk", "int", "branching factor of the draft tree"),
    ("speculative_num_draft_tokens", "int", "verify width (tree nodes + root)"),
    ("mem_fraction_static", "float", "share of GPU memory for weights + KV pool"),
    ("cuda_graph_max_bs", "int", "largest decode batch captured as a CUDA graph"),
    ("max_running_requests", "int", "cap on requests in flight (48 if unset with spec)"),
    ("tp_size", "int", "tensor-parallel GPU count"),
    ("extra_args", "args", "further flags, shell-quoted"),
)
"""The editor's fields in display order: name, kind, hint."""

_VLLM_SPEC_KEYS: dict[str, str] = {
    "speculative_num_steps": "num_speculative_tokens",
}
"""Fields vLLM carries inside ``--speculative-config``'s JSON (besides the method)."""


def _sglang_flag(name: str, version: str | None) -> tuple[str, str]:
    dashed = "--" + name.replace("_", "-")
    flag = flag_for(name, dashed, version)
    note = f"{dashed} in older releases" if flag != dashed else ""
    return flag, note


def _vllm_flag(name: str) -> tuple[str, str]:
    by_field: dict[str, str] = {}
    for flag, field in VLLM_MODELLED_FLAGS.items():
        by_field.setdefault(field, flag)
    if name in _VLLM_SPEC_KEYS:
        return "--speculative-config", f"vLLM: {_VLLM_SPEC_KEYS[name]} in the JSON"
    if name in by_field:
        return by_field[name], ""
    return "", "vLLM has no flag for it: not rendered"


def editor_fields(engine: Engine, version: str | None) -> tuple[FormField, ...]:
    """The fields for ``engine`` at release ``version`` (SGLang's; ``None`` or not a release
    number: unknown, so :data:`DEFAULT_VERSION`'s names; validation names the bad version)."""
    try:
        parse_version(version or DEFAULT_VERSION)
    except ValueError:
        version = None
    out = []
    for name, kind, hint in _SPECS:
        if kind == "args":
            flag, note = "", ""
        elif engine is Engine.VLLM:
            flag, note = _vllm_flag(name)
        else:
            flag, note = _sglang_flag(name, version)
        out.append(FormField(name, kind, hint, flag, note))
    return tuple(out)


FIELDS: tuple[FormField, ...] = editor_fields(Engine.SGLANG, None)
"""The fields when the release is unknown (SGLang, :data:`DEFAULT_VERSION`'s names)."""


def shown_fields(
    fields: tuple[FormField, ...], *configs: ServerConfig | None
) -> tuple[FormField, ...]:
    """The fields the editor shows: those the engine renders, and any other that one of
    ``configs`` (the edited one, the deployed one) sets — flagged, so its value can be seen,
    reverted and cleared rather than silently kept."""
    return tuple(
        f
        for f in fields
        if f.rendered or any(c is not None and getattr(c, f.name) is not None for c in configs)
    )


def editing_release(
    config: ServerConfig, known: str | None, source: str = ""
) -> tuple[str | None, str]:
    """The release the editor edits for and where it came from: ``[server] engine_version``
    (``declared``) wins over the one found on the box (``known``, from ``source``)."""
    if config.engine_version:
        return config.engine_version, "declared"
    return known, source if known else ""


def with_release(config: ServerConfig, version: str | None) -> ServerConfig:
    """``config`` as validation must see it: in ``version``'s names and rules (its own
    ``engine_version`` wins). The editor applies the configuration without it, so a trial's
    identity does not change with the release detected."""
    if config.engine_version or version is None or config.engine is not Engine.SGLANG:
        return config
    return replace(config, engine_version=version)


def release_line(engine: Engine, version: str | None, source: str = "") -> str:
    """What the editor says about the release whose names and rules it uses (``""`` while
    it is unknown: the editor then shows what render and validate use without a release)."""
    if engine is Engine.VLLM:
        return "vLLM: its flag names (speculative settings in --speculative-config)"
    where = f" ({source})" if source and source != "unknown" else ""
    if version is None:
        return ""  # the names of DEFAULT_VERSION, as render and validate use them
    try:
        parsed = parse_version(version)
    except ValueError:
        return f"SGLang {version!r} is not a release number: fix [server] engine_version"
    text = f"SGLang {version}{where}: its flag names and rules"
    if version not in KNOWN_RELEASES:
        newest = max(KNOWN_RELEASES, key=parse_version)
        side = "newer than" if parsed > parse_version(newest) else "not one of"
        text += f"; {side} the releases checked ({', '.join(KNOWN_RELEASES)})"
    return text
