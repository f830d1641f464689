"""The simulator's registry of faces: which face imitates which engine, and how a command
line picks one.

Why an explicit registry: a face is found by the registered name of the engine it imitates
(the ``[server] engine`` of a deployed configuration, the first word of a command line), and
looking it up must never hide an import the import-linter contracts cannot see. Each row
imports its face's module by name — statically, inside a function, so a command that runs
SGLang's face never loads vLLM's — and nothing below this module (the physics, the box, the
faces themselves) imports it, so the faces sit strictly above the physics with no cycle
(``tests/sim/test_layout.py`` checks it with the deferred imports counted). Adding a face is a
package under ``sim/faces/`` and a row here.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from specconsole.sim.faces import Face

__all__ = ["DEFAULT_FACE", "FACES", "face_for", "select_face"]


def _sglang() -> Face:
    from specconsole.sim.faces.sglang.face import FACE

    return FACE


def _vllm() -> Face:
    from specconsole.sim.faces.vllm.face import FACE

    return FACE


FACES: dict[str, Callable[[], Face]] = {
    "sglang": _sglang,
    "vllm": _vllm,
}
"""Registered engine name -> its face (loaded on first use)."""

DEFAULT_FACE = "sglang"
"""The face of a command line that names no engine (the simulator's first)."""


def face_for(engine: str) -> Face:
    """The face imitating the registered engine ``engine``; ValueError naming the known ones."""
    load = FACES.get(engine)
    if load is None:
        raise ValueError(
            f"the simulator has no face for engine {engine!r}; it imitates "
            + ", ".join(sorted(FACES))
        )
    return load()


def select_face(argv: Sequence[str]) -> tuple[Face, list[str]]:
    """The face a command line asks for (its first word when it names an engine the
    simulator imitates, else :data:`DEFAULT_FACE`) and the words it reads."""
    words = list(argv)
    if words and words[0] in FACES:
        return face_for(words[0]), words[1:]
    return face_for(DEFAULT_FACE), words
