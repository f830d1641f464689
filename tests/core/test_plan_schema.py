"""The plan's one declared shape (core.plans.schema, issue 39): the committed JSON Schema is
what the declaration generates, every shipped example holds to it, a bad plan is refused by it
and by the parser in the plan's own words, and the schema library stays off the import of
the plan reader (it arrives with the first check)."""

from __future__ import annotations

import json
import subprocess
import sys
import tomllib
from pathlib import Path

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from specconsole.core.plans.parse import loads_plan
from specconsole.core.plans.plan import PlanError, StrategyKind
from specconsole.core.plans.schema import check_shape, table_keys
from specconsole.core.plans.schema_export import plan_json_schema_text

REPO = Path(__file__).resolve().parents[2]
SCHEMA_FILE = REPO / "docs" / "plan-schema.json"
EXAMPLES = sorted((REPO / "examples").glob("*.toml"))
SERVER = '[server]\nmodel_path = "m"\n'


def _validator() -> jsonschema.Draft202012Validator:
    schema = json.loads(SCHEMA_FILE.read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def test_the_committed_schema_is_what_the_declaration_generates() -> None:
    assert SCHEMA_FILE.read_text() == plan_json_schema_text(), (
        "docs/plan-schema.json is stale: run .venv/bin/python scripts/plan-schema.py"
    )


def test_the_script_says_when_the_file_is_stale() -> None:
    done = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "plan-schema.py"), "--check"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_every_example_holds_to_the_json_schema_and_the_declared_shape(path: Path) -> None:
    document = tomllib.loads(path.read_text())
    errors = [f"{list(e.path)}: {e.message}" for e in _validator().iter_errors(document)]
    assert errors == []
    check_shape(document)


@pytest.mark.parametrize(
    ("text", "path"),
    [
        ("[sweep]\nmax_trails = 3\n" + SERVER, ["sweep"]),
        ('[server]\nmodel_path = "m"\nengine = "vllm"\nspeculative_eagel_topk = 1\n', ["server"]),
        ('[server]\nmodel_path = "m"\nengine = "tgi"\n', ["server", "engine"]),
        ("[bench]\nladder = [1, 2.5]\n" + SERVER, ["bench", "ladder"]),
        ('[sweep]\nstrategy = "bogus"\n' + SERVER, ["sweep", "strategy"]),
        ("[server]\ntp_size = 2\n", ["server"]),
    ],
)
def test_the_json_schema_refuses_a_bad_plan_at_its_key(text: str, path: list[object]) -> None:
    errors = list(_validator().iter_errors(tomllib.loads(text)))
    assert errors, text
    assert any(list(e.absolute_path)[: len(path)] == path for e in errors) or any(
        list(sub.absolute_path)[: len(path)] == path for e in errors for sub in e.context or ()
    ), [(list(e.absolute_path), e.message) for e in errors]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "[sweep]\nmax_trails = 3\n",
            "[sweep]: unknown key 'max_trails'; did you mean 'max_trials'? known keys: ",
        ),
        ("[sweeep]\n", "plan: unknown key 'sweeep'; did you mean 'sweep'?"),
        ("[sweep]\nmax_trials = 2.5\n", "[sweep] max_trials must be an integer, got 2.5"),
        ('[sweep]\nmax_trials = "20"\n', "[sweep] max_trials must be an integer, got '20'"),
        (
            '[sweep]\nstrategy = "bogus"\n',
            "[sweep] strategy = 'bogus' is not valid; use one of 'grid', 'boundary', "
            "'plateau', 'optimize', 'staged', 'per_level', 'schedule'",
        ),
        ("[bench]\nladder = [1, 4, true]\n", "[bench] ladder[2] must be an integer, got True"),
        (
            '[[hosts]]\nalias = "a"\nportt = 2\n',
            "[[hosts]] #1: unknown key 'portt'; did you mean 'port'?",
        ),
        ("[bench]\nheaders = { X-Team = 3 }\n", "[bench] headers.X-Team must be a string, got 3"),
        (
            "[sweep.axes]\nspeculative_num_steps = 3\n",
            "[sweep.axes] speculative_num_steps must be a list or a table, got 3",
        ),
    ],
)
def test_the_shape_check_says_the_key_the_value_and_the_fix(text: str, message: str) -> None:
    with pytest.raises(PlanError) as err:
        check_shape(tomllib.loads(text))
    assert str(err.value).startswith(message), str(err.value)


def test_a_table_reader_keeps_its_own_more_specific_words() -> None:
    """The shape refuses ``url = 30000``; the [bench] reader's sentence is the one shown."""
    text = '[bench]\nplacement = "direct"\nurl = 30000\n' + SERVER
    with pytest.raises(PlanError, match=r"\[bench\] url = 30000 is not a server URL"):
        loads_plan(text)


