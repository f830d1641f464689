"""A CI-sized sweep of a real llama-server over ``spec_draft_p_min`` x ``spec_draft_n_max``
(issue 41): per-level acceptance is the server's own count, and two configurations whose
difference is inside the measured noise are reported as a tie.

The draft is ``trunc20`` (the target's first 20 of 30 blocks: a few % accepted), so drafting
costs more than it saves on a CPU. llama-server never drafts past the request's end (a draft is
at most the tokens still to generate, less one): with 8 tokens per request, ``n_max`` 8 and 16
run the same way — the same drafts, drafted and accepted tokens, asserted from the counters —
and whatever separates their figures is the machine's noise, measured by the sweep itself
(``[bench] repeats = 3``: every level's 95 % interval, pooled by ``core.plans.verdict``). At
``p_min`` 0.6 the draft is rarely sure enough and its drafts are cut short (the fast pair); at
0.0 it drafts to the end and loses (about a third of the speed in the measured grid,
benchmarks/data/llamacpp-grid.jsonl). The report and ``specconsole best`` must call the best
and its twin a tie; the ``p_min`` 0.0 trials must not be tied with them. (At ``p_min`` 1.0
nothing is drafted at all: such a trial is marked "speculation off" and never wins,
``core.machine.handlers.speculation``.) Acceptance: each level's recorded figures against the
server's own per-request lines in the trial's log (``draft acceptance = R (A accepted / G
generated)``), request by request, and against the counters' own arithmetic; the trial's log
holds every line the server wrote through its last request (the server's own log file of the
run is the reference: a watch cut off as the benchmark ended used to lose them). Predictions:
every trial was forecast from the models' GGUF headers read on the box, and the report's
prediction error is 0 (each loaded, with the capacity predicted).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import defaultdict
from pathlib import Path

import pytest

from specconsole.core.measure.trials import TrialRecord
from specconsole.core.plans.parse import parse_plan
from specconsole.core.plans.verdict import assess
from specconsole.session.store import Session
from tests.fixtures.llamacpp import LlamaCppBuild
from tests.realengine.box import cli, session_dir
from tests.realengine.test_llamacpp_sweeps import plan as sweep_plan
from tests.realengine.test_llamacpp_sweeps import run

pytestmark = [pytest.mark.llamacpp, pytest.mark.slow]

REQUESTS = 3
LADDER = [1, 2]
OUTPUT = 8
"""Tokens per request: no draft is longer than 7, so ``n_max`` 8 and 16 draft alike."""
TASK = re.compile(r"task (\d+) \| +eval time")
ACCEPTED = re.compile(
    r"task (\d+) \| draft acceptance = [0-9.]+ \( *(\d+) accepted / *(\d+) generated\)"
)


def _document(build: LlamaCppBuild, run_dir: Path) -> dict:
    document = sweep_plan(
        build,
        run_dir,
        draft="trunc20",
        axes={"spec_draft_p_min": [0.0, 0.6], "spec_draft_n_max": [OUTPUT, 2 * OUTPUT]},
        objective="single_request",
    )
    document["server"]["parallel"] = 2
    document["bench"] |= {
        "ladder": LADDER,
        "requests_per_level": REQUESTS,
        "output_len": OUTPUT,
        "warmup_requests": 0,
        "repeats": 3,
        "api": "completions",
    }
    return document


def _server_logs(run_dir: Path) -> dict[str, list[str]]:
    """The server's own log of each run (the plain-process backend's ``runs/ID/log``), by
    the sha256 of the launch script the run started from (a trial's ``artifact_hash``)."""
    return {
        hashlib.sha256((run / "command.sh").read_bytes()).hexdigest(): (run / "log")
        .read_text()
        .splitlines()
        for run in sorted((run_dir / "runs").iterdir())
    }


def _server_counts(log: str) -> list[tuple[int, int]]:
    """(accepted, drafted) of every request the server finished, in order (0, 0 for a
    request it drafted nothing for: llama-server prints no acceptance line then)."""
    order = [int(t) for t in TASK.findall(log)]
    drafted: dict[int, tuple[int, int]] = defaultdict(lambda: (0, 0))
    for task, accepted, generated in ACCEPTED.findall(log):
        drafted[int(task)] = (int(accepted), int(generated))
    return [drafted[t] for t in order]


@pytest.mark.timeout(600)
def test_acceptance_is_the_servers_and_a_difference_inside_the_noise_is_a_tie(
    llamacpp_build: LlamaCppBuild, tmp_path: Path
) -> None:
    document = _document(llamacpp_build, tmp_path / "run")
    code, shown, records = run(document, tmp_path, "noise")
    assert code == 0 and len(records) == 4, shown
    assert all(r["status"] == "ok" for r in records), shown
    folder = session_dir(tmp_path / "noise")
    trials = Session.open(folder).load_trials()
    own = _server_logs(tmp_path / "run")
    assert len(own) == 4
    for raw, trial in zip(records, trials, strict=True):
        kept = (folder / raw["log_file"]).read_text().splitlines()
        # the trial's log is what the server wrote, every line through the trial's last
        # request (a watch cut off as the benchmark ended lost them: issue 41's CI failure)
        server = own[raw["artifact_hash"]]
        assert kept == server[: len(kept)], (trial.index, len(kept), len(server))
        served = _server_counts("\n".join(kept))
        assert served == _server_counts("\n".join(server)), trial.index
        # every request of the three runs of the ladder: c=1's, then c=2's (no warm-up
        # requests, no level re-run)
        assert "re-run:" not in (raw.get("note") or ""), raw["note"]
        assert all(lv["failed"] == 0 for lv in raw["levels"]), raw["levels"]
        assert len(served) == len(LADDER) * REQUESTS * 3, served
        for k, level in enumerate(sorted(trial.levels, key=lambda lv: lv.concurrency)):
            counters = level.counters
            assert counters is not None and counters.trusted, level
            window = served[k * REQUESTS : (k + 1) * REQUESTS]
            assert counters.accepted == sum(a for a, _g in window), (trial.index, window)
            assert counters.draft_tokens == sum(g for _a, g in window), (trial.index, window)
            assert sum(counters.per_position) == counters.accepted
            if counters.drafts:
                assert level.accept_length == pytest.approx(1 + counters.accepted / counters.drafts)
            assert level.repeats == 3 and level.per_request_tok_s_ci is not None
    by_point = {(t.config.spec_draft_p_min or 0.0, t.config.spec_draft_n_max): t for t in trials}
    assert not any(t.speculation_off for t in trials), [t.speculation_off for t in trials]

    def drafted(trial: TrialRecord) -> list[tuple[int, int, int]]:
        return [
            (c.drafts, c.draft_tokens, c.accepted)
            for lv in trial.levels
            if (c := lv.counters) is not None
        ]

    # a draft never passes the request's end: n_max 8 and 16 drafted the same tokens
    for p_min in (0.0, 0.6):
        assert drafted(by_point[(p_min, OUTPUT)]) == drafted(by_point[(p_min, 2 * OUTPUT)])
    assert all(d > 0 for d, _g, _a in drafted(by_point[(0.6, OUTPUT)]))
    more = zip(drafted(by_point[(0.0, OUTPUT)]), drafted(by_point[(0.6, OUTPUT)]), strict=True)
    assert all(low[1] > high[1] for low, high in more)  # p_min 0.0 drafts to the end
    plan = parse_plan(document)
    verdict = assess(trials, plan.goal)
    pair = {by_point[(0.6, OUTPUT)].index, by_point[(0.6, 2 * OUTPUT)].index}
    assert verdict.best is not None and verdict.best.index in pair, verdict.sentence
    tied = {t.index for t in verdict.tied}
    assert pair - {verdict.best.index} <= tied, verdict.sentence  # the same run: a tie
    # p_min 0.0 drafts to the request's end and loses: beaten beyond the noise it is no tie,
    # inside it a tie. Which one is the run's to say (idle, the gap is 2-3x and clears the
    # band; with the other core busy this suite measured a +/-42 % band that covers it), so
    # the expectation is worked out here from the records themselves: the figures' own
    # intervals, and the difference against the band the repeats measured
    (metric, _w), *_ = plan.goal.objective.terms
    top = plan.goal.objective.interval(verdict.best)
    assert top is not None and verdict.noise is not None, verdict.sentence
    for point in ((0.0, OUTPUT), (0.0, 2 * OUTPUT)):
        loser = by_point[point]
        mine = plan.goal.objective.interval(loser)
        assert mine is not None
        overlap = mine[1] <= top[2] and top[1] <= mine[2]
        allowed = verdict.noise.half_width(metric.runs(loser), metric.runs(verdict.best))
        inside = abs(top[0] - mine[0]) <= allowed * (abs(top[0]) + abs(mine[0])) / 2
        assert (loser.index in tied) == (overlap or inside), (point, mine, top, verdict.sentence)
    code, report = cli("report", str(folder))
    assert code == 0
    assert f"best: trial {verdict.best.index + 1} " in report
    named = ", ".join(str(i + 1) for i in sorted(tied))  # the twin, and a loser inside the band
    trials_word = "trial" if len(tied) == 1 else "trials"
    assert f"statistically tied with {trials_word} {named} (tie:" in report, report
    assert "⚠ client" not in report  # llama-server streams a chunk per token: no false alarm
    code, said = cli("best", str(folder))
    assert code == 0 and f"tie: trial {verdict.best.index + 1} is not shown to beat #" in said
    code, document_text = cli("report", str(folder), "--format", "json")
    document_json = json.loads(document_text)
    levels = [lv for t in document_json["trials"] for lv in t["levels"]]
    assert all(lv["accept_disagreement"] is None for lv in levels)
    # predictions against what ran: each trial's forecast from the GGUF headers read on the
    # box — it loads, with the capacity llama-server then reports (one unified cache of -c)
    predicted = document_json["predictions"]
    assert [p["trial"] for p in predicted["trials"]] == [1, 2, 3, 4], predicted
    for p in predicted["trials"]:
        assert p["loads_predicted"] is True and p["load_right"] is True, p
        assert p["capacity_predicted"] == p["capacity_measured"] == 2048, p
        assert p["misses"] == [], p
    assert predicted["mape_pct"] == 0.0, predicted
    assert "## Predictions against what ran" in report
    assert "4 of 4 loads predicted right; mean absolute error 0.0 %" in report, report
