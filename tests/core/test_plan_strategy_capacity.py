"""Tests of sweep plans (parsing, errors naming the key), strategies and the capacity predictor."""

from __future__ import annotations

from dataclasses import replace

import pytest

from specconsole.core.machine.state import LevelSummary, TrialRecord, TrialStatus
from specconsole.core.plans.parse import loads_plan
from specconsole.core.plans.placeholders import resolve_placeholders
from specconsole.core.plans.plan import CrashPolicy, PlanError, StrategyKind
from specconsole.core.plans.tables import server_config_from_table, server_config_to_table
from specconsole.core.ports import BenchApi
from specconsole.core.search.capacity import draft_tokens, fit_line, predict_capacity
from specconsole.core.search.strategy import boundary_result, findings, next_trial
from specconsole.engines.sglang.keys import SpecAlgorithm
from specconsole.paths import examples_dir
from tests.controller.helpers import PLAN_TEXT, plan

# --------------------------------------------------------------------------------------------
# Plans
# --------------------------------------------------------------------------------------------


def test_parse_the_unit_plan() -> None:
    p = loads_plan(PLAN_TEXT)
    assert p.base.speculative_algorithm is SpecAlgorithm.EAGLE3
    assert p.axes == (("speculative_num_steps", (1, 2, 3, 10)),)
    assert p.strategy is StrategyKind.BOUNDARY and p.walk_axis == "speculative_num_steps"
    assert p.on_crash is CrashPolicy.PAUSE and p.load_timeout_s == 120
    assert p.bench.ladder == (1, 4) and p.bench.requests_per_level == 4
    assert p.estimated_trials == 4
    assert p.minimum_capacity == 64 + 16
    assert [c.speculative_num_steps for c in p.grid()] == [1, 2, 3, 10]


def test_grid_varies_the_last_axis_fastest() -> None:
    text = PLAN_TEXT.replace(
        "speculative_num_steps = [1, 2, 3, 10]",
        "speculative_num_steps = [1, 2]\nmem_fraction_static = [0.8, 0.9]",
    ).replace('strategy = "boundary"', 'strategy = "grid"')
    p = loads_plan(text)
    pairs = [(c.speculative_num_steps, c.mem_fraction_static) for c in p.grid()]
    assert pairs == [(1, 0.8), (1, 0.9), (2, 0.8), (2, 0.9)]


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (("[bench]", "[bench]\nladdr = [1]"), r"\[bench\]: unknown key 'laddr'"),
        (("ladder = [1, 4]", "ladder = [0, 4]"), r"\[bench\] ladder must be a non-empty list"),
        (
            ("ladder = [1, 4]", 'ladder = [1, 4]\napi = "grpc"'),
            r"\[bench\] api = 'grpc' is not valid",
        ),
        (('strategy = "boundary"', 'strategy = "random"'), r"\[sweep\] strategy = 'random'"),
        (('on_crash = "pause"', 'on_crash = "ignore"'), r"\[sweep\] on_crash = 'ignore'"),
        (("load_timeout = 120", "load_timeout = -1"), r"\[sweep\] load_timeout must be greater"),
        (
            ("[1, 2, 3, 10]", '["a"]'),
            r"\[sweep.axes\] speculative_num_steps\[0\] must be an integer",
        ),
        (("[1, 2, 3, 10]", "[1, 1]"), r"lists a value twice"),
        (
            ("speculative_num_steps = [1", "nonsense_flag = [1"),
            r"unknown server argument 'nonsense_flag'",
        ),
        (('model_path = "Qwen/Qwen3.5-122B-A10B"', ""), r"\[server\] model_path is required"),
        (('speculative_algorithm = "EAGLE3"', 'speculative_algorithm = "EAGLE9"'), r"EAGLE9"),
        (("max_running_requests = 64", 'max_running_requests = "64"'), r"must be an integer"),
        (('name = "unit"', 'name = "unit"\n[extra]'), r"unknown key 'extra'"),
        (
            ('strategy = "boundary"', 'strategy = "boundary"\naxis = "tp_size"'),
            r"axis = 'tp_size' is not one of",
        ),
        (
            ("[sweep]", '[service]\nkind = "kubernetes"\n[sweep]'),
            r"\[service\] kind = 'kubernetes'",
        ),
    ],
)
def test_plan_errors_name_the_key(edit: tuple[str, str], message: str) -> None:
    old, new = edit
    assert old in PLAN_TEXT
    with pytest.raises(PlanError, match=message):
        loads_plan(PLAN_TEXT.replace(old, new, 1))


