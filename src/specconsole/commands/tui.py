"""``specconsole tui`` and ``specconsole demo``: open the console on a real box or on the
simulated one.

Why both live here: they differ only in where the plan comes from and whether the sweep starts
by itself. ``tui PLAN.toml|PROFILE.toml`` opens the console for the box the file names (an
``~/.ssh/config`` alias works) and waits for the user (``s`` starts the sweep, ``d`` deploys
the base configuration, ``b`` benchmarks what is there). ``demo`` runs the seed's sweep
(``examples/demo-sweep.toml``: steps 1-5 then 10, topk 1) against the simulator on this
machine through the same process backend and local transport, with the load time
compressed, pausing at the crash so ``r`` can resume; the simulated server is stopped when
the demo ends (a real box's server never is, unless the user asks).

This module parses arguments and files only; the console itself is ``specconsole.ui`` and is
imported when a command runs, so ``specconsole --help`` stays instant.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import os
import shutil
from pathlib import Path
from typing import Any

from specconsole.commands.common import (
    SessionNotCreated,
    add_on_crash_option,
    add_session_option,
    create_session,
    error,
    lock_session,
)
from specconsole.core.config.inputs import load_toml
from specconsole.core.plans.parse import parse_plan
from specconsole.core.plans.plan import CrashPolicy, PlanError, SweepPlan

THEME_CHOICES = ("dark", "light", "mono")
DEMO_PLAN = "demo-sweep.toml"
DEMO_PLANS: dict[str, str] = {"sglang": DEMO_PLAN, "vllm": "vllm-sweep.toml"}
"""The shipped demo plan per engine the simulator imitates (``demo --engine``): SGLang's seed
sweep, and the same question asked of vLLM."""
SCHEDULE_PLANS: dict[str, str] = {
    "sglang": "schedule-sweep.toml",
    "vllm": "vllm-schedule-sweep.toml",
}
"""The ending of the seed's story per engine (``demo --story schedule``): the best speculation
per concurrency, deployed as one configuration (SGLang's adaptive mode, vLLM's per-batch-size
K) and proven on the ladder."""
DEMO_STORIES: dict[str, dict[str, str]] = {"seed": DEMO_PLANS, "schedule": SCHEDULE_PLANS}
PROFILE_ENV = "SPECCONSOLE_PROFILE"
"""Environment variable naming the default plan/profile for a bare ``specconsole``."""


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``tui`` and ``demo``."""
    t = subparsers.add_parser(
        "tui",
        help="open the console for the box a plan or profile names (default command)",
        description=(
            "Open the full-screen console for the GPU box named by FILE (a sweep plan or a "
            "host profile: [host], [service], [server], optional [sweep], [bench], [ui]). "
            "Keys: s start/pause the sweep, d deploy, b benchmark only, e edit, r resume, "
            "? help, q quit (the server keeps running unless you choose to stop it)."
        ),
    )
    t.add_argument(
        "file",
        type=Path,
        nargs="?",
        default=None,
        help=f"plan or profile TOML (default: ${PROFILE_ENV}, see examples/seed-box.toml)",
    )
    _common(t)
    t.add_argument(
        "--start", action="store_true", help="start the sweep at once instead of waiting for s"
    )
    t.set_defaults(handler=_cmd_tui, opens_console=True)

    d = subparsers.add_parser(
        "demo",
        help="run the seed's sweep in the console against the simulated GPU box",
        description=(
            "Start the simulator as the 'remote GPU box' on this machine and run the seed's "
            "sweep (EAGLE-3, topk 1, steps 1-5 then 10) in the console with compressed load "
            "times; the crash at steps=10 stops at a banner and r resumes."
        ),
    )
    _common(d)
    d.add_argument(
        "--engine",
        choices=sorted(DEMO_PLANS),
        default="sglang",
        help="the engine the simulated box serves: SGLang's seed sweep (default) or vLLM's "
        "(num_speculative_tokens 1-8 on Llama-3.1-8B with EAGLE-3, examples/vllm-sweep.toml)",
    )
    d.add_argument(
        "--story",
        choices=sorted(DEMO_STORIES),
        default="seed",
        help="seed: the steps sweep and its crash (default); schedule: steps 1-5 and no "
        "speculation per level, then one schedule by batch size, proven on the ladder",
    )
    d.add_argument("--port", type=int, default=None, help="loopback port for the simulated server")
    d.add_argument(
        "--load-seconds",
        type=float,
        default=None,
        help="simulated load time per trial (default: the plan's, about 1 s)",
    )
    d.set_defaults(handler=_cmd_demo, opens_console=True)


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--theme",
        choices=THEME_CHOICES,
        default=None,
        help="colour theme (default: the file's [ui] theme, mono if NO_COLOR is set, else dark)",
    )
    add_session_option(p)
    add_on_crash_option(
        p, "after a crash: pause for a decision (r resumes) or continue automatically"
    )
    p.add_argument(
        "--no-mouse",
        action="store_true",
        help="leave the mouse to the terminal (tmux selection/copy); every action has a key",
    )


