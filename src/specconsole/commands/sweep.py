"""``specconsole sweep | resume | sessions``: sweeps without the console, and their records.

Why these together: they are the session life cycle. ``sweep PLAN.toml --headless``
creates a session folder and runs the plan's trials with line-by-line progress; ``resume``
continues a session where it stopped (reattaching to a server that is already up with the
planned configuration); ``sessions`` lists the folders (``report``, in
``commands.report``, reads them).

``{python}`` in a plan's launcher/extra_args/env is replaced by this interpreter
(``sys.executable``), so the demo plan finds the simulator in the same virtualenv, and
``port = "auto"`` by a free loopback port, chosen when the session is created and reused by
``resume``.

Exit codes (headless): 0 finished, 1 trials could not run (operation failures) or bad input,
3 paused after a crash under ``--on-crash pause`` (resume to continue), 130 interrupted.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

from specconsole.commands.common import (
    SessionNotCreated,
    add_on_crash_option,
    add_session_option,
    create_session,
    error,
    lock_session,
)
from specconsole.core.plans.parse import loads_plan
from specconsole.core.plans.plan import CrashPolicy, PlanError, SweepPlan

if TYPE_CHECKING:
    from specconsole.session.store import Session


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``sweep``, ``resume`` and ``sessions``."""
    p = subparsers.add_parser(
        "sweep",
        help="run a sweep plan (deploy, load, benchmark, record each configuration)",
        description=(
            "Run the sweep described by PLAN.toml: each trial deploys a configuration, "
            "watches it load, benchmarks the ladder and records everything in a session "
            "folder. With --headless progress is printed line by line and the exit code "
            "says how it ended (0 finished, 1 failures, 3 paused after a crash, 130 "
            "interrupted)."
        ),
    )
    p.add_argument("plan", type=Path, help="the sweep plan (see examples/demo-sweep.toml)")
    p.add_argument(
        "--headless",
        action="store_true",
        help="no console: print progress lines (scripts, CI); without it the sweep runs "
        "in the console (`specconsole tui PLAN --start`)",
    )
    p.add_argument(
        "--dry-run",
        action="store_true",
        help="connect, print the diff every planned trial would make on the box, and change "
        "nothing (no session is created)",
    )
    add_session_option(p)
    add_on_crash_option(
        p,
        "override the plan's crash policy; headless 'pause' records the "
        "crash and exits with code 3 (resume continues)",
    )
    p.set_defaults(handler=_cmd_sweep)

    r = subparsers.add_parser(
        "resume",
        help="continue a session where it stopped (headless)",
        description=(
            "Continue the sweep recorded in SESSION: finished trials are kept, the strategy "
            "picks the next configuration, and a server already up with that configuration "
            "is reattached instead of restarted."
        ),
    )
    r.add_argument("session", type=Path, help="the session folder")
    r.add_argument(
        "--on-crash",
        choices=[c.value for c in CrashPolicy],
        default=None,
        help="override the crash policy for the rest of the sweep",
    )
    r.set_defaults(handler=_cmd_resume)

    s = subparsers.add_parser(
        "sessions", help="list session folders", description="List recorded sessions."
    )
    s.add_argument(
        "--dir",
        type=Path,
        default=None,
        help="folder holding sessions (default: the user data dir)",
    )
    s.set_defaults(handler=_cmd_sessions)


def load_plan_file(path: Path) -> SweepPlan:
    """Read and parse a plan file, resolving ``{python}`` and ``port = "auto"``; raises
    PlanError with the path."""
    from specconsole.core.plans.decoding import DecodeError, decode_text

    try:
        text = decode_text(path.read_bytes(), str(path))
    except OSError as exc:
        raise PlanError(f"cannot read the plan {path}: {exc.strerror or exc}") from None
    except DecodeError as exc:
        raise PlanError(str(exc)) from None
    try:
        plan = loads_plan(text)
    except PlanError as exc:
        raise PlanError(f"{path}: {exc}") from None
    for notice in plan.notices:  # an old key name: read, and said once here
        print(
            f"warning: {path}: {notice.field}: {notice.message} Fix: {notice.fix}", file=sys.stderr
        )
    from specconsole.controller.localplan import resolve_local_placeholders

    return resolve_local_placeholders(plan, plan_dir=path.parent)


