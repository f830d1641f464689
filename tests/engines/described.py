"""Configurations built from an engine's own description, never from its name.

Why: a test that builds "a speculative configuration" by naming SGLang's keys, or branches
on ``engine == "vllm"``, must be edited for every new engine. An engine declares its keys —
kind, bounds, choices, example, the shared concept each stands for
(``core.config.concepts``) — so a test can ask for "this engine speculating with a draft"
in the engine's own words: each concept key at the example its declaration gives.
"""

from __future__ import annotations

import dataclasses
import string
from typing import Any

from hypothesis import strategies as st

from specconsole.core.config.concepts import Concept, concept_keys
from specconsole.core.config.model import ServerConfig, option_fields, parse_value
from specconsole.core.config.options import OptionField
from specconsole.core.engine.registry import engine_names, get_engine

DRAFT = "/models/draft"
"""The draft model every described configuration names."""

_EXAMPLED = (
    Concept.METHOD,
    Concept.DRAFT_LENGTH,
    Concept.DRAFT_SHAPE,
    Concept.MAX_CONCURRENCY,
)
"""Concepts set to their key's declared example in :func:`speculative`."""


def example_value(engine: str, key: str) -> Any:
    """Key ``key`` of ``engine`` at its declared example, typed as a file would give it."""
    field = option_fields(engine)[key]
    text = field.example.strip('"') if field.example else (field.choices or ("",))[0]
    return parse_value(engine, key, text)


def speculative(engine: str, **overrides: Any) -> ServerConfig:
    """``engine`` serving ``/models/target`` with a draft: its method, draft length, draft
    shape and concurrency keys at their declared examples, its draft-model key at
    :data:`DRAFT`; ``overrides`` on top."""
    values: dict[str, Any] = {}
    for concept in _EXAMPLED:
        for key in concept_keys(engine, concept):
            values[key] = example_value(engine, key)
    for key in concept_keys(engine, Concept.DRAFT_MODEL):
        values[key] = DRAFT
    config = ServerConfig(
        model_path="/models/target",
        engine=engine,
        launcher=get_engine(engine).default_launcher,
        **values,
    )
    return dataclasses.replace(config, **overrides) if overrides else config


def key_of(engine: str, concept: Concept) -> str:
    """The key of ``engine`` standing for ``concept`` (the test needs it to exist)."""
    keys = concept_keys(engine, concept)
    assert keys, f"{engine} declares no key for {concept}"
    return keys[0]


# ---------------------------------------------------------------------------------------------
# Hypothesis strategies: configurations drawn from an engine's declared keys
# ---------------------------------------------------------------------------------------------

TEXT = st.text(
    alphabet=st.characters(blacklist_categories=("Cs", "Cc"), blacklist_characters="\x00"),
    min_size=1,
    max_size=20,
)
PATH = TEXT.filter(lambda s: not s.startswith("-") and s.strip() == s and s)
"""A path or hub id: any text a command line and a unit carry, not a flag."""


def modelled_flags() -> set[str]:
    """Every flag any registered engine models (``extra_args`` must not hold one)."""
    return {flag for name in engine_names() for flag in get_engine(name).modelled_flags}


def extra_args() -> st.SearchStrategy[tuple[str, ...]]:
    """Flags no engine models, values, ``--flag=value`` words."""
    taken = modelled_flags()
    flag = (
        st.text(alphabet=string.ascii_lowercase + "-", min_size=1, max_size=12)
        .map(lambda s: "--" + s.strip("-"))
        .filter(lambda f: f not in taken and f != "--")
    )
    word = TEXT.filter(lambda s: not s.startswith("-"))
    pair = st.tuples(flag, TEXT).map(lambda t: f"{t[0]}={t[1]}")
    return st.lists(st.one_of(flag, word, pair), max_size=6).map(tuple)


ENV = st.lists(
    st.tuples(
        st.from_regex(r"[A-Z_][A-Z0-9_]{0,8}", fullmatch=True),
        TEXT.filter(lambda s: "\n" not in s),
    ),
    max_size=3,
    unique_by=lambda t: t[0],
).map(tuple)


def values(field: OptionField) -> st.SearchStrategy[Any]:
    """Values key ``field`` takes, by its declared kind, bounds and choices."""
    if field.kind == "bool":
        return st.just(True)  # false renders nothing: it reads back unset
    if field.kind == "choice":
        return st.sampled_from(field.choices)
    if field.kind == "str":
        return PATH
    words = st.sampled_from(field.choices) if field.choices else st.nothing()
    low = field.minimum if field.minimum is not None else -1000
    high = field.maximum if field.maximum is not None else low + 100_000
    if field.kind == "int":
        return st.one_of(st.integers(int(low), int(high)), words)
    return st.one_of(st.floats(low, high, exclude_min=field.plain, exclude_max=field.plain), words)


@st.composite
def configs(draw: st.DrawFn, engine: str, *, own_flags_only: bool = False) -> ServerConfig:
    """A configuration of ``engine``: each of its declared keys unset or a value its
    declaration allows, the shared fields anything a file may hold — never its name.
    ``own_flags_only``: only the keys with a flag of their own (:func:`own_flag_keys`), so a
    command line carries each one alone and the configuration reads back exactly."""
    own = option_fields(engine)
    alone = own_flag_keys(engine)
    keys = {}
    for name, field in own.items():
        if own_flags_only and name not in alone:
            continue
        value = draw(st.one_of(st.none(), values(field)))
        if value is not None:
            keys[name] = parse_value(engine, name, value)  # as a file would give it
    launcher = get_engine(engine).default_launcher
    program, _, rest = launcher.partition(" ")
    absolute = f"'/opt/my venv/bin/{program}' {rest}".strip()
    return ServerConfig(
        model_path=draw(PATH),
        engine=engine,
        host=draw(st.sampled_from(["127.0.0.1", "0.0.0.0", "::1"])),
        port=draw(st.integers(1, 65535)),
        extra_args=draw(extra_args()),
        env=draw(ENV),
        launcher=draw(st.sampled_from([launcher, absolute])),
        working_directory=draw(
            st.one_of(st.none(), PATH.filter(lambda p: not p.endswith("\\")).map(lambda p: "/" + p))
        ),
        user=draw(st.one_of(st.none(), st.from_regex(r"[a-z][a-z0-9_-]{0,10}", fullmatch=True))),
        **keys,
    )


def own_flag_keys(engine: str) -> set[str]:
    """The keys of ``engine`` with a flag of their own (a command line carries each one
    alone, so it reads back exactly; keys sharing a flag, or rendered otherwise, may not)."""
    fields = list(option_fields(engine).values())
    flags = [f.flag for f in fields if f.flag]
    return {f.name for f in fields if f.flag and flags.count(f.flag) == 1}


def carried(config: ServerConfig) -> bool:
    """Whether ``config``'s own command line carries it whole: read back, it is the same
    configuration (its environment, user and folder live in a unit, not on the line)."""
    from specconsole.core.config.render import to_argv
    from specconsole.core.launch.command import parse_command

    back = parse_command(to_argv(config))
    return back == dataclasses.replace(config, env=(), working_directory=None, user=None)
