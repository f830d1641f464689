"""The console's words and layouts as plain functions (issue 34): the footer's choice, the
help page at 80 columns, whole table columns, the flag-level diff and its wrapped rows, the
banner's rows, notices in plain sentences, the headless level line and verdict."""

from __future__ import annotations

from specconsole.core.machine.state import LevelSummary, Notice
from specconsole.present.columns import CONSOLE_COLUMNS, fit_columns
from specconsole.present.crashtext import banner_rows, cause_text, pack
from specconsole.present.deploys.diffrows import SUMMARY_TITLE, diff_rows
from specconsole.present.deploys.flagdiff import changed_spans, summary_lines
from specconsole.present.keyboard.footer import Part, fit_by_priority, footer_hints, footer_text
from specconsole.present.keyboard.help import help_text
from specconsole.present.keyboard.keymap import (
    BY_ID,
    COMMANDS,
    PANE_KEYS,
    SCREEN_KEYS,
    SECTION_KEYS,
)
from specconsole.present.notices import message_for, plain
from specconsole.present.runlog import deploy_lines, level_line, verdict
from tests.ui.doubles import PROCESS_DIFF, UNIT_DIFF, finished_trial, sweep_plan

CRASH_CHOICES = {"resume", "retry", "edit", "skip", "rollback", "crash-details"}


def test_footer_pins_help_and_quit_and_drops_whole_hints() -> None:
    hints = footer_hints({*CRASH_CHOICES, "deploy", "edit"}, 40, banner=CRASH_CHOICES)
    text = footer_text(hints)
    assert text.startswith("? help  q quit") and len(text) <= 40
    assert "resume" not in text  # the banner lists it
    assert all(f"{h.key} {h.label}" in text for h in hints)  # none cut mid-word
    assert footer_text(footer_hints(set(), 14)) == "? help  q quit"


def test_every_command_key_is_unique_per_state_and_skip_is_not_k() -> None:
    assert BY_ID["skip"].binding == "S"
    keys = [c.binding for c in COMMANDS if c.id not in {"sweep", "pause", "unpause", "continue"}]
    assert len(keys) == len(set(keys))


def test_help_fits_80_columns_lists_s_once_per_state_and_explains_the_symbols() -> None:
    text = help_text(76)
    assert max(len(line) for line in text.splitlines()) <= 76
    main = text.split("After a crash")[0]
    s_rows = [line for line in main.splitlines() if line.startswith("  s  ")]
    assert len(s_rows) == 4 and len({row[5:20] for row in s_rows}) == 4  # four states
    for word in ("★", "◆", "✖", "mrr", "cg-bs", "accept", "capacity", "+N cols →"):
        assert word in text, word
    assert "next box" not in text and "next box" in help_text(76, pool=True)


def test_the_helps_state_column_never_runs_into_its_description() -> None:
    """A key's state ends two spaces before its description starts, or has a line of its
    own (``s  plan, no sweep start the plan's sweep`` read as one sentence)."""
    every = (*SCREEN_KEYS, *COMMANDS, *PANE_KEYS, *SECTION_KEYS)
    keys = [k for k in every if k.when and not k.pool_only]
    for width in (60, 74, 76, 120):
        lines = help_text(width).splitlines()
        for key in keys:
            first_words = " ".join(key.does.split()[:3])
            at = next(
                i
                for i, line in enumerate(lines)
                if first_words in line
                and (
                    line.startswith(f"  {key.keys} ") or lines[i - 1] == f"  {key.keys}  {key.when}"
                )
            )
            row = lines[at]
            head = row[: row.index(first_words)]
            if head.strip():  # key and state on the description's line
                assert head.rstrip().endswith(key.when), (width, row)
                assert len(head) - len(head.rstrip()) >= 2, (width, row)
            else:  # a state wider than its column: the line above holds key and state
                assert lines[at - 1].rstrip().endswith(key.when), (width, lines[at - 1])
        assert max(len(line) for line in lines) <= max(width, 40)


