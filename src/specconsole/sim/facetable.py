"""Which face the simulator shows: the table from an imitated engine's registered name to the
module of its face (:mod:`specconsole.sim.faces`), and how a command line picks one.

Why its own module: the box's physics (:mod:`specconsole.sim.physics.model`) resolves a deployed
configuration the way its engine's face would, and the faces import the physics; the table
loads a face by name only when asked, so neither imports the other. Adding a face is a row
here and a module there; nothing else names an engine.
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from specconsole.sim.faces import Face

__all__ = ["DEFAULT_FACE", "FACES", "face_for", "select_face"]

FACES: dict[str, str] = {
    "sglang": "specconsole.sim.faces.sglang",
    "vllm": "specconsole.sim.faces.vllm",
}
"""Registered engine name -> the module whose ``FACE`` imitates it."""

DEFAULT_FACE = "sglang"
"""The face of a command line that names no engine (the simulator's first)."""


def face_for(engine: str) -> Face:
    """The face imitating the registered engine ``engine``; ValueError naming the known ones."""
    module = FACES.get(engine)
    if module is None:
        raise ValueError(
            f"the simulator has no face for engine {engine!r}; it imitates "
            + ", ".join(sorted(FACES))
        )
    face: Face = importlib.import_module(module).FACE
    return face


def select_face(argv: Sequence[str]) -> tuple[Face, list[str]]:
    """The face a command line asks for (its first word when it names an engine the
    simulator imitates, else :data:`DEFAULT_FACE`) and the words it reads."""
    words = list(argv)
    if words and words[0] in FACES:
        return face_for(words[0]), words[1:]
    return face_for(DEFAULT_FACE), words
