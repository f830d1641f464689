"""What every engine must answer: the protocol's slots called on a real configuration.

Why a module of its own: ``test_protocol.py`` runs these checks over every registered engine
(the entry points in pyproject.toml, a third party's included), and a test that defines an
engine of its own runs the very same checks over it (``test_a_fourth_engine.py``). The
configuration they use is built from the engine's own description
(:mod:`tests.engines.described`), never from its name.
"""

from __future__ import annotations

import dataclasses
import inspect

from specconsole.core.config.concepts import Concept
from specconsole.core.config.issues import Issue, IssueReport
from specconsole.core.config.model import ServerConfig
from specconsole.core.config.releases import ReleaseTable
from specconsole.core.config.render import to_argv
from specconsole.core.engine import protocol
from specconsole.core.engine.protocol import EditorField, Endpoints, Engine
from specconsole.core.engine.registry import engine_for, get_engine
from specconsole.core.engine.schedule import LevelPick, Role, SideFile, config_role
from specconsole.core.logs.grammar import LogGrammar
from tests.engines.described import key_of, speculative

SLOTS = (*protocol.REQUIRED, *protocol.OPTIONAL)
"""Every attribute and method the protocol names."""


def check_slots(name: str) -> None:
    """The engine registered as ``name`` fills every slot, each method taking the
    protocol's arguments, its data of the protocol's types."""
    engine = get_engine(name)
    assert isinstance(engine, Engine)
    missing = [slot for slot in SLOTS if not hasattr(engine, slot)]
    assert missing == [], f"{name} leaves {missing} unimplemented"
    for slot in SLOTS:
        want = getattr(protocol.Engine, slot, None)
        if inspect.isfunction(want):
            got = inspect.signature(getattr(engine, slot))
            expected = [p for p in inspect.signature(want).parameters if p != "self"]
            assert len(got.parameters) == len(expected), f"{name}.{slot}{got}"
    assert engine.name == name
    assert isinstance(engine.title, str) and engine.title
    assert isinstance(engine.default_launcher, str) and engine.default_launcher
    assert isinstance(engine.default_port, int)
    assert isinstance(engine.releases, ReleaseTable)
    assert isinstance(engine.endpoints, Endpoints)
    assert isinstance(engine.log_grammar, LogGrammar)
    assert engine.modelled_flags and all(f.startswith("-") for f in engine.modelled_flags)
    fields = {f.name for f in dataclasses.fields(ServerConfig)}
    own = {f.name for f in engine.option_fields}
    assert set(engine.modelled_flags.values()) <= fields | own
    for key in engine.option_fields:  # what the core asks of a key's declaration
        assert key.hint and (not key.concept or key.concept in set(Concept)), key


def check_answers(name: str) -> None:
    """Every slot of the engine registered as ``name`` answers for a configuration of it
    that speculates with a draft (:func:`tests.engines.described.speculative`)."""
    engine = get_engine(name)
    config = speculative(name)
    length = key_of(name, Concept.DRAFT_LENGTH)
    assert engine_for(config) is engine
    argv = to_argv(config)
    launcher = engine.default_launcher.split()
    assert argv[: len(launcher)] == launcher
    flags = engine.render_flags(config, launcher)
    assert argv[len(launcher) :] == flags
    read = engine.parse_args(launcher, flags)
    assert read["model_path"] == "/models/target"
    assert engine.launches(launcher[-1] if len(launcher) == 1 else launcher[0], None) in (
        True,
        False,
    )
    report = IssueReport()
    engine.check(config, set(), report)
    assert all(i.fix for i in report.issues)
    normalized, notes = engine.normalize(config)
    assert isinstance(normalized, ServerConfig) and isinstance(notes, list)
    # it speculates with this draft, or says why it will not (llama.cpp: no spec_type)
    off = engine.speculation_off(config)
    assert engine.verify_tokens(config) >= 2 or (isinstance(off, str) and off)
    assert engine.verify_tokens(engine.without_speculation(config)) == 0 or off
    launcher = engine.default_launcher.split()
    help_argv = engine.help_command(launcher)
    assert help_argv is None or help_argv[: len(launcher)] == launcher
    fingerprint = engine.fingerprint_command(launcher)
    assert fingerprint is None or (isinstance(fingerprint, str) and fingerprint)
    detect = engine.detect_command("python3")
    assert detect is None or (isinstance(detect, list) and detect)
    assert engine.parse_release("no release here") is None
    assert engine.release_from_server_info({}) is None
    assert engine.with_release(config, None) == config
    assert isinstance(engine.release_line(None), str)
    editor = engine.editor_fields(None)
    assert editor and all(isinstance(f, EditorField) for f in editor)
    own = {f.name for f in engine.option_fields}
    assert {f.name for f in editor} <= {f.name for f in dataclasses.fields(ServerConfig)} | own
    # tuning by level: the baseline, a schedule (or why not), side files, the what-if
    baseline = engine.without_speculation(config)
    assert isinstance(baseline, ServerConfig) and engine.verify_tokens(baseline) == 0
    assert config_role(baseline) is Role.BASELINE
    picks = [
        LevelPick(1, dataclasses.replace(config, **{length: 5})),
        LevelPick(64, config),
    ]
    schedule = engine.schedule(picks)
    if isinstance(schedule, Issue):  # it cannot say it: which key and what to do instead
        assert schedule.blocking and schedule.field and schedule.fix
        assert engine.scheduled(config) is None
    else:
        rows = engine.scheduled(schedule)
        assert rows is not None and rows[0].start == 1 and rows[-1].end is None
        assert config_role(schedule) is Role.SCHEDULE
    assert engine.scheduled(config) is None
    files = engine.side_files(schedule if isinstance(schedule, ServerConfig) else config)
    assert all(isinstance(f, SideFile) and f.name and f.text for f in files)
    assert engine.fixed_acceptance(config) is None
    fixed = engine.fix_acceptance(config, 2.5)
    if isinstance(fixed, ServerConfig):
        said = engine.fixed_acceptance(fixed)
        assert said and "fixed at 2.5" in said and config_role(fixed) is Role.WHAT_IF
    else:
        assert fixed.blocking and fixed.fix
    # the forecast from the model's own files, or none
    files = engine.model_files(config)
    assert all(isinstance(f, str) and f for f in files)
    command = engine.model_facts_command("python3", files)
    assert command is None or (files and command[0] == "python3")
    assert engine.parse_model_facts("not the reader's output") == ()
    assert engine.forecast_load(config, ()) is None
