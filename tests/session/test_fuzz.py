"""The fuzz suite over plan and session files (issue 18): random TOML documents, random bytes,
mutations of the shipped plans and truncations of a real session's files at every byte. None
may raise an unhandled exception — every refusal is a clear error naming the file — and a
resume after any truncation never runs a recorded trial again.

Bounded: each property has a fixed ``max_examples`` and no per-example deadline (the machine is
shared), so the whole file runs in seconds; the every-byte truncations are plain loops.
"""

from __future__ import annotations

import contextlib
import io
import math
import os
import shutil
import tempfile
import tomllib
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import tomli_w
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from specconsole.cli import main
from specconsole.commands.sweep import load_plan_file, prepare_resume
from specconsole.core.machine import events as ev
from specconsole.core.machine.state import ControllerState, Phase
from specconsole.core.machine.table import step
from specconsole.core.plans.plan import PlanError
from specconsole.paths import examples_dir
from specconsole.session.files import SessionError, parse_trial_lines
from specconsole.session.store import Session
from tests.controller.helpers import Driver, plan
from tests.session.sim_sessions import unit_session

FUZZ = settings(
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)


@pytest.fixture
def fast_dir(tmp_path: Path) -> Iterator[Path]:
    """A folder on tmpfs when there is one: the store fsyncs every write, and thousands of
    fsyncs on a shared disk would take minutes instead of seconds."""
    shm = Path("/dev/shm")
    if not (shm.is_dir() and os.access(shm, os.W_OK)):
        yield tmp_path
        return
    folder = Path(tempfile.mkdtemp(prefix="specconsole-fuzz-", dir=shm))
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


# -- generators ---------------------------------------------------------------------------------

_KEYS = sorted(
    {
        *tomllib.loads((examples_dir() / "demo-sweep.toml").read_text()),
        "server",
        "sweep",
        "bench",
        "host",
        "service",
        "model_path",
        "port",
        "speculative_num_steps",
        "speculative_eagle_topk",
        "ladder",
        "input_len",
        "duration_s",
        "axes",
        "strategy",
        "status",
        "trials",
        "session",
        "server_port",
        "placeholders",
    }
)

_scalars = st.one_of(
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=20),
    st.booleans(),
    st.sampled_from([0, 1, -1, 10**12, "auto", "", "\x00", "a\nb", math.inf, math.nan]),
)
_keys = st.one_of(st.sampled_from(_KEYS), st.text(min_size=1, max_size=10))
_values = st.recursive(
    _scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(_keys, inner, max_size=4)),
    max_leaves=12,
)
documents = st.dictionaries(_keys, _values, max_size=6)


def _toml(doc: dict[str, Any]) -> bytes | None:
    try:
        return tomli_w.dumps(doc).encode()
    except (TypeError, ValueError):  # e.g. a list mixing tables and values
        return None


