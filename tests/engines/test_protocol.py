"""Every registered engine implements the whole Engine protocol, and the registry finds it.

Why: the rest of the product never branches on an engine's name, so an engine that leaves a
slot empty breaks far from its package. This enumerates the registry (the entry points in
pyproject.toml, a third party's included) and calls every slot with a real configuration.
"""

from __future__ import annotations

import pytest

from specconsole.core.engine.registry import (
    EngineNotFound,
    default_engine,
    engine_names,
    get_engine,
    register,
    unregister,
)
from tests.engines.contract import check_answers, check_slots

ENGINES = engine_names()


def test_the_shipped_engines_are_registered() -> None:
    assert {"sglang", "vllm", "llamacpp"} <= set(ENGINES)
    assert default_engine() in ENGINES


@pytest.mark.parametrize("name", ENGINES)
def test_engine_fills_every_slot(name: str) -> None:
    check_slots(name)


@pytest.mark.parametrize("name", ENGINES)
def test_engine_slots_answer_for_a_real_configuration(name: str) -> None:
    check_answers(name)


def test_an_unknown_engine_is_refused_with_the_known_names() -> None:
    with pytest.raises(EngineNotFound, match="vllm") as info:
        get_engine("vlm")
    assert "Did you mean 'vllm'" in str(info.value)


def test_a_third_engine_registers_by_hand_and_is_found() -> None:
    sglang = get_engine("sglang")

    class Fork:
        """A third party's engine reusing SGLang's answers under its own name."""

        name = "fork"

        def __getattr__(self, attr: str) -> object:
            return getattr(sglang, attr)

    register(Fork())  # type: ignore[arg-type]
    try:
        assert "fork" in engine_names()
        assert get_engine("fork").title == "SGLang"
    finally:
        unregister("fork")
    assert "fork" not in engine_names()
