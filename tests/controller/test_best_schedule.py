"""``specconsole best`` of a schedule session (issue 43): the schedule in the engine's own form
— SGLang's adaptive JSON written first as its side file, then the flags naming it; vLLM's
``--speculative-config`` list — and ``best --as plan`` round-tripping through ``validate``
and ``render`` to the same launch, byte for byte; the best's break-even said beside it.

The session is the schedule strategy's own records (the simulator model's figures, the
schedule trial's a little above every static so it wins the plan's objective), written by
the session store as a sweep writes them; the commands run as subprocesses.
"""

from __future__ import annotations

import dataclasses
import json
import shlex
from pathlib import Path

import pytest

from specconsole.core.machine import events as ev
from specconsole.core.machine.results import validate_config
from specconsole.core.measure.trials import LevelSummary, TrialRecord, TrialStatus
from specconsole.core.plans.parse import loads_plan
from specconsole.core.search.strategy import next_trial
from specconsole.session.store import Session
from specconsole.sim.forecast import predict
from tests.session.sim_sessions import cli

REPO = Path(__file__).resolve().parents[2]
LADDER = (1, 4, 16, 32, 64)
PLANS = {
    "sglang": (REPO / "examples" / "schedule-sweep.toml").read_text(),
    "vllm": (REPO / "examples" / "vllm-schedule-sweep.toml").read_text(),
}


def _session(tmp_path: Path, engine: str) -> Path:
    text = PLANS[engine].replace("{plan_dir}", str(REPO / "examples"))
    text = text.replace("{python}", "python3").replace('port = "auto"', "port = 30123")
    plan = dataclasses.replace(loads_plan(text), source=text)
    session = Session.create(tmp_path / "sessions", plan)
    trials: list[TrialRecord] = []
    while len(trials) < 7:  # the statics, the baseline, the schedule
        proposal = next_trial(plan, trials)
        assert proposal is not None
        checked = validate_config(proposal.config)
        assert isinstance(checked, ev.ConfigValidated), checked
        lift = 1.03 if len(trials) == 6 else 1.0  # the schedule wins the peak aggregate
        levels = tuple(
            LevelSummary(c, (p := predict(checked.config, c)).aggregate_tok_s * lift,
                         p.per_request_tok_s * lift, 8)
            for c in LADDER
        )  # fmt: skip
        record = TrialRecord(
            index=len(trials),
            config=proposal.config,
            normalized=checked.config,
            argv=checked.argv,
            status=TrialStatus.OK,
            levels=levels,
        )
        session.append_trial(record)
        trials.append(record)
    return session.path


@pytest.mark.parametrize("engine", ["sglang", "vllm"])
def test_best_of_a_schedule_session_round_trips_through_validate_and_render(
    tmp_path: Path, engine: str
) -> None:
    folder = _session(tmp_path, engine)
    command = cli("best", str(folder))
    assert command.returncode == 0, command.stderr
    assert "result: #7 schedule 1-2:5,3-8:4,9+:3" in command.stderr  # the proven answer
    assert "speculation pays at every level of the ladder" in command.stderr  # its break-even
    plan_file = tmp_path / "best.toml"
    plan_file.write_text(cli("best", str(folder), "--as", "plan").stdout)
    checked = cli("validate", str(plan_file))
    assert checked.returncode == 0, checked.stdout + checked.stderr
    for form in ("command", "unit", "argv"):
        best = cli("best", str(folder), "--as", form).stdout
        rendered = cli("render", str(plan_file), "--as", form)
        assert rendered.returncode == 0, rendered.stderr
        assert rendered.stdout == best, form  # the same launch, byte for byte
    if engine == "sglang":  # the adaptive JSON first, as the side file its flag names
        first, _, rest = command.stdout.partition("\n")
        assert first.startswith("cat > sglang-adaptive-") and first.endswith(
            ".json <<'SPECCONSOLE_EOF'"
        )
        path = shlex.split(first)[2]
        body, _, line = rest.partition("SPECCONSOLE_EOF\n")
        assert json.loads(body) == {
            "1": {"candidate_steps": [5]},
            "3": {"candidate_steps": [4]},
            "9": {"candidate_steps": [3]},
        }
        argv = shlex.split(line.split("  #")[0])
        assert argv[argv.index("--speculative-adaptive-config") + 1] == path
        assert "--speculative-adaptive" in argv
        unit = cli("best", str(folder), "--as", "unit").stdout
        assert f"# {path} (the unit's command line names it; write it first):" in unit
        assert '#     "9": {"candidate_steps": [3]}' in unit
    else:  # vLLM's own list inside --speculative-config
        argv = json.loads(cli("best", str(folder), "--as", "argv").stdout)
        spec = json.loads(argv[argv.index("--speculative-config") + 1])
        assert spec["num_speculative_tokens_per_batch_size"] == [[1, 2, 5], [3, 8, 4], [9, 64, 3]]
        assert "cat >" not in command.stdout