def _paths(doc: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every (table..., key) path to a value in a parsed TOML document."""
    out: list[tuple[Any, ...]] = []
    if isinstance(doc, dict):
        for k, v in doc.items():
            out.append((*prefix, k))
            out += _paths(v, (*prefix, k))
    return out


def _mutated(doc: dict[str, Any], path: tuple[Any, ...], value: Any, delete: bool) -> dict:
    import copy

    doc = copy.deepcopy(doc)
    table = doc
    for k in path[:-1]:
        table = table[k]
    if delete:
        del table[path[-1]]
    else:
        table[path[-1]] = value
    return doc


def _quiet(argv: list[str]) -> int:
    """``specconsole ARGV`` in-process with its output swallowed; any exception propagates."""
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        return main(argv)


def _check_plan_file(path: Path) -> None:
    """validate and render either accept the file or refuse it with an exit code; render
    renders what validate accepts; load_plan_file (sweep's reader) raises only PlanError."""
    validated = _quiet(["validate", str(path)])
    rendered = _quiet(["render", str(path), "--as", "argv"])
    assert validated in (0, 1, 2) and rendered in (0, 1, 2)
    if validated == 0:
        assert rendered == 0, f"validate accepts {path.read_bytes()!r} but render refuses it"
    with contextlib.suppress(PlanError):
        load_plan_file(path)


# -- plan files ---------------------------------------------------------------------------------


@FUZZ
@given(doc=documents)
def test_random_toml_plans_never_raise(tmp_path: Path, doc: dict[str, Any]) -> None:
    data = _toml(doc)
    if data is None:
        return
    path = tmp_path / "plan.toml"
    path.write_bytes(data)
    _check_plan_file(path)


@FUZZ
@given(data=st.binary(max_size=300))
def test_random_bytes_plans_never_raise(tmp_path: Path, data: bytes) -> None:
    path = tmp_path / "plan.toml"
    path.write_bytes(data)
    _check_plan_file(path)


SHIPPED = ["demo-sweep.toml", "seed-box.toml"]


@FUZZ
@given(
    name=st.sampled_from(SHIPPED),
    pick=st.integers(min_value=0, max_value=10_000),
    value=_values,
    delete=st.booleans(),
)
def test_mutated_shipped_plans_never_raise(
    tmp_path: Path, name: str, pick: int, value: Any, delete: bool
) -> None:
    """One value of a real plan replaced by a random one (or deleted): reaches the deep
    checks (bounds, grid, render) that random documents rarely get to."""
    doc = tomllib.loads((examples_dir() / name).read_text())
    paths = _paths(doc)
    data = _toml(_mutated(doc, paths[pick % len(paths)], value, delete))
    if data is None:
        return
    path = tmp_path / name
    path.write_bytes(data)
    _check_plan_file(path)


# -- session files ------------------------------------------------------------------------------


def _session(parent: Path, trials: int = 3) -> Session:
    session = unit_session(parent, trials=trials)
    session.write_meta({"status": "interrupted", "trials": trials})
    return session


@pytest.fixture
def real_session(fast_dir: Path) -> Session:
    return _session(fast_dir / "real", trials=2)


def _resume_to_the_end(session: Session) -> list[tuple[Any, ...]]:
    """The machine resumed on what the session holds, driven to the end of its plan; returns
    every configuration recorded (before and after), in order."""
    p, _notices, _policy = prepare_resume(session)
    d = Driver(ControllerState(plan=p, trials=tuple(session.load_trials())))
    d.send(ev.StartSweep(plan=p, resume=True))
    for _ in range(20):
        if d.state.phase is Phase.DONE:
            break
        d.finish_trial()
    assert d.state.phase is Phase.DONE and d.state.finished_reason == "plan complete"
    return [replace(t.config, port=0) for t in d.state.trials]


def test_truncating_trials_jsonl_at_every_byte(fast_dir: Path) -> None:
    """A kill can stop a write at any byte: whatever is left, the whole records before the cut
    are kept, the torn rest goes to trials.jsonl.torn, and the resumed sweep runs each
    configuration exactly once. Every cut goes through the parser; the full resume
    preparation on disk (repair, rebuild, plan) runs at every cut near a line's end and at a
    stride of prime width elsewhere."""
    session = _session(fast_dir / "real")
    full = session.trials_path.read_bytes()
    originals = list(parse_trial_lines(full, "t").records)
    meta = (session.path / "session.toml").read_bytes()
    ends = [i + 1 for i, b in enumerate(full) if b == ord("\n")]
    near = {c for end in ends for c in range(end - 3, end + 4)}
    outcomes: dict[int, list[Any]] = {}
    for cut in range(len(full) + 1):
        lines = parse_trial_lines(full[:cut], "trials.jsonl")
        whole = sum(1 for end in ends if end <= cut)
        kept = list(lines.records)
        assert kept == originals[: len(kept)]
        # a cut just before a record's newline leaves a whole record without it: kept
        assert len(kept) in (whole, whole + 1)
        if len(kept) == whole and cut not in ends and cut:
            start = ends[whole - 1] if whole else 0
            assert (lines.torn_offset, lines.torn) == (start, full[start:cut])
        if cut not in near and cut % 61:
            continue
        session.trials_path.write_bytes(full[:cut])
        (session.path / "session.toml").write_bytes(meta)
        torn = session.path / "trials.jsonl.torn"
        torn.unlink(missing_ok=True)
        _plan, notices, _policy = prepare_resume(session)
        assert list(session.read_lines().records) == kept
        if lines.torn_offset is not None:
            assert torn.read_bytes() == lines.torn + b"\n"
            assert any("trials.jsonl.torn" in n for n in notices)
        if len(kept) not in outcomes:
            outcomes[len(kept)] = _resume_to_the_end(session)
    assert sorted(outcomes) == [0, 1, 2, 3]
    for configs in outcomes.values():
        assert len(configs) == len(set(configs)) == 4, configs


def test_truncating_session_toml_and_plan_toml_at_every_byte(fast_dir: Path) -> None:
    """session.toml cut anywhere is rebuilt from the records; plan.toml cut anywhere is
    either still a plan or a clear error naming the file — never a traceback, and never a
    resume that forgets what ran."""
    session = _session(fast_dir / "real")
    meta = (session.path / "session.toml").read_bytes()
    for cut in range(len(meta) + 1):
        (session.path / "session.toml").write_bytes(meta[:cut])
        _plan, _notices, _policy = prepare_resume(session)
        assert session.meta_section()["trials"] == 3
    plan_bytes = (session.path / "plan.toml").read_bytes()
    for cut in range(len(plan_bytes) + 1):
        (session.path / "plan.toml").write_bytes(plan_bytes[:cut])
        try:
            prepare_resume(session)
        except (SessionError, PlanError) as exc:
            assert "plan" in str(exc) or "session" in str(exc), exc
    (session.path / "plan.toml").write_bytes(plan_bytes)


@FUZZ
@given(
    which=st.sampled_from(["session.toml", "trials.jsonl", "plan.toml"]),
    data=st.one_of(st.binary(max_size=400), documents.map(lambda d: _toml(d) or b"")),
)
def test_random_session_files_never_raise(
    real_session: Session, fast_dir: Path, which: str, data: bytes
) -> None:
    """Any bytes in any session file: resume's preparation, report and the record loader
    either work or refuse with a SessionError/PlanError; nothing else escapes."""
    folder = Path(tempfile.mkdtemp(dir=fast_dir))
    shutil.copytree(real_session.path, folder / "s")
    session = Session.open(folder / "s")
    (session.path / which).write_bytes(data)
    try:
        prepare_resume(session)
    except (SessionError, PlanError):
        pass
    else:
        if which != "trials.jsonl":  # the records were not touched: none is lost
            assert len(session.load_trials()) == 2
    with contextlib.suppress(SessionError):
        session.load_trials()
    assert _quiet(["report", str(session.path)]) in (0, 1, 2)


@pytest.mark.parametrize("content", [b"", b"\x00" * 64, b"[session]\ntrials = -1\n"])
def test_a_resume_on_a_broken_session_toml_runs_no_recorded_trial(
    tmp_path: Path, content: bytes
) -> None:
    session = _session(tmp_path)
    (session.path / "session.toml").write_bytes(content)
    configs = _resume_to_the_end(session)
    assert len(configs) == len(set(configs)) == 4


def test_the_machine_alone_never_reproposes_a_record() -> None:
    """The invariant the truncation tests lean on, stated directly: a sweep started on
    recorded trials proposes none of their configurations first."""
    d = Driver()
    d.start(plan())
    d.finish_trial()
    d.finish_trial()
    done = {replace(t.config, port=0) for t in d.state.trials}
    state, _fx = step(
        ControllerState(plan=plan(), trials=d.state.trials), ev.StartSweep(plan=plan(), at=1.0)
    )
    assert state.trial is not None and replace(state.trial.config, port=0) not in done