def _cmd_sweep(args: argparse.Namespace) -> int:

    try:
        plan = load_plan_file(args.plan)
    except PlanError as exc:
        return error(str(exc))
    if not args.headless and not args.dry_run:
        return _in_console(args)
    from specconsole.controller.outcome import plan_problems
    from specconsole.controller.probe.preflight import local_report

    problems = plan_problems(plan)
    problems += [f"{f.check}: {f.message}" for f in local_report(plan).blocking]
    if problems:
        for problem in problems:
            print(f"specconsole: error: {args.plan}: {problem}", file=sys.stderr)
        return 1
    if args.dry_run:
        return _dry_run(plan)
    policy = CrashPolicy(args.on_crash) if args.on_crash else None
    from specconsole.session.lock import SessionLocked

    try:
        session = create_session(args.session, plan)
        lock = lock_session(session)
    except (SessionNotCreated, SessionLocked) as exc:
        return error(str(exc))
    from specconsole.commands.simgpus import provide_simulated_gpus
    from specconsole.headless.pool import sweep_headless

    provide_simulated_gpus(plan)  # the demo's box: this machine, its GPUs the simulator's
    try:
        return asyncio.run(sweep_headless(plan, session, policy=policy, out=sys.stdout))
    except KeyboardInterrupt:
        return 130
    finally:
        lock.release()


def _dry_run(plan: SweepPlan) -> int:
    from specconsole.commands.dryrun import dry_run
    from specconsole.core.ports import TransportError

    try:
        return asyncio.run(dry_run(plan, sys.stdout))
    except TransportError as exc:
        return error(f"dry run: {exc}")


def _in_console(args: argparse.Namespace) -> int:
    """Without --headless the sweep runs in the console: ``tui PLAN --start``."""
    from specconsole.commands import tui

    parser = argparse.ArgumentParser(prog="specconsole")
    tui.register(parser.add_subparsers(dest="command"))
    argv = ["tui", str(args.plan), "--start"]
    if args.session is not None:
        argv += ["--session", str(args.session)]
    if args.on_crash is not None:
        argv += ["--on-crash", args.on_crash]
    try:
        console_args = parser.parse_args(argv)
    except SystemExit:
        return error("the console is not available here; add --headless")
    return int(console_args.handler(console_args) or 0)


def _cmd_resume(args: argparse.Namespace) -> int:
    from specconsole.session.files import SessionError
    from specconsole.session.lock import SessionLocked
    from specconsole.session.store import Session

    try:
        session = Session.open(args.session)
        lock = lock_session(session)
    except (SessionError, SessionLocked) as exc:
        return error(str(exc))
    try:
        return _resume_locked(session, args.on_crash)
    finally:
        lock.release()


def prepare_resume(session: Session) -> tuple[SweepPlan, list[str], object]:
    """What ``resume`` does before it runs: move a torn last line of trials.jsonl aside,
    rebuild session.toml from the records when it is stale, and read the plan; returns (the
    plan, the notices to show, the saved crash policy). Raises only ``SessionError``,
    ``PlanError`` or ``OSError``, each naming the file and the fix (the fuzz suite checks)."""
    from specconsole.controller.localplan import resolve_local_placeholders

    notices = session.repair()
    notices += session.reconcile(session.load_trials(), session.raw_plan())
    plan = resolve_local_placeholders(session.load_plan(secrets_from_env=True))
    return plan, notices, session.meta_section().get("policy")


def _resume_locked(session: Session, on_crash: str | None) -> int:
    """Resume under the session lock: :func:`prepare_resume`, then run."""
    from specconsole.core.config.secrets import missing_values
    from specconsole.headless.pool import sweep_headless
    from specconsole.session.files import SessionError

    try:
        plan, notices, saved = prepare_resume(session)
    except (SessionError, PlanError, OSError) as exc:
        return error(str(exc))
    for notice in notices:  # the session's own files first (a damaged one, rebuilt)…
        print(f"specconsole: notice: {notice}", file=sys.stderr)
    if missing := missing_values(plan.base):  # …then what it needs from this shell
        return error(
            f"server.env: the session does not store the values of {', '.join(missing)}"
            " (secrets are never written to session files); "
            f"export {missing[0]}=... in this shell, then resume"
        )
    policy = CrashPolicy(on_crash) if on_crash else None
    if policy is None and saved in {c.value for c in CrashPolicy}:
        policy = CrashPolicy(saved)
    from specconsole.commands.simgpus import provide_simulated_gpus

    provide_simulated_gpus(plan)
    try:
        return asyncio.run(
            sweep_headless(plan, session, policy=policy, resume=True, out=sys.stdout)
        )
    except KeyboardInterrupt:
        return 130


def _cmd_sessions(args: argparse.Namespace) -> int:
    from specconsole.paths import sessions_dir
    from specconsole.session.listing import list_sessions

    parent = args.dir if args.dir is not None else sessions_dir()
    found = list_sessions(parent)
    if not found:
        print(f"no sessions in {parent}")
        return 0
    for s in found:
        when = (
            time.strftime("%Y-%m-%d %H:%M", time.localtime(s.updated_at)) if s.updated_at else "?"
        )
        print(f"{s.path}  {when}  {s.status:<18} {s.trials:>3} trials  {s.name}")
    return 0
