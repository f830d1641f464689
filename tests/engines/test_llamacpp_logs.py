"""llama-server's log grammar on the real server's logs (tests/data/llamacpp/, recorded from
the built llama-server): every start-up death classified with its own fix, speculation that
did not start told apart from a death, the ready line, the capacity and acceptance lines.

Why: the crash banner is only as good as this classification, and llama.cpp has no Python
tracebacks — a death is a few ``E`` lines then ``exiting due to ...`` (or a C++ abort).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from specconsole.core.logs.events import (
    Capacity,
    FatalCause,
    FatalError,
    Ready,
    SpecStats,
    SpeculationOff,
    WeightsBegin,
)
from specconsole.core.logs.parser import LogParser, parse_lines

DATA = Path(__file__).resolve().parent.parent / "data" / "llamacpp"


def events(name: str, engine: str | None = "llamacpp") -> list:
    return parse_lines((DATA / name).read_text().splitlines(), engine=engine)


def fatal(name: str, engine: str | None = "llamacpp") -> FatalError:
    (found,) = [e for e in events(name, engine) if isinstance(e, FatalError)]
    return found


@pytest.mark.parametrize("engine", ["llamacpp", None])
@pytest.mark.parametrize(
    ("log", "cause", "proof", "fix"),
    [
        ("kv-alloc-crash.log", FatalCause.KV_CACHE_NO_MEMORY, "insufficient memory", "ctx_size"),
        ("draft-missing.log", "draft_unreadable", "failed to load draft model", "-md"),
        ("too-many-slots.log", "too_many_slots", "n_seq_max must be <= 256", "256 or less"),
        ("http-thread-pool-abort.log", "http_thread_pool", "httplib::ThreadPool", "parallel"),
        ("port-in-use.log", "port_in_use", "couldn't bind HTTP server socket", "port"),
        ("synth-rates-mismatch.log", "speculation_config", "must contain 8", "spec_synth_rates"),
        ("removed-flag.log", "removed_argument", '"--draft-max"', "set spec_draft_n_max"),
        ("removed-ctx-draft.log", FatalCause.BAD_ARGUMENT, "invalid argument: -cd", "Remove -cd"),
        ("unknown-spec-type.log", FatalCause.BAD_ARGUMENT, "draft-bogus", "the message"),
    ],
)
def test_every_real_death_has_its_cause_and_fix(
    engine: str | None, log: str, cause: str, proof: str, fix: str
) -> None:
    found = fatal(log, engine)
    assert found.cause == cause, found
    assert proof in found.summary, found.summary
    assert found.fixes and fix in found.fixes[0].text, found.fixes


def test_a_removed_flag_names_its_new_spelling() -> None:
    found = fatal("removed-flag.log")
    assert found.before_weights
    assert found.fixes[0].text == (
        "--draft-max was renamed --spec-draft-n-max: set spec_draft_n_max instead (specconsole "
        "renders it as --spec-draft-n-max) and remove --draft-max from extra_args."
    )


def test_the_kv_crash_is_seen_at_its_exit_line_with_its_evidence() -> None:
    parser = LogParser(engine="llamacpp")
    lines = (DATA / "kv-alloc-crash.log").read_text().splitlines()
    for line in lines[:-1]:
        assert not [e for e in parser.feed(line) if isinstance(e, FatalError)]
    (found,) = parser.feed(lines[-1])  # classified the moment the exit line is read
    assert isinstance(found, FatalError) and found.timestamp == "0.00.606.086"
    assert "failed to allocate buffer for kv cache" in found.excerpt
    assert not found.before_weights


@pytest.mark.parametrize(
    ("log", "reasons"),
    [
        (
            "vocab-mismatch.log",
            [
                "the target and draft vocabs are not compatible",
                "draft model vocab type must match target model to use speculation",
            ],
        ),
        ("draft-simple-without-draft.log", ["draft-simple requires a draft context"]),
    ],
)
def test_speculation_off_is_not_a_death(log: str, reasons: list[str]) -> None:
    found = events(log)
    assert not [e for e in found if isinstance(e, FatalError)]
    assert [e.reason for e in found if isinstance(e, SpeculationOff)] == reasons
    assert any(isinstance(e, Ready) for e in found)


def test_load_ready_capacity_and_acceptance_lines() -> None:
    found = events("draft-request.log")
    roles = [e.role.value for e in found if isinstance(e, WeightsBegin)]
    assert roles == ["target", "draft"]
    (capacity,) = [e for e in found if isinstance(e, Capacity)]
    assert (capacity.max_total_num_tokens, capacity.max_running_requests) == (2048, 1)
    (ready,) = [e for e in found if isinstance(e, Ready)]
    assert ready.timestamp == "0.00.489.319"
    (spec,) = [e for e in found if isinstance(e, SpecStats)]
    assert (spec.accepted_tokens, spec.drafted_tokens) == (41, 86)
    assert spec.accept_rate == pytest.approx(0.47674) and spec.accept_len == pytest.approx(2.86)
    unified = [e for e in events("start-no-draft.log") if isinstance(e, Capacity)]
    assert unified[0].max_total_num_tokens == 2048 and unified[0].max_running_requests == 4


def test_the_same_lines_under_the_journal_prefix() -> None:
    found = events("systemd-unit.journal.log")
    assert any(isinstance(e, Ready) for e in found)
    assert [type(e).__name__ for e in found if isinstance(e, SpecStats | WeightsBegin)] == [
        "WeightsBegin",
        "WeightsBegin",
        "SpecStats",
    ]
