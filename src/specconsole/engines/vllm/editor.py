"""What the console's editor says about vLLM's release.

Why here: its keys are edited as they are declared (``OptionField.edit``, the defaults of
``EngineBase.editor_fields``, which note the keys ``--speculative-config``'s JSON carries);
what the editor adds is the release whose flags and rules it uses.
"""

from __future__ import annotations

from specconsole.core.config.releases import parse_version
from specconsole.engines.vllm.releases import KNOWN_RELEASES

__all__ = ["release_line"]


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