def test_columns_are_whole_or_absent() -> None:
    widths = [24, 9, 8, 8, 11, 8]  # label, status, single, peak, capacity, accept
    fit = fit_columns(CONSOLE_COLUMNS, widths, 50, marker=11)
    shown = [CONSOLE_COLUMNS[i].id for i in fit.shown]
    assert shown == ["label", "peak"] or shown == ["label", "single", "peak"]
    assert sum(widths[i] for i in fit.shown) + 11 <= 50 and fit.hidden == 6 - len(shown)
    assert fit_columns(CONSOLE_COLUMNS, widths, 200).hidden == 0
    later = fit_columns(CONSOLE_COLUMNS, widths, 50, offset=1, marker=11)
    assert later.shown != fit.shown and 0 in later.shown  # → brings others; label stays


def test_the_column_pager_says_where_it_stands_and_stops_at_both_ends() -> None:
    widths = [24, 9, 8, 8, 11, 8]  # label, status, single, peak, capacity, accept
    first = fit_columns(CONSOLE_COLUMNS, widths, 50, marker=13)
    assert first.offset == 0 and first.before == 0 and first.after == first.hidden > 0
    assert first.marker == f"+{first.after} cols →"
    pages = [fit_columns(CONSOLE_COLUMNS, widths, 50, offset=k, marker=13) for k in range(9)]
    last = pages[-1]
    assert last.after == 0 and last.before > 0 and last.marker == f"← {last.before} cols"
    assert pages[8] == pages[last.offset]  # → past the end stays on the last page
    assert fit_columns(CONSOLE_COLUMNS, widths, 50, offset=-3, marker=13) == first  # ← too
    between = [p for p in pages if p.before and p.after]
    assert all(p.marker == f"← {p.before} · {p.after} →" for p in between)
    seen = {CONSOLE_COLUMNS[i].id for p in pages for i in p.shown}
    assert seen == {c.id for c in CONSOLE_COLUMNS}  # every column on some page
    assert all(sum(widths[i] for i in p.shown) + 13 <= 50 for p in pages)


def test_the_flag_summary_leads_for_a_process_line_and_a_unit() -> None:
    assert summary_lines(PROCESS_DIFF) == [
        "--speculative-num-steps: 2 → 3",
        "--speculative-num-draft-tokens: 3 → 4",
    ]
    assert summary_lines(UNIT_DIFF) == [
        "--speculative-num-steps: 3 → 4",
        "--speculative-num-draft-tokens: 4 → 5",
    ]
    old, new = changed_spans("a --x 2 b", "a --x 3 b")
    assert old == [(6, 7)] and new == [(6, 7)]


def test_wrapped_diff_rows_keep_their_gutter_and_mark_the_change() -> None:
    rows = diff_rows(PROCESS_DIFF, 60)
    assert rows[0].text == SUMMARY_TITLE
    removed = [r for r in rows if r.kind == "remove"]
    added = [r for r in rows if r.kind == "add"]
    assert len(removed) > 3 and all(r.text.startswith("-") for r in removed)
    assert all(r.text.startswith("+") for r in added) and all(len(r.text) <= 60 for r in rows)
    marked = [r.text[a:b] for r in added for a, b in r.spans]
    assert marked == ["3", "4"]


def test_the_banner_keeps_title_and_choices_first() -> None:
    choices = ["r resume: steps=7", "t retry", "S skip steps=7", "o roll back to steps=5"]
    rows = banner_rows("✖ Trial 6", choices, ["fix 1", "fix 2"], "cause", ["l1", "l2"], 40, 5)
    assert [k for k, _ in rows][:3] == ["title", "keys", "keys"]
    assert len(rows) == 5 and all(len(t) <= 40 for _, t in rows)
    assert pack(["aaaa", "bbbb"], 9) == ["aaaa", "bbbb"]  # never split an item
    assert cause_text("kv_cache_no_memory") == "no GPU memory left for the KV cache"
    # an engine's own words where the generic sentence would mislead: llama.cpp on a CPU
    assert cause_text("kv_cache_no_memory", "sglang") == "no GPU memory left for the KV cache"
    assert "GPU" not in cause_text("kv_cache_no_memory", "llamacpp")
    assert cause_text("too_many_slots", "llamacpp").startswith("more slots (parallel)")
    assert cause_text("too_many_slots", "no-such-engine") == "too many slots"