def test_not_toml_is_a_plan_error() -> None:
    with pytest.raises(PlanError, match="not valid TOML"):
        loads_plan("[server\n")


def test_boundary_needs_integers() -> None:
    text = PLAN_TEXT.replace(
        "speculative_num_steps = [1, 2, 3, 10]", "mem_fraction_static = [0.8, 0.9]"
    )
    with pytest.raises(PlanError, match="use integers"):
        loads_plan(text)


def test_server_table_round_trip() -> None:
    cfg = server_config_from_table(
        {
            "model_path": "m",
            "speculative_algorithm": "EAGLE3",
            "speculative_num_steps": 3,
            "mem_fraction_static": 1,
            "extra_args": ["--log-level", "info"],
            "env": {"CUDA_VISIBLE_DEVICES": "0,1"},
        }
    )
    assert cfg.mem_fraction_static == 1.0 and isinstance(cfg.mem_fraction_static, float)
    assert cfg.env == (("CUDA_VISIBLE_DEVICES", "0,1"),)
    assert server_config_from_table(server_config_to_table(cfg)) == cfg


def test_placeholders_resolve_the_interpreter() -> None:
    text = PLAN_TEXT.replace(
        'model_path = "Qwen/Qwen3.5-122B-A10B"',
        'model_path = "Qwen/Qwen3.5-122B-A10B"\nlauncher = "{python} -m specconsole.sim"',
    )
    p = resolve_placeholders(loads_plan(text), {"python": "/opt/py/bin/python"})
    assert p.base.launcher == "/opt/py/bin/python -m specconsole.sim"
    assert all(c.launcher.startswith("/opt/py") for c in p.grid())


@pytest.mark.parametrize("name", ["demo-sweep.toml", "seed-box.toml"])
def test_examples_parse(name: str) -> None:
    path = examples_dir() / name
    p = loads_plan(path.read_text())
    assert p.axes[0] == ("speculative_num_steps", (1, 2, 3, 4, 5, 10))
    assert p.bench.ladder == (1, 4, 16, 32, 64)
    assert p.base.speculative_eagle_topk == 1
    assert p.bench.api in tuple(BenchApi)


def test_the_llamacpp_example_is_a_plan_of_its_own_keys() -> None:
    p = loads_plan((examples_dir() / "llamacpp-box.toml").read_text())
    assert p.base.engine == "llamacpp" and p.base.spec_type == "draft-simple"
    assert p.axes == (("ctx_size", (32768, 131072)), ("spec_draft_n_max", (1, 2, 4, 8, 16)))
    grid = p.grid()[: p.max_trials]
    assert [(c.ctx_size, c.spec_draft_n_max) for c in grid] == [
        *((32768, n) for n in (1, 2, 4, 8, 16)),
        (131072, 1),
    ]
    assert p.bench.api is BenchApi.CHAT


# --------------------------------------------------------------------------------------------
# Strategies
# --------------------------------------------------------------------------------------------


def _record(
    steps: int,
    status: TrialStatus,
    single: float = 100.0,
    agg: float = 1000.0,
    capacity: int | None = None,
    base_plan=None,
) -> TrialRecord:  # type: ignore[no-untyped-def]
    p = base_plan or plan()
    cfg = p.at(p.base, speculative_num_steps=steps)
    lv = (
        (
            LevelSummary(concurrency=1, output_tok_s=single, per_request_tok_s=single, completed=1),
            LevelSummary(concurrency=4, output_tok_s=agg, per_request_tok_s=agg / 4, completed=4),
        )
        if status is TrialStatus.OK
        else ()
    )
    return TrialRecord(index=0, config=cfg, status=status, levels=lv, capacity=capacity)


