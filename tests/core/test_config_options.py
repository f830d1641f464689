"""An engine's own ``[server]`` keys (``core.config.options``): read from TOML, written back,
swept as a plan's axes, edited, validated and rendered — for an engine the core has never
heard of, registered by hand in the test."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Sequence
from typing import Any

import pytest

from specconsole.core.config.errors import ConfigError
from specconsole.core.config.model import (
    ServerConfig,
    config_from_table,
    config_to_table,
    replace_config,
    set_values,
)
from specconsole.core.config.options import OptionField, option_words, parse_option
from specconsole.core.config.render import to_argv
from specconsole.core.config.validation import errors, validate
from specconsole.core.engine.registry import get_engine, register, unregister

FIELDS = (
    OptionField(
        "draft_max", "int", "--draft-max-n", "tokens drafted per step", minimum=0, maximum=64
    ),
    OptionField("p_min", "float", "--p-min", "draft cut-off probability", minimum=0, maximum=1),
    OptionField("metrics", "bool", "--metrics", "serve /metrics"),
    OptionField("kind", "choice", "--spec-kind", "speculation type", choices=("none", "draft")),
)


class Toy:
    """A third engine: SGLang's answers for everything but its name and its own keys."""

    name = "toy"
    title = "Toy"
    default_launcher = "toy-server"
    option_fields = FIELDS

    def render_flags(self, config: ServerConfig, launcher: Sequence[str]) -> list[str]:
        return ["-m", config.model_path, *option_words(config.options, FIELDS)]

    def check(self, config: ServerConfig, bad_ints: set[str], report: object) -> None:
        pass  # no rules of its own

    def __getattr__(self, attr: str) -> Any:
        return getattr(get_engine("sglang"), attr)


@pytest.fixture(autouse=True)
def toy() -> Iterator[None]:
    register(Toy())  # type: ignore[arg-type]
    yield
    unregister("toy")


TABLE = {"engine": "toy", "model_path": "/m.gguf", "p_min": 0.5, "draft_max": 4, "metrics": True}


def test_an_engines_keys_are_read_kept_in_its_order_and_written_back() -> None:
    config = config_from_table(TABLE)
    assert config.options == (("draft_max", 4), ("p_min", 0.5), ("metrics", True))
    assert config.draft_max == 4 and config.metrics is True
    assert config.kind is None  # declared, unset: the server's own default
    with pytest.raises(AttributeError):
        _ = config.no_such_key
    table = config_to_table(config)
    assert config_from_table(table) == config
    assert list(table)[:2] == ["model_path", "engine"]


def test_an_unknown_or_bad_key_names_the_key_and_the_fix() -> None:
    with pytest.raises(ConfigError, match="did you mean `draft_max`"):
        config_from_table({**TABLE, "draft_maxx": 4})
    with pytest.raises(ConfigError, match="between 0 and 64") as info:
        config_from_table({**TABLE, "draft_max": 99})
    assert info.value.key == "server.draft_max"
    with pytest.raises(ConfigError, match="not one of none, draft"):
        config_from_table({**TABLE, "kind": "eagle"})
    with pytest.raises(ConfigError, match="true or false"):
        config_from_table({**TABLE, "metrics": "maybe"})
    with pytest.raises(ConfigError, match="unknown key"):  # another engine's key
        config_from_table({"model_path": "/m", "draft_max": 4})


def test_keys_are_swept_edited_and_set_like_fields() -> None:
    config = config_from_table(TABLE)
    edited = replace_config(config, draft_max="8", p_min="", kind="draft")
    assert edited.draft_max == 8 and edited.p_min is None and edited.kind == "draft"
    assert edited.options == (("draft_max", 8), ("metrics", True), ("kind", "draft"))
    swept = set_values(config, draft_max=16, user=None)
    assert swept.draft_max == 16 and swept.p_min == 0.5
    assert dataclasses.replace(swept) == swept


def test_keys_render_in_the_engines_order_and_validate() -> None:
    config = config_from_table({**TABLE, "kind": "draft"})
    assert to_argv(config) == [
        "toy-server", "-m", "/m.gguf",
        "--draft-max-n", "4", "--p-min", "0.5", "--metrics", "--spec-kind", "draft",
    ]  # fmt: skip
    assert errors(validate(config)) == []
    bad = dataclasses.replace(config, options=(("draft_max", -1), ("nope", 1)))
    found = {(i.field, i.message) for i in errors(validate(bad))}
    assert ("draft_max", "-1 is out of range: it must be between 0 and 64.") in found
    assert any(field == "nope" for field, _ in found)


def test_parse_option_refuses_non_finite_and_wrong_types() -> None:
    p_min = FIELDS[1]
    for bad in (float("nan"), float("inf"), "x", True, [1]):
        with pytest.raises(ConfigError):
            parse_option(p_min, bad)
    assert parse_option(FIELDS[0], "1_6") == 16
    assert parse_option(FIELDS[0], 8.0) == 8
