"""A fourth engine, defined here and nowhere else, runs through the whole product.

Why: the engine seam is only as good as what adding an engine costs. This file is the whole
of a minimal engine — a Hugging Face Text Generation Inference-like server: one speculative
flag (``--speculate``), its memory, concurrency, context and shard keys, a log header, a
ready line, one fatal cause of its own, its endpoints — registered for the test's duration
(``registry.registered``, no entry point), and the checks every shipped engine gets run over
it unchanged: the protocol contract, the shared Hypothesis strategies and round trips, the
plan form of ``best --as plan`` on every backend, and the command line's ``validate``,
``render``, ``sweep --dry-run`` and ``parse-log``. Nothing outside this file names it.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings

from specconsole.cli import main
from specconsole.core.config.concepts import Concept
from specconsole.core.config.enginebase import EngineBase
from specconsole.core.config.model import ServerConfig
from specconsole.core.config.options import OptionField
from specconsole.core.config.render import to_argv
from specconsole.core.config.validation import errors, validate
from specconsole.core.engine.protocol import Endpoints
from specconsole.core.engine.registry import registered
from specconsole.core.launch.command import parse_command
from specconsole.core.launch.systemd import parse_unit, to_unit
from specconsole.core.logs.events import LogEvent, Ready, SuggestedFix
from specconsole.core.logs.grammar import FatalSignature, Header, HeaderReader, LogGrammar
from specconsole.core.logs.state import ParseState
from tests.core import test_best_as_plan as best_as_plan
from tests.engines.contract import check_answers, check_slots
from tests.engines.described import configs, speculative

# ---------------------------------------------------------------------------------------------
# The engine: its keys, its log, its endpoints (the whole of what it must say)
# ---------------------------------------------------------------------------------------------

NAME = "tgi"
SHARD_FAILED = "shard_failed"
"""Its own fatal cause: a model shard died while starting."""

KEYS = (
    OptionField(
        "speculate", "int", "--speculate", "tokens speculated per step (n-gram or Medusa)",
        minimum=1, maximum=32, example="2", short="spec", concept=Concept.DRAFT_LENGTH,
        edit=True,
    ),
    OptionField(
        "cuda_memory_fraction", "float", "--cuda-memory-fraction",
        "share of each GPU's memory it takes", minimum=0, maximum=1, example="0.9",
        short="mem", concept=Concept.MEMORY_FRACTION, edit=True,
    ),
    OptionField(
        "max_concurrent_requests", "int", "--max-concurrent-requests",
        "requests it serves at once", minimum=1, maximum=65536, example="128", short="conc",
        concept=Concept.MAX_CONCURRENCY, edit=True,
    ),
    OptionField(
        "max_total_tokens", "int", "--max-total-tokens", "longest prompt plus output",
        minimum=1, maximum=1_000_000, example="4096", short="ctx",
        concept=Concept.CONTEXT_LENGTH,
    ),
    OptionField(
        "num_shard", "int", "--num-shard", "GPUs the model is sharded over", minimum=1,
        maximum=64, example="1", short="shards", concept=Concept.PARALLEL_SIZE,
    ),
)  # fmt: skip

_HEADER = re.compile(r" *(?:(\d{4}-\d\d-\d\dT[\d:.]+Z) +)?(?:TRACE|DEBUG|INFO|WARN|ERROR) +")


def read_header(message: str) -> Header | None:
    """``2026-12-07T10:00:05.123456Z  INFO text_generation_router: Connected``: the level
    and the target (the parser's collector layer has usually taken the ISO time already,
    as it takes docker's and kubectl's)."""
    m = _HEADER.match(message)
    return None if m is None else (message[m.end() :], m.group(1), None, None, True)


def on_router(s: ParseState, body: str, ts: str | None, rank: str | None) -> list[LogEvent]:
    return [Ready(timestamp=ts, rank=rank)] if body.endswith(" Connected") else []


def on_launcher(s: ParseState, body: str, ts: str | None, rank: str | None) -> list[LogEvent]:
    """``Shard 0 failed to start``: the launcher gives up on the whole server."""
    return [s.fatal_now(SHARD_FAILED, body, ts, rank)] if "failed to start" in body else []


GRAMMAR = LogGrammar(
    name=NAME,
    heads={"text_generation_router:": on_router, "text_generation_launcher:": on_launcher},
    headers=(HeaderReader("0123456789 TDIWE", read_header),),
    header_examples=(("tgi", "2026-12-07T10:00:05.123456Z  INFO MESSAGE"),),
    ready_lines=("Connected",),
    signatures=(FatalSignature(SHARD_FAILED, ("failed to start",)),),
    precedence={SHARD_FAILED: 450},
    cause_words={SHARD_FAILED: "a model shard failed to start"},
    fixes={
        SHARD_FAILED: (
            SuggestedFix(
                "Lower cuda_memory_fraction (e.g. 0.8), or read the shard's error above it.",
                (("cuda_memory_fraction", "0.8"),),
            ),
        )
    },
    hints=("failed",),
)


class TGI(EngineBase):
    """Text Generation Inference, as much of it as the product needs."""

    name = NAME
    title = "TGI"
    default_launcher = "text-generation-launcher"
    model_flag = "--model-id"
    host_flag = "--hostname"
    default_port = 3000
    option_fields = KEYS
    log_grammar = GRAMMAR
    endpoints = Endpoints(server_info="/info", apis=("completions", "chat"), bench_backend="tgi")


# ---------------------------------------------------------------------------------------------
# The tests: the shared checks, unchanged
# ---------------------------------------------------------------------------------------------


@pytest.fixture(autouse=True)
def tgi() -> Iterator[EngineBase]:
    with registered(TGI()) as engine:
        yield engine


def test_the_protocol_contract_holds() -> None:
    check_slots(NAME)
    check_answers(NAME)


@settings(max_examples=100, deadline=None)
@given(configs(NAME))
def test_its_configurations_render_and_read_back(config: ServerConfig) -> None:
    argv = to_argv(config)
    assert parse_command(argv) == dataclasses.replace(
        config, env=(), working_directory=None, user=None
    )
    assert parse_unit(to_unit(config)) == config


@pytest.mark.parametrize("backend", sorted(best_as_plan.BACKENDS))
def test_best_as_plan_round_trips_on_every_backend(
    backend: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # the shared checks of tests/core/test_best_as_plan.py, called for this engine
    best_as_plan.test_best_as_plan_validates_and_renders_to_the_same_launch(
        NAME, backend, tmp_path, capsys
    )
    best_as_plan.test_any_configuration_of_the_engine_reads_back_from_its_plan_form(NAME, backend)


def test_it_speaks_its_own_words() -> None:
    config = speculative(NAME, cuda_memory_fraction=0.85)
    assert to_argv(config) == [
        "text-generation-launcher", "--model-id", "/models/target", "--speculate", "2",
        "--cuda-memory-fraction", "0.85", "--max-concurrent-requests", "128",
        "--hostname", "127.0.0.1", "--port", "30000",
    ]  # fmt: skip
    assert errors(validate(config)) == []
    (finding,) = errors(validate(dataclasses.replace(config, speculate=0)))
    assert finding.field == "speculate" and "between 1 and 32" in finding.message


def _plan(tmp_path: Path) -> Path:
    plan = tmp_path / "tgi.toml"
    plan.write_text(
        f"""