def _steps_of(proposal) -> int | None:  # type: ignore[no-untyped-def]
    return None if proposal is None else proposal.config.speculative_num_steps


def test_boundary_bisects_to_the_largest_loading_value() -> None:
    p = plan()
    ok, bad = TrialStatus.OK, TrialStatus.CRASHED
    trials = [_record(s, ok) for s in (1, 2, 3)]
    assert _steps_of(next_trial(p, trials)) == 10
    trials.append(_record(10, bad))
    assert _steps_of(next_trial(p, trials)) == 6
    trials.append(_record(6, ok))
    assert _steps_of(next_trial(p, trials)) == 8
    trials.append(_record(8, bad))
    assert _steps_of(next_trial(p, trials)) == 7
    trials.append(_record(7, ok))
    assert next_trial(p, trials) is None
    assert boundary_result(p, trials) == (7, 8)
    assert findings(p, trials) == (
        "speculative_num_steps: the largest value that loads is 7 (8 fails)",
    )


def test_boundary_does_not_try_values_above_a_failure() -> None:
    p = plan()
    trials = [_record(1, TrialStatus.OK), _record(2, TrialStatus.LOAD_TIMEOUT)]
    assert next_trial(p, trials) is None
    assert boundary_result(p, trials) == (1, 2)


def test_boundary_cancelled_trials_are_retried_skipped_are_not() -> None:
    p = plan()
    trials = [_record(1, TrialStatus.CANCELLED)]
    assert _steps_of(next_trial(p, trials)) == 1
    skipped = [p.at(p.base, speculative_num_steps=1)]
    assert _steps_of(next_trial(p, trials, skipped)) == 2


def test_boundary_when_even_the_smallest_fails() -> None:
    p = plan()
    trials = [_record(1, TrialStatus.CRASHED)]
    assert next_trial(p, trials) is None
    assert "even 1 fails" in findings(p, trials)[0]


def test_grid_strategy() -> None:
    p = replace(plan(), strategy=StrategyKind.GRID)
    trials = [_record(1, TrialStatus.OK), _record(2, TrialStatus.CRASHED)]
    assert _steps_of(next_trial(p, trials)) == 3  # the grid does not stop at a crash
    assert findings(p, trials) == ()


def test_plateau_stops_when_gains_flatten() -> None:
    p = replace(plan(), strategy=StrategyKind.PLATEAU, min_gain_pct=5.0)
    trials = [_record(1, TrialStatus.OK, single=100.0)]
    assert _steps_of(next_trial(p, trials)) == 2
    trials.append(_record(2, TrialStatus.OK, single=120.0))
    assert _steps_of(next_trial(p, trials)) == 3
    trials.append(_record(3, TrialStatus.OK, single=122.0))  # +1.7% < 5%
    assert next_trial(p, trials) is None
    assert "best single-request speed at 3" in findings(p, trials)[0]


def test_plateau_stops_when_aggregate_falls() -> None:
    p = replace(plan(), strategy=StrategyKind.PLATEAU, min_gain_pct=1.0)
    trials = [_record(1, TrialStatus.OK, 100, 1000), _record(2, TrialStatus.OK, 130, 900)]
    assert next_trial(p, trials) is None


def test_plateau_stops_at_a_failure() -> None:
    p = replace(plan(), strategy=StrategyKind.PLATEAU)
    trials = [_record(1, TrialStatus.OK), _record(2, TrialStatus.CRASHED)]
    assert next_trial(p, trials) is None


# --------------------------------------------------------------------------------------------
# Capacity
# --------------------------------------------------------------------------------------------


def test_draft_tokens_follow_sglang_rules() -> None:
    base = plan().base
    assert draft_tokens(replace(base, speculative_num_steps=3)) == 4  # topk 1 → steps + 1
    assert draft_tokens(replace(base, speculative_num_steps=3, speculative_num_draft_tokens=9)) == 4
    assert (
        draft_tokens(
            replace(
                base,
                speculative_num_steps=3,
                speculative_eagle_topk=4,
                speculative_num_draft_tokens=8,
            )
        )
        == 8
    )
    assert draft_tokens(replace(base, speculative_algorithm=None)) == 0


