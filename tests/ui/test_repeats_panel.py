"""The bench panel with ``[bench] repeats``: which run is going, each finished level's mean
± 95 % CI over its runs so far, and the headlines' spread (runs and standard deviations) —
live and from the record."""

from __future__ import annotations

import dataclasses

from textual.app import App, ComposeResult

from specconsole.core.machine.results import combine_runs
from specconsole.core.machine.state import Phase, TrialStatus
from specconsole.ui import adapt
from specconsole.ui.viewmodels import BenchView
from specconsole.ui.widgets.bench import BenchPanel
from tests.ui.doubles import finished_trial, idle_state, repeated_bench_state


def test_the_live_view_says_which_run_and_combines_the_runs_so_far() -> None:
    state = repeated_bench_state()
    view = adapt.bench_view(state)
    assert view.status == "run 2/3 · level 3/5"
    c1, c4, c16, c32, _c64 = view.levels
    assert c1.runs == 2 and c1.tok_s_ci is not None and c1.tok_s_ci > 0
    assert c4.state == "done" and c4.tok_s_ci is not None
    assert c16.state == "running" and c16.tok_s == 1843.0  # live rate of the run going on
    assert c32.state == "done" and c32.tok_s_ci is None  # run 1 only: no interval yet
    single = view.single_spread
    assert single is not None and single.n == 2 and view.single_tok_s == single.mean
    assert view.peak_tok_s is not None and view.peak_concurrency == 32
    assert view.peak_spread is None  # the peak level has one run so far
    assert adapt.phase_label(state) == "BENCHMARKING · c=16 · run 2/3"


def test_the_last_trials_record_shows_its_spreads() -> None:
    base = finished_trial(3)
    runs = [
        tuple(dataclasses.replace(lv, output_tok_s=lv.output_tok_s * f) for lv in base.levels)
        for f in (1.0, 1.03, 0.98)
    ]
    levels = tuple(combine_runs([run[i] for run in runs]) for i in range(len(base.levels)))
    record = dataclasses.replace(base, levels=levels, status=TrialStatus.OK)
    state = dataclasses.replace(idle_state(), trials=(record,), phase=Phase.DONE)
    view = adapt.bench_view(state)
    assert view.status == "trial 3 · done · 3 runs"
    assert view.peak_spread is not None and view.peak_spread.n == 3
    assert view.peak_tok_s == record.peak_aggregate_tok_s
    assert all(lv.tok_s_ci is not None for lv in view.levels)
    details = adapt.trial_details(state, str(record.index))
    assert details is not None
    c1 = next(line for line in details.lines if line.startswith("c=1:"))
    assert " ± " in c1 and c1.endswith("(mean ± 95% CI of 3 runs)")


class _Panel(App[None]):
    def compose(self) -> ComposeResult:
        yield BenchPanel()


async def _rendered(view: BenchView, width: int) -> list[str]:
    app = _Panel()
    async with app.run_test(size=(width, 12)) as pilot:
        panel = app.query_one(BenchPanel)
        panel.show(view)
        await pilot.pause()
        return str(panel.render()).splitlines()


async def test_the_panel_prints_means_with_intervals_and_the_spread_line() -> None:
    view = adapt.bench_view(repeated_bench_state())
    for width in (80, 120):
        lines = await _rendered(view, width)
        assert len(lines) == len(view.levels) + 3, lines
        c1 = lines[0]
        assert c1.startswith("c=1") and "±" in c1 and "tok/s" in c1
        assert "±" not in lines[3]  # c=32: one run
        headline, spread = lines[-2], lines[-1]
        assert headline.startswith("per request ") and " ± " in headline.split("peak")[0]
        assert spread.startswith("± 95% CI over 2 runs · sd per request ")


async def test_one_run_keeps_the_panel_as_it_was() -> None:
    view = adapt.bench_view(
        dataclasses.replace(idle_state(), trials=(finished_trial(2),), phase=Phase.DONE)
    )
    assert view.single_spread is None and view.peak_spread is None
    assert view.status == "trial 2 · done" and all(lv.tok_s_ci is None for lv in view.levels)
    lines = await _rendered(view, 80)
    assert len(lines) == len(view.levels) + 2 and not any("±" in line for line in lines)


async def test_the_c1_row_and_the_headline_say_which_rate_they_are() -> None:
    """Issue 42 #8: the c=1 row (aggregate) and the headline (per request) showed two
    unlabelled figures; each rate now names its kind at every width, every figure whole."""
    view = adapt.bench_view(
        dataclasses.replace(idle_state(), trials=(finished_trial(2),), phase=Phase.DONE)
    )
    for width in (40, 60, 80, 120):
        lines = await _rendered(view, width)
        rows, headline = lines[: len(view.levels)], lines[-1]
        assert all(" agg " in row and row.rstrip().endswith(("tok/s", "ms")) for row in rows), rows
        assert headline.startswith(("per request ", "per req ")), headline
        assert "peak agg " in headline and "…" not in headline, headline