[host]
transport = "local"

[service]
kind = "process"
run_dir = "{tmp_path / "run"}"

[server]
engine = "tgi"
model_path = "/models/target"
cuda_memory_fraction = 0.9
port = 3000

[sweep]
strategy = "grid"

[sweep.axes]
speculate = [1, 2, 4]

[bench]
ladder = [1, 4]
"""
    )
    return plan


def test_validate_render_and_a_dry_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    plan = _plan(tmp_path)
    assert main(["validate", str(plan)]) == 0
    assert "3 configurations OK" in capsys.readouterr().out
    assert main(["render", str(plan), "--trial", "3", "--as", "argv"]) == 0
    argv = json.loads(capsys.readouterr().out)
    assert argv[:3] == ["text-generation-launcher", "--model-id", "/models/target"]
    assert argv[argv.index("--speculate") + 1] == "4"
    assert main(["sweep", str(plan), "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "--speculate 1" in out and "--speculate 4" in out, out


def test_parse_log_reads_its_ready_line_and_its_death(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ok = tmp_path / "ok.log"
    ok.write_text(
        "2026-12-07T10:00:00.000001Z  INFO text_generation_launcher: Starting shard rank=0\n"
        "2026-12-07T10:00:05.123456Z  INFO text_generation_router: router/src/main.rs:289: "
        "Connected\n"
    )
    assert main(["parse-log", "--engine", NAME, str(ok)]) == 0
    assert '"event": "ready"' in capsys.readouterr().out
    dead = tmp_path / "dead.log"
    dead.write_text(
        "2026-12-07T10:00:00.000001Z  INFO text_generation_launcher: Starting shard rank=0\n"
        "2026-12-07T10:00:03.000001Z ERROR text_generation_launcher: Shard 0 failed to start\n"
    )
    assert main(["parse-log", "--engine", NAME, str(dead)]) == 1
    out = capsys.readouterr().out
    assert SHARD_FAILED in out and "cuda_memory_fraction" in out, out
