"""``specconsole best SESSION``: the best trial's exact launch, ready to paste onto the box.

Why: the point of a sweep is the command line to run afterwards. This prints the sweep's
answer (``core.search.answer``: a proven schedule, else the best trial by the plan's
objective or ``--objective``; the report's rule) as it ran — its normalized
configuration in the flag names of the box's release — rendered by the same function
``render`` uses (``core.plans.launch``), so ``best --as plan`` fed to ``render`` prints these
bytes again. Secrets are never printed: a secret variable is a reference to the
``EnvironmentFile=`` the systemd backend keeps it in.

Output: the launch on standard output (a file its command line names, such as SGLang's
adaptive config of a schedule, written first: ``core.plans.launch``); on standard error one
line naming the trial and its figure, and one with its break-even concurrency when the
session measured no speculation. Exit codes: 0 printed, 1 no trial meets the goal (nothing
printed), 2 the session or the objective cannot be read.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from pathlib import Path

from specconsole.commands.common import error
from specconsole.core.plans.launch import LaunchForm
from specconsole.core.plans.objective import Goal, ObjectiveError

EXIT_NONE = 1
EXIT_INPUT = 2


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    b = subparsers.add_parser(
        "best",
        help="print the best trial's exact launch (command, argv, unit or [server] table)",
        description=(
            "Print the best trial of the session folder SESSION as it ran, for the box's "
            "release: a command line, argv, a systemd unit or a [server] table that "
            "`specconsole render` renders to the same text. Secrets are references to their "
            "EnvironmentFile, never values."
        ),
    )
    b.add_argument("session", type=Path, help="the session folder")
    b.add_argument(
        "--as",
        dest="form",
        choices=[f.value for f in LaunchForm],
        default=LaunchForm.COMMAND.value,
        help="command (default), argv (JSON), unit (systemd) or plan (a [server] table)",
    )
    b.add_argument(
        "--objective",
        default=None,
        metavar="METRIC",
        help="best by this metric instead of the plan's objective (the plan's constraints "
        "still apply), e.g. single_request or aggregate_at_64",
    )
    b.set_defaults(handler=_cmd_best)


def _cmd_best(args: argparse.Namespace) -> int:
    from specconsole.core.plans.goalparse import parse_objective
    from specconsole.core.plans.plan import PlanError
    from specconsole.core.plans.verdict import assess
    from specconsole.core.search.bestlaunch import best_launch
    from specconsole.core.search.levels import level_table
    from specconsole.present.figures.levels import breakeven_of
    from specconsole.present.figures.progress import answer_text, figure_text
    from specconsole.present.labels import record_label
    from specconsole.session.files import SessionError
    from specconsole.session.store import Session

    try:
        session = Session.open(args.session)
        trials = session.load_trials()
        plan = session.load_plan()
    except (SessionError, PlanError) as exc:
        error(str(exc))
        return EXIT_INPUT
    goal = plan.goal
    if args.objective is not None:
        try:
            goal = Goal(parse_objective(args.objective, "--objective"), plan.goal.constraints)
            goal.check_ladder(plan.bench.ladder, "--objective")
        except ObjectiveError as exc:
            error(str(exc))
            return EXIT_INPUT
    picked = best_launch(trials, plan, args.form, goal)
    if picked is None:
        print(
            f"specconsole: no trial of {session.path} meets {goal.describe}; nothing to launch",
            file=sys.stderr,
        )
        return EXIT_NONE
    release = picked.config.engine_version or "release not recorded"
    shown = replace(plan, goal=goal)
    top = picked.trial
    label = record_label(top, plan.base)
    said = (
        answer_text(shown, picked.answer)
        if picked.answer.scheduled
        else f"best: trial {top.index + 1} {label}, {figure_text(shown, top)}"
    )
    print(f"{said} ({picked.config.engine} {release})", file=sys.stderr)
    verdict = assess(trials, goal)
    # the difference is not shown to be real: say so, never a silent winner (a proven
    # schedule is not a static trial's lead)
    if verdict.tied and not picked.answer.scheduled:
        others = ", ".join(f"#{t.index + 1} {record_label(t, plan.base)}" for t in verdict.tied)
        why = (
            f"inside the measured noise, ±{verdict.noise.pct:.1f} %"
            if verdict.noise is not None
            else "their confidence intervals overlap"
        )
        print(f"tie: trial {top.index + 1} is not shown to beat {others} ({why})", file=sys.stderr)
    paying = breakeven_of(level_table(trials, goal, plan.noise_pct), top)
    if paying is not None:
        print(f"best: {paying}", file=sys.stderr)
    sys.stdout.write(picked.text)
    return 0
