"""The parameter editor's field list for the engine and release that run on the box.

Why it exists: flags change between releases and engines (SGLang 0.5.23 spells
``cuda_graph_max_bs`` as ``--cuda-graph-max-bs-decode`` and refuses the old flag; vLLM has no
flag at all for ``speculative_eagle_topk``). The editor labels each box with the ``[server]``
key users know, shows the flag it will render as *for that engine and release*, flags or hides
what the engine does not render, and validates the candidate with that release's rules. The
widget only lays this out; every decision is here or in the engine (its ``editor_fields``,
from the same tables its renderer reads, so the editor cannot show a flag the command line
does not use: ``tests/present/test_editor_fields.py`` renders each).
"""

from __future__ import annotations

import functools
import shlex
from typing import TYPE_CHECKING

from specconsole.core.engine.protocol import EditorField as FormField
from specconsole.core.engine.registry import default_engine, engine_for, get_engine

if TYPE_CHECKING:
    from specconsole.core.config.model import ServerConfig

__all__ = [
    "FormField",
    "default_fields",
    "editing_release",
    "editor_fields",
    "field_text",
    "release_line",
    "shown_fields",
    "with_release",
]


def editor_fields(engine: str, version: str | None) -> tuple[FormField, ...]:
    """The fields for ``engine`` at release ``version`` (``None``: unknown)."""
    return get_engine(engine).editor_fields(version)


@functools.cache
def default_fields() -> tuple[FormField, ...]:
    """The fields when the engine and release are unknown (the default engine's names).
    Built on first use, not at import: it looks the engine up in the registry, which reads
    the installed entry points and imports the engine's package (some 10 ms the console's
    first frame does not need)."""
    return editor_fields(default_engine(), None)


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
    return engine_for(config).with_release(config, version)


def release_line(engine: str, version: str | None, source: str = "") -> str:
    """What the editor says about the release whose names and rules it uses (``""`` while
    it is unknown: the editor then shows what render and validate use without a release)."""
    return get_engine(engine).release_line(version, source)


def field_text(config: ServerConfig, name: str) -> str:
    """The text of field ``name`` in ``config`` as the editor's box and the flag-level diff
    show it (empty = unset)."""
    value = getattr(config, name)
    if value is None:
        return ""
    if name == "extra_args":
        return shlex.join(value)
    return str(value)