def read_console_file(path: Path, *, port: int | None = None) -> tuple[SweepPlan, str | None]:
    """Parse a plan/profile file for the console; returns the plan and its ``[ui] theme``.

    ``port`` resolves a ``port = "auto"`` plan to that port instead of a free one.

    The ``[ui]`` table is the console's own (plans are strict about unknown tables), so it is
    taken out before the plan is parsed. Raises PlanError naming the file and the key.
    """
    try:
        text = path.read_text()
    except OSError as exc:
        raise PlanError(f"cannot read {path}: {exc.strerror or exc}") from None
    document: dict[str, Any] = load_toml(text, str(path), PlanError)
    ui = document.pop("ui", {})
    if not isinstance(ui, dict):
        raise PlanError(f'{path}: [ui] must be a table, e.g. [ui] theme = "dark"')
    unknown = set(ui) - {"theme"}
    if unknown:
        raise PlanError(
            f"{path}: unknown key(s) in [ui]: {', '.join(sorted(unknown))}; the only one is theme"
        )
    theme = ui.get("theme")
    if theme is not None and theme not in THEME_CHOICES:
        raise PlanError(f"{path}: [ui] theme = {theme!r}; use one of {', '.join(THEME_CHOICES)}")
    try:
        plan = parse_plan(document, source=text)
    except PlanError as exc:
        raise PlanError(f"{path}: {exc}") from None
    from specconsole.controller.localplan import resolve_local_placeholders  # + port = "auto"

    return resolve_local_placeholders(plan, port=port, plan_dir=path.parent), theme


def _cmd_tui(args: argparse.Namespace) -> int:
    path: Path | None = args.file
    if path is None and os.environ.get(PROFILE_ENV):
        path = Path(os.environ[PROFILE_ENV])
    if path is None:
        return error(
            "which box? give a plan or profile: specconsole tui PLAN.toml "
            f"(or set ${PROFILE_ENV}); to try the console without a GPU box run "
            "specconsole demo"
        )
    if not path.exists() and path.suffix != ".toml" and len(path.parts) == 1:
        return error(  # an ssh alias where a plan was expected: the next command is import
            f"{path} is not a plan or profile file. If it is an ssh alias, start from the "
            f"unit the box runs: specconsole import {path} -o plan.toml, then specconsole "
            'tui plan.toml (docs/remote.md, "First contact with a box")'
        )
    try:
        plan, configured_theme = read_console_file(path)
    except PlanError as exc:
        return error(str(exc))
    policy = CrashPolicy(args.on_crash) if args.on_crash else plan.on_crash
    return run_console(
        plan,
        theme=args.theme or configured_theme,
        session_parent=args.session,
        policy=policy,
        autostart=args.start,
        stop_server_on_exit=False,
        mouse=not args.no_mouse,
    )


def demo_plan(
    port: int | None = None,
    load_seconds: float | None = None,
    engine: str = "sglang",
    story: str = "seed",
) -> SweepPlan:
    """The shipped demo plan of ``engine`` for ``story`` (:data:`DEMO_STORIES`), optionally on
    another port or with another load time."""
    from specconsole.paths import examples_dir

    plan, _theme = read_console_file(examples_dir() / DEMO_STORIES[story][engine], port=port)
    base = plan.base
    if port is not None and base.port != port:  # a plan with a fixed port
        base = dataclasses.replace(base, port=port)
    if load_seconds is not None:
        args = list(base.extra_args)
        if "--sim-load-seconds" in args:
            i = args.index("--sim-load-seconds")
            args[i + 1 : i + 2] = [str(load_seconds)]
        else:
            args += ["--sim-load-seconds", str(load_seconds)]
        base = dataclasses.replace(base, extra_args=tuple(args))
    return dataclasses.replace(plan, base=base)


def _cmd_demo(args: argparse.Namespace) -> int:
    from specconsole.sim.serverlibs import server_unavailable

    why = server_unavailable("specconsole demo")
    if why is not None:
        return error(why)
    try:
        plan = demo_plan(args.port, args.load_seconds, args.engine, args.story)
    except (PlanError, FileNotFoundError) as exc:
        return error(str(exc))
    policy = CrashPolicy(args.on_crash) if args.on_crash else CrashPolicy.PAUSE
    return run_console(
        plan,
        theme=args.theme,
        session_parent=args.session,
        policy=policy,
        autostart=True,
        stop_server_on_exit=True,
        mouse=not args.no_mouse,
        confirm_first_deploy=False,  # the demo's "box" is the simulator on this machine
    )


