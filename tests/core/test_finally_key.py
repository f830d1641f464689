"""``[sweep] finally`` (issue 19): what the box serves after the sweep; ``best`` by default,
a wrong value names the key and the choices."""

from __future__ import annotations

import pytest

from specconsole.core.plans.parse import loads_plan
from specconsole.core.plans.plan import FINALLY_CHOICES, PlanError
from tests.controller.helpers import PLAN_TEXT


def with_finally(value: str) -> str:
    return PLAN_TEXT.replace("[sweep]\n", f'[sweep]\nfinally = "{value}"\n', 1)


def test_the_default_is_best() -> None:
    assert loads_plan(PLAN_TEXT).finally_action == "best"


@pytest.mark.parametrize("value", FINALLY_CHOICES)
def test_each_choice_parses(value: str) -> None:
    assert loads_plan(with_finally(value)).finally_action == value


def test_a_wrong_value_names_the_key_and_the_choices() -> None:
    with pytest.raises(PlanError, match=r"\[sweep\] finally = 'winner'.*'best', 'original'"):
        loads_plan(with_finally("winner"))
