"""What a trial shows comes from the trial's engine, for every registered engine (#39: "no
view assumes SGLang"): its phases, its labels, the fixes it offers (the capacity term: tests/ui).

Why: a llama.cpp run once showed ``flushing`` though llama-server has no flush endpoint and
none was sent, ``(max_total_num_tokens)`` as its capacity and ``metrics=True`` in a label.
Each check here is asked of every engine from its own declarations, never by its name.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
import tomli_w

from specconsole.core.config.model import (
    ServerConfig,
    config_to_table,
    option_fields,
    replace_config,
)
from specconsole.core.engine.registry import engine_names, get_engine
from specconsole.core.logs.events import SuggestedFix
from specconsole.core.machine import effects as fx
from specconsole.core.machine import events as ev
from specconsole.core.machine.handlers.crash import useful_fixes
from specconsole.core.machine.state import Phase
from specconsole.core.plans.parse import loads_plan
from specconsole.present.labels import config_label, format_value
from tests.controller.helpers import Driver
from tests.engines.described import speculative


class _EngineDriver(Driver):
    """The shared driver, validating any engine's configuration as it is."""

    def validated(self) -> None:
        config = self.find_config()
        self.send(ev.ConfigValidated(config=config, argv=("server",)))


def _plan_for(config: ServerConfig) -> object:
    server = tomli_w.dumps({"server": config_to_table(config)})
    return loads_plan(server + '[sweep]\nstrategy = "grid"\n[bench]\nladder = [1, 4]\n')


@pytest.mark.parametrize("engine", engine_names())
def test_a_flushing_phase_only_where_the_engine_serves_a_flush(engine: str) -> None:
    d = _EngineDriver()
    d.start(_plan_for(speculative(engine)))  # type: ignore[arg-type]
    d.to_phase(Phase.READY)
    d.send(ev.ServerInfoFetched(items=()))
    flushes = get_engine(engine).endpoints.flush_cache is not None
    assert (d.state.phase is Phase.FLUSHING) is flushes, d.state.phase
    assert (fx.FlushCache in d.effect_types()) is flushes
    if not flushes:
        assert d.state.phase is Phase.BENCHMARKING
        d.send(ev.BenchFinished(levels=(), accept_length=None))
        record = d.find(fx.RecordTrial).record  # type: ignore[attr-defined]
        assert Phase.FLUSHING not in [p.phase for p in record.phases]


@pytest.mark.parametrize("engine", engine_names())
def test_a_label_spells_a_switch_as_on_or_off(engine: str) -> None:
    switches = [f.name for f in get_engine(engine).option_fields if f.kind == "bool"]
    assert format_value("any", True) == "on" and format_value("any", False) == "off"
    base = speculative(engine)
    for key in switches:
        label = config_label(dataclasses.replace(base, **{key: True}), base)
        assert "True" not in label and "False" not in label, label


@pytest.mark.parametrize("engine", engine_names())
def test_a_fix_already_so_in_the_crashed_configuration_is_not_offered(engine: str) -> None:
    base = speculative(engine)
    for fixes in get_engine(engine).log_grammar.fixes.values():
        for fix in fixes:
            if not fix.changes or not all(k in option_fields(engine) for k, _ in fix.changes):
                continue
            done = replace_config(base, **dict(fix.changes))
            assert useful_fixes(done, [fix]) == (), fix.text  # it would change nothing
            if not fix.only_when and done != base:
                assert useful_fixes(base, [fix]) == (fix.text,)


@pytest.mark.parametrize("engine", engine_names())
def test_the_crash_keeps_only_the_fixes_that_can_change_its_outcome(engine: str) -> None:
    key = next(f.name for f in get_engine(engine).option_fields if f.kind == "int")
    value = str(getattr(speculative(engine), key) or 7)
    already = SuggestedFix(f"set {key} to {value}", ((key, value),))
    unset_only = SuggestedFix(f"only while {key} is unset", only_when=((key, (None,)),))
    other = SuggestedFix("read the exception above")
    d = _EngineDriver()
    d.start(_plan_for(replace_config(speculative(engine), **{key: value})))  # type: ignore[arg-type]
    d.to_phase(Phase.LOADING)
    d.send(ev.FatalSeen(cause="x", message="died", fixes=(already, unset_only, other)))
    crash = d.state.trial.crash  # type: ignore[union-attr]
    assert crash is not None and crash.fixes == ("read the exception above",)


@pytest.mark.parametrize("engine", engine_names())
def test_the_box_commands_address_the_file_s_engine_s_unit(engine: str, tmp_path: Path) -> None:
    from specconsole.commands.boxcmd import profile_tables
    from specconsole.core.plans.profile import default_unit

    plan = tmp_path / "plan.toml"
    plan.write_text(tomli_w.dumps({"server": config_to_table(speculative(engine))}))
    assert profile_tables(str(plan), None)[1]["unit"] == f"{engine}.service"
    assert profile_tables(str(plan), "mine.service")[1]["unit"] == "mine.service"
    assert profile_tables("gpu-box", None)[1]["unit"] == default_unit()