def test_notices_are_sentences_and_the_banner_keeps_its_own() -> None:
    assert plain("can't handle DeployConfig in phase benchmarking") == (
        "deploying is not possible while benchmarking"
    )
    crash = Notice("error", "trial 6 crashed: RuntimeError: Not enough memory.", 0.0)
    assert message_for(crash, None, banner=True) is None
    assert message_for(crash, None, banner=False) is not None
    assert message_for(Notice("info", "trial 4: steps=4", 0.0), None, banner=False) is None


def test_headless_lines_explain_streams_and_end_with_a_verdict() -> None:
    few = LevelSummary(
        concurrency=64, output_tok_s=160.5, per_request_tok_s=8.6, completed=19,
        measurement="steady",
    )  # fmt: skip
    assert "19 of 64 streams decoding in the window" in level_line(few)
    full = LevelSummary(
        concurrency=4, output_tok_s=1.0, per_request_tok_s=0.3, completed=4, measurement="steady"
    )
    assert "streams" not in level_line(full)
    assert deploy_lines(UNIT_DIFF)[1:] == [
        "  --speculative-num-steps: 3 → 4",
        "  --speculative-num-draft-tokens: 4 → 5",
    ]
    trials = [finished_trial(s) for s in (1, 2, 3, 4)]
    line = verdict(trials, sweep_plan(), "/s/x")
    assert line.startswith("verdict: best is trial 3 (steps=3 draft=4): peak 2,720.0 tok/s")
    assert line.endswith("full report: specconsole report /s/x")


def test_header_parts_keep_their_priority_at_every_width_and_are_never_cut() -> None:
    parts = [
        Part(("0:12 (0:03 in stage)", "0:12"), 3),
        Part(("ETA 0:45",), 1),
        Part(("★ #3 steps=3 1,730 tok/s", "★ #3 steps=3", "★ #3 1,730 tok/s", "★ #3"), 2),
        Part(("trial 4/6",), 4),
        Part(("sweep: on",), 5),
        Part(("connected",), 6),
    ]
    everything = fit_by_priority(parts, 200, " │ ")
    assert everything == [p.forms[0] for p in parts]
    for width in range(120, 0, -1):
        fitted = fit_by_priority(parts, width, " │ ")
        assert sum(len(p) + 3 for p in fitted) <= width
        forms = [next(i for i, p in enumerate(parts) if f in p.forms) for f in fitted]
        assert forms == sorted(forms), (width, fitted)  # drawn in their own order
        if width >= 3 + len("ETA 0:45"):
            assert "ETA 0:45" in fitted, (width, fitted)  # the ETA goes last of all
        if width >= 6 + len("ETA 0:45") + len("★ #3"):
            assert any(f.startswith("★ #3") for f in fitted), (width, fitted)  # then the best
        if width < 40:
            assert "connected" not in fitted and "trial 4/6" not in fitted
    assert fit_by_priority(parts, 2, " │ ") == []


def test_a_cancelled_trials_partial_figures_are_marked_and_its_status_leads_the_label() -> None:
    import dataclasses

    from specconsole.core.machine.state import TrialStatus
    from specconsole.present.columns import cells
    from tests.ui.doubles import finished_trial

    done = finished_trial(3)
    cancelled = dataclasses.replace(done, status=TrialStatus.CANCELLED)
    label, status, single, peak, *_rest = cells(CONSOLE_COLUMNS, cancelled, None)
    assert label.startswith("⊘ #3 ") and status == "cancelled"
    assert single == f"({done.single_request_tok_s:,.0f})" and peak.startswith("(")
    ok = cells(CONSOLE_COLUMNS, done, None)
    assert ok[0].startswith("#3 ") and not ok[2].startswith("(")  # a result is plain
    report = cells(CONSOLE_COLUMNS, cancelled, None, precise=True)
    assert report[0].startswith("#3 ") and not report[2].startswith("(")  # reports: status col
