"""What the console's editor says about llama.cpp's flags.

Why here: llama.cpp's keys are edited as they are declared (``OptionField.edit``, the
defaults of ``EngineBase.editor_fields``); what differs is the release line: there is no
release number to name, the flags are the box's own ``--help``'s.
"""

from __future__ import annotations

__all__ = ["release_line"]


def release_line(version: str | None, source: str = "") -> str:
    """What the editor says about the flags it uses."""
    return "llama.cpp: flags as the box's llama-server --help spells them"