def test_fit_line() -> None:
    slope, intercept = fit_line([(2, 500), (3, 400), (4, 300)])  # type: ignore[misc]
    assert slope == pytest.approx(-100) and intercept == pytest.approx(700)
    assert fit_line([(2, 500), (2, 510)]) is None


def test_capacity_predictor_flags_steps_10_from_steps_1_to_4() -> None:
    """Capacities the simulator's seed profile (its pure memory model) gives for steps 1-4:
    the spec workspace grows by cuda_graph_max_bs x 11.35 MiB per draft token."""
    from specconsole.sim.forecast import calibration_config, predict
    from specconsole.sim.profile import load_default_profile

    profile = load_default_profile()
    p = plan()
    trials = []
    for steps in (1, 2, 3, 4):
        cfg = calibration_config(profile, steps)
        capacity = predict(cfg, 1, profile=profile).max_total_num_tokens
        trials.append(
            TrialRecord(index=steps - 1, config=cfg, status=TrialStatus.OK, capacity=capacity)
        )
    caps = [t.capacity for t in trials]
    assert caps == sorted(caps, reverse=True) and caps[-1] > p.minimum_capacity
    ten = calibration_config(profile, 10)
    prediction = predict_capacity(trials, ten, minimum_tokens=p.minimum_capacity)
    assert not prediction.feasible, prediction
    assert prediction.predicted_tokens is not None
    assert prediction.predicted_tokens < p.minimum_capacity
    assert "not expected to load" in prediction.reason
    # and the simulator agrees: steps=10 does not load
    assert predict(ten, 1, profile=profile).load_failure is not None
    five = calibration_config(profile, 5)
    assert predict_capacity(trials, five, minimum_tokens=p.minimum_capacity).feasible


def test_capacity_needs_two_points_and_comparable_trials() -> None:
    base = plan().base
    one = [TrialRecord(index=0, config=replace(base, speculative_num_steps=1), capacity=1000)]
    pred = predict_capacity(one, replace(base, speculative_num_steps=10))
    assert pred.predicted_tokens is None and pred.feasible
    assert predict_capacity(one, replace(base, speculative_num_steps=1)).predicted_tokens == 1000
    other_mem = [
        TrialRecord(
            index=0,
            config=replace(base, speculative_num_steps=s, mem_fraction_static=0.7),
            capacity=c,
        )
        for s, c in ((1, 300), (2, 200))
    ]
    assert (
        predict_capacity(other_mem, replace(base, speculative_num_steps=10)).predicted_tokens
        is None
    )


@pytest.mark.parametrize("name", ["demo-sweep.toml", "seed-box.toml"])
def test_example_configurations_are_valid(name: str) -> None:
    from specconsole.controller.outcome import plan_problems

    p = resolve_placeholders(loads_plan((examples_dir() / name).read_text()), {"python": "py"})
    assert plan_problems(p) == []
    assert [c.speculative_num_draft_tokens for c in p.grid()] == [2, 3, 4, 5, 6, 11]


@pytest.mark.parametrize("name", ["demo-sweep.toml", "seed-box.toml"])
def test_plan_document_round_trip(name: str) -> None:
    import tomli_w

    from specconsole.core.plans.parse import plan_document

    p = loads_plan((examples_dir() / name).read_text())
    again = loads_plan(tomli_w.dumps(plan_document(p)))
    assert replace(again, source="") == replace(p, source="")


def test_a_console_ui_table_is_ignored() -> None:
    p = loads_plan(PLAN_TEXT + '\n[ui]\ntheme = "mono"\n')
    assert p.axes == plan().axes


