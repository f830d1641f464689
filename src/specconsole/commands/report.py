"""``specconsole report SESSION [SESSION_B]``: what a session found, in the format needed.

Why one command for all formats: the report is a function of the session folder alone
(``trials.jsonl`` and the plan as it ran), so a half-finished or killed session reports as
validly as a finished one. ``md`` (default) is the seed's table with findings, Pareto set,
best per concurrency, crashes and terminal charts; ``csv`` the table; ``json`` the document
``docs/report-schema.json`` describes; ``html`` one self-contained page with SVG charts;
``png``/``svg`` the charts alone. Two sessions print side by side (``md`` or ``json``).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from specconsole.commands.common import error
from specconsole.core.machine.state import TrialRecord
from specconsole.core.plans.plan import PlanError, SweepPlan

TEXT_FORMATS = ("md", "csv", "json", "html")
IMAGE_FORMATS = ("png", "svg")


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    rep = subparsers.add_parser(
        "report",
        help="print a session's report (table, findings, Pareto set, charts); two: compared",
        description=(
            "Print the report of the session folder SESSION, or compare two sessions side "
            "by side (md or json)."
        ),
    )
    rep.add_argument("session", type=Path, help="the session folder")
    rep.add_argument("other", type=Path, nargs="?", help="a second session to compare with")
    rep.add_argument(
        "--format",
        choices=[*TEXT_FORMATS, *IMAGE_FORMATS],
        default="md",
        help=(
            "md (default), csv (the table), json (docs/report-schema.json), html (one "
            "self-contained page), png or svg (the charts alone; needs -o)"
        ),
    )
    rep.add_argument(
        "-o",
        "--output",
        type=Path,
        default=None,
        metavar="FILE",
        help="write to FILE instead of standard output (png/svg: FILE is required)",
    )
    rep.set_defaults(handler=_cmd_report)


def _load(path: Path) -> tuple[str, tuple[TrialRecord, ...], SweepPlan | None]:
    from specconsole.session.files import SessionError
    from specconsole.session.store import Session

    session = Session.open(path)
    lines = session.read_lines()
    trials = tuple(session.load_trials())
    if lines.torn_offset is not None:
        print(
            f"specconsole: notice: {session.trials_path} ends with a torn line (byte offset "
            f"{lines.torn_offset}); it is left out (resume moves it aside)",
            file=sys.stderr,
        )
    try:
        plan: SweepPlan | None = session.load_plan()
    except (PlanError, SessionError) as exc:
        print(f"specconsole: notice: {exc}; reporting without the plan", file=sys.stderr)
        plan = None
    name = (plan.name if plan is not None else "") or session.path.name
    return name, trials, plan


def _cmd_report(args: argparse.Namespace) -> int:
    from specconsole.session.files import SessionError

    try:
        first = _load(args.session)
        second = _load(args.other) if args.other is not None else None
    except SessionError as exc:
        return error(str(exc))
    if second is not None:
        return _compare(args, first, second)
    name, trials, plan = first
    if args.format in IMAGE_FORMATS:
        if args.output is None:
            return error(f"--format {args.format} writes image files: give -o FILE")
        from specconsole.session.reports.charts import write_charts

        written = write_charts(trials, plan, args.output, args.format)
        for path in written:
            print(path)
        return 0
    if args.format == "html":
        from specconsole.session.reports.report_html import to_html

        text = to_html(trials, plan, title=name)
    else:
        from specconsole.session.drift import previous_session
        from specconsole.session.reports.report import render

        previous = previous_session(args.session, plan) if args.format != "csv" else None
        text = render(trials, plan, args.format, title=name, previous=previous)
        if args.format != "csv":
            text += "\n"
    return _emit(text, args.output)


def _compare(
    args: argparse.Namespace,
    first: tuple[str, tuple[TrialRecord, ...], SweepPlan | None],
    second: tuple[str, tuple[TrialRecord, ...], SweepPlan | None],
) -> int:
    from specconsole.session.reports.compare import Side, to_document, to_markdown

    if args.format not in ("md", "json"):
        return error(f"two sessions compare as md or json, not {args.format}: use --format md")
    a, b = Side(*first), Side(*second)
    if a.name == b.name:
        a, b = Side(f"A: {a.name}", a.trials, a.plan), Side(f"B: {b.name}", b.trials, b.plan)
    if args.format == "json":
        text = json.dumps(to_document(a, b), indent=2) + "\n"
    else:
        text = to_markdown(a, b)
    return _emit(text, args.output)


def _emit(text: str, output: Path | None) -> int:
    if output is None:
        sys.stdout.write(text)
        return 0
    try:
        output.write_text(text)
    except OSError as exc:
        return error(f"cannot write {output}: {exc}")
    print(output)
    return 0