def run_console(
    plan: SweepPlan,
    *,
    theme: str | None,
    session_parent: Path | None,
    policy: CrashPolicy,
    autostart: bool,
    stop_server_on_exit: bool,
    mouse: bool = True,
    confirm_first_deploy: bool = True,
) -> int:
    """Create a session, wire the controller to the box and run the console until quit
    (the session's first deploy is shown as a diff and confirmed unless
    ``confirm_first_deploy`` is False)."""
    from specconsole.commands.simgpus import provide_simulated_gpus
    from specconsole.ui.theme import UnknownThemeError, choose_theme

    provide_simulated_gpus(plan)  # the demo's box: this machine, its GPUs the simulator's
    try:
        theme_name = choose_theme(theme)
    except UnknownThemeError as exc:
        return error(str(exc))
    from specconsole.session.lock import SessionLocked

    try:
        session = create_session(session_parent, plan)
        lock = lock_session(session)
    except (SessionNotCreated, SessionLocked) as exc:
        return error(str(exc))
    looked: list[bool] = []
    try:
        return asyncio.run(
            _run(
                plan,
                session,
                theme_name,
                policy,
                autostart,
                stop_server_on_exit,
                mouse,
                confirm_first_deploy,
                looked,
            )
        )
    except KeyboardInterrupt:
        return 130
    finally:
        lock.release()
        if looked:  # nothing deployed, nothing recorded: no idle folder is left behind
            shutil.rmtree(session.path, ignore_errors=True)


async def _run(
    plan: SweepPlan,
    session: Any,
    theme: str,
    policy: CrashPolicy,
    autostart: bool,
    stop_server_on_exit: bool,
    mouse: bool,
    confirm_first_deploy: bool,
    looked: list[bool],
) -> int:
    """Run the console; ``looked`` gets an entry when the session only looked (nothing was
    deployed or recorded), so the caller removes its folder once unlocked."""
    from specconsole.controller.console import ConsoleController
    from specconsole.core.machine.intents import StartSweep
    from specconsole.core.machine.state import ControllerState, Phase
    from specconsole.ui.app import make_app

    if plan.boxes:  # a pool ([[hosts]]): one lane per box, n switches the box shown
        from specconsole.controller.pool.box import PoolBox
        from specconsole.controller.pool.console import PoolConsole
        from specconsole.controller.pool.run import Pool

        pool = Pool(plan, session, policy=policy)
        console = PoolConsole(pool, autostart=autostart)
        # The pool does not ask before its first deploys yet (docs/console.md); quitting
        # after the finished sweep carries out [sweep] finally on every box.
        pool_app = make_app(
            console,
            theme=theme,
            run_controller=console.run,
            box=PoolBox(pool, console),
            confirm_first_deploy=False,
        )
        try:
            await pool_app.run_async(mouse=mouse)
        finally:
            await pool.close(stop_server=stop_server_on_exit)
        if pool_app.final_message:  # each box's finally outcome, or that a server is down
            print(pool_app.final_message)
        print(f"session: {session.path}")
        return 1 if pool_app.final_failed else 0
    # the controller is wired right after the console's first frame (controller.console);
    # the load in a process of its own: a busy console must not bend its figures
    controller = ConsoleController(
        plan, session, ControllerState(plan=plan, policy=policy), isolate_load=True
    )
    app = make_app(
        controller,
        theme=theme,
        run_controller=controller.run,
        box=controller,
        confirm_first_deploy=confirm_first_deploy,
        initial_intents=[StartSweep(plan=plan, policy=policy)] if autostart else [],
    )
    try:
        await app.run_async(mouse=mouse)
    finally:
        await controller.close(stop_server=stop_server_on_exit)
    from specconsole.controller.outcome import RESUMABLE_STATUSES, closing_meta, console_status

    status, code = console_status(
        controller.state, controller.halted, deliberate=not app.interrupted
    )
    final = controller.state
    untouched = not final.trials and final.deployed is None and final.trial is None
    if status == "idle" and untouched and not session.load_trials():
        looked.append(True)  # only looked: the folder would hold nothing of use
        print("nothing was deployed or recorded: no session folder is kept")
        return code
    with contextlib.suppress(Exception):  # a full disk may refuse even this
        session.write_meta(closing_meta(status))
    if app.final_message:  # what [sweep] finally left serving, or that the server is down
        print(app.final_message)
    print(f"session: {session.path} ({status})")
    if controller.state.phase is Phase.DONE:  # the finished sweep's winner, ready to paste
        from specconsole.present.figures.bestlaunch import launch_block

        if (block := launch_block(plan, controller.state.trials, session.path)) is not None:
            print(block[0])
            print(block[1], end="")
    if status in RESUMABLE_STATUSES:
        print(f"continue it with: specconsole resume {session.path}")
    if app.final_failed and code == 0:
        code = 1
    return code