@pytest.mark.parametrize(
    ("lines", "placement", "url"),
    [
        ("", "forward", None),
        ('placement = "forward"', "forward", None),
        ('placement = "remote"', "remote", None),
        ('placement = "direct"', "direct", None),
        (
            'placement = "direct"\nurl = "http://gpu-box.lan:30000/"',
            "direct",
            "http://gpu-box.lan:30000",
        ),
    ],
)
def test_bench_placement(lines: str, placement: str, url: str | None) -> None:
    p = loads_plan(PLAN_TEXT.replace("[bench]\n", f"[bench]\n{lines}\n", 1))
    assert p.bench_placement.value == placement and p.bench_url == url
    assert p.bench.ladder == (1, 4)  # the placement keys are not BenchSpec fields


@pytest.mark.parametrize(
    ("lines", "message"),
    [
        ('placement = "moon"', r"\[bench\] placement = 'moon' is not valid; use one of 'direct'"),
        ('url = "http://box:30000"', r'\[bench\] url is only used with placement = "direct"'),
        (
            'placement = "remote"\nurl = "http://box:30000"',
            r'\[bench\] url is only used with placement = "direct" \(placement is "remote"\)',
        ),
        (
            'placement = "direct"\nurl = "box:30000"',
            r"\[bench\] url = 'box:30000' is not a server URL",
        ),
        ('placement = "direct"\nurl = 30000', r"\[bench\] url = 30000 is not a server URL"),
        ('placement = "direct"\nurl = "http://box:99999"', r"\[bench\] url = .* invalid port"),
    ],
)
def test_bench_placement_errors_name_the_key(lines: str, message: str) -> None:
    with pytest.raises(PlanError, match=message):
        loads_plan(PLAN_TEXT.replace("[bench]\n", f"[bench]\n{lines}\n", 1))


def test_bench_placement_round_trips_through_the_plan_document() -> None:
    import tomli_w

    from specconsole.core.plans.parse import plan_document

    p = loads_plan(
        PLAN_TEXT.replace("[bench]\n", '[bench]\nplacement = "direct"\nurl = "http://h:1"\n', 1)
    )
    again = loads_plan(tomli_w.dumps(plan_document(p)))
    assert replace(again, source="") == replace(p, source="")


def test_the_server_table_is_read_by_core_config() -> None:
    """Plans read [server] with ``core.config.model`` (aliases, shell-split strings), keeping
    TOML-typed numbers and errors that name the plan's key."""
    text = PLAN_TEXT.replace(
        "max_running_requests = 64",
        "max_running_requests = 64\ntp = 4\nextra_args = \"--log-level 'info'\"",
    )
    base = loads_plan(text).base
    assert base.tp_size == 4 and base.extra_args == ("--log-level", "info")
    with pytest.raises(PlanError, match=r"\[server\] tp_size: expected an integer, got True"):
        loads_plan(PLAN_TEXT.replace("max_running_requests = 64", "tp_size = true"))
    with pytest.raises(PlanError, match=r"\[server\] spec_num_steps: unknown key.*did you mean"):
        loads_plan(PLAN_TEXT.replace("max_running_requests = 64", "spec_num_steps = 3"))
    with pytest.raises(PlanError, match=r"\[server\] mem_fraction_static must be a number"):
        loads_plan(PLAN_TEXT.replace("max_running_requests = 64", 'mem_fraction_static = "0.8"'))


def test_direct_placement_over_ssh_needs_a_url_for_a_loopback_server() -> None:
    ssh = '[host]\ntransport = "ssh"\nalias = "gpu-box"\n[server]\n'
    text = PLAN_TEXT.replace("[server]\n", ssh, 1).replace(
        "[bench]\n", '[bench]\nplacement = "direct"\n', 1
    )
    with pytest.raises(PlanError, match=r'\[bench\] placement = "direct" .* give \[bench\] url'):
        loads_plan(text)
    url = 'url = "http://gpu-box:30000"\n'
    with_url = text.replace('placement = "direct"\n', f'placement = "direct"\n{url}')
    assert loads_plan(with_url).bench_url == "http://gpu-box:30000"
    host = 'max_running_requests = 64\nhost = "10.0.0.5"'
    public = text.replace("max_running_requests = 64", host)
    assert loads_plan(public).bench_url is None  # the box's own address is reachable