def test_the_parser_checks_keys_against_the_declaration() -> None:
    from specconsole.core.plans import parse

    assert set(table_keys("plan")) == parse.PLAN_TABLES
    assert "what_if_accept_length" in table_keys("sweep")
    assert {"placement", "url", "dataset", "ladder"} <= set(table_keys("bench"))


def test_the_former_strategy_name_reads_as_per_level() -> None:
    text = '[sweep]\nstrategy = "schedule"\n[sweep.axes]\nspeculative_num_steps = [1, 2]\n'
    plan = loads_plan(text + '[server]\nmodel_path = "m"\nspeculative_algorithm = "EAGLE3"\n')
    assert plan.strategy is StrategyKind.PER_LEVEL


def test_the_schema_library_arrives_with_the_first_check_not_with_the_reader() -> None:
    code = (
        "import sys\n"
        "import specconsole.core.plans.parse\n"
        "before = 'msgspec' in sys.modules\n"
        "from specconsole.core.plans.parse import loads_plan\n"
        "loads_plan('[server]\\nmodel_path = \"m\"\\n')\n"
        "print(before, 'msgspec' in sys.modules)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    assert done.stdout.split() == ["False", "True"]


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        (
            '[host]\ntransport = "ssh"\naliass = "gpu"\n',
            "[host] unknown key 'aliass'; did you mean 'alias'?",
        ),
        (
            '[service]\nkind = "systemd"\nunitt = "a.service"\n',
            "[service] unknown key 'unitt'; did you mean 'unit'?",
        ),
        (
            "[pool]\nmax_paralel = 2\n",
            "[pool] unknown key 'max_paralel'; did you mean 'max_parallel'?",
        ),
        (
            '[sweep]\nobjective = "max_rate_under_slo"\n[sweep.rate_search]\nroundz = 3\n',
            "[sweep.rate_search]: unknown key 'roundz'; did you mean 'rounds'?",
        ),
        ("[bench]\nladdre = [1]\n", "[bench]: unknown key 'laddre'; did you mean 'ladder'?"),
    ],
)
def test_every_table_names_the_closest_known_key(text: str, needle: str) -> None:
    with pytest.raises(PlanError) as err:
        loads_plan(text + SERVER)
    assert needle in str(err.value), str(err.value)


_VALUES = st.one_of(
    st.integers(-2, 70_000),
    st.floats(-1.0, 1e4, allow_nan=False),
    st.sampled_from(["", "a", "ssh", "local", "grid", "per_level", "steady", "~/.ssh/id", "4"]),
    st.booleans(),
    st.lists(
        st.one_of(st.integers(0, 80), st.sampled_from(["a", "b"]), st.floats(0, 2)), max_size=3
    ),
    st.dictionaries(
        st.sampled_from(["min", "max", "step", "ttft_ms", "a"]),
        st.one_of(st.integers(0, 9), st.booleans(), st.sampled_from(["5", "a"])),
        max_size=2,
    ),
)
_TABLES = ("host", "service", "sweep", "bench", "pool")


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    example=st.sampled_from(EXAMPLES),
    table=st.sampled_from(_TABLES),
    pick=st.integers(0, 10_000),
    value=_VALUES,
)
def test_every_plan_the_readers_accept_has_the_declared_shape(
    example: Path, table: str, pick: int, value: object
) -> None:
    """The declaration never refuses what the tables' readers accept (no plan that read
    before the schema stops reading): one key of a shipped example set to another value."""
    from specconsole.core.plans.parse import _read_plan

    document = tomllib.loads(example.read_text())
    keys = sorted(table_keys(table))
    key = keys[pick % len(keys)]
    document[table] = {**document.get(table, {}), key: value}
    try:
        _read_plan(document, "")
    except PlanError:
        return
    check_shape(document)


@pytest.mark.parametrize(
    "text",
    [
        '[host]\ntransport = "ssh"\nalias = "gpu"\nidentity_files = "~/.ssh/id"\n',
        '[service]\nkind = "docker"\ndocker_args = "--gpus=all"\n',
        '[sweep]\nconstraints = "single_request >= 200"\n',
        '[bench]\nslo = { ttft_ms = "500" }\n',
    ],
)
def test_what_the_readers_take_the_declaration_takes(text: str) -> None:
    """One string where a list of strings goes, one constraint alone, an SLO's number
    written as text: each read before the declaration and still reads, and both the
    library's check and the committed JSON Schema take it."""
    document = tomllib.loads(text + SERVER)
    loads_plan(text + SERVER)
    check_shape(document)
    assert list(_validator().iter_errors(document)) == []


def test_an_slo_of_true_is_refused_not_read_as_one_millisecond() -> None:
    with pytest.raises(PlanError, match=r"\[bench\] slo: ttft_ms must be a positive number"):
        loads_plan("[bench]\nslo = { ttft_ms = true }\n" + SERVER)
