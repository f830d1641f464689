"""The console editor's fields as an SGLang release spells them, and what it says of that release.

Why here: flags change between releases (:mod:`.releases`) — SGLang 0.5.23 spells
``cuda_graph_max_bs`` as ``--cuda-graph-max-bs-decode`` and refuses the old flag — and the
editor must show the flag the command line will carry *for that release*, from the same table
the renderer reads, so it cannot show a flag the deploy does not use.
"""

from __future__ import annotations

from specconsole.core.config import releases
from specconsole.core.engine.protocol import EditorField
from specconsole.engines.sglang.keys import KEYS
from specconsole.engines.sglang.releases import DEFAULT_VERSION, KNOWN_RELEASES, TABLE

EDITED = (
    "speculative_algorithm",
    "speculative_num_steps",
    "speculative_eagle_topk",
    "speculative_num_draft_tokens",
    "mem_fraction_static",
    "cuda_graph_max_bs",
    "max_running_requests",
    "tp_size",
)
"""The keys a tuner edits, in the editor's order (the rest are set in the plan)."""

__all__ = ["editor_fields", "release_line"]


def _flag(name: str, version: str | None) -> tuple[str, str]:
    dashed = "--" + name.replace("_", "-")
    flag = releases.flag_for(TABLE, name, dashed, version)
    note = f"{dashed} in older releases" if flag != dashed else ""
    return flag, note


def editor_fields(version: str | None) -> tuple[EditorField, ...]:
    """The fields at release ``version`` (``None`` or not a release number: unknown, so
    :data:`DEFAULT_VERSION`'s names; validation names the bad version)."""
    try:
        releases.parse_version(version or DEFAULT_VERSION)
    except ValueError:
        version = None
    by_name = {k.name: k for k in KEYS}
    out = []
    for name in EDITED:
        flag, note = _flag(name, version)
        out.append(EditorField(name, by_name[name].kind, by_name[name].hint, flag, note))
    out.append(EditorField("extra_args", "args", "further flags, shell-quoted"))
    return tuple(out)


def release_line(version: str | None, source: str = "") -> str:
    """What the editor says about the release whose names and rules it uses (``""`` while
    it is unknown: the editor then shows what render and validate use without a release)."""
    where = f" ({source})" if source and source != "unknown" else ""
    if version is None:
        return ""  # the names of DEFAULT_VERSION, as render and validate use them
    try:
        parsed = releases.parse_version(version)
    except ValueError:
        return f"SGLang {version!r} is not a release number: fix [server] engine_version"
    text = f"SGLang {version}{where}: its flag names and rules"
    if version not in KNOWN_RELEASES:
        newest = max(KNOWN_RELEASES, key=releases.parse_version)
        side = "newer than" if parsed > releases.parse_version(newest) else "not one of"
        text += f"; {side} the releases checked ({', '.join(KNOWN_RELEASES)})"
    return text
