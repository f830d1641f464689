"""``import`` and ``rollback``: start from the box's own service, and put it back.

Why: a sweep should start from what already runs (``import`` reads the unit with
``systemctl cat`` and writes a plan whose base is exactly that), and a sweep that ends on a
crash leaves the server down — ``rollback SESSION`` restores the unit that was there before
the last deploy (``--original``: the one before specconsole's first deploy), starts it and
waits until it serves, naming the configuration that now runs and which trial (if any) it
was. Thin: the parsing is :mod:`specconsole.core.launch.importplan`'s, the rollback
:mod:`specconsole.controller.restore`'s, the box work the backend's.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from specconsole.commands.bounded import bounded_number, output_file_problem
from specconsole.commands.common import error
from specconsole.core.config.bounds import Bound

if TYPE_CHECKING:
    from specconsole.remote.unitsource import UnitSource

WAIT_BOUND = Bound(86_400.0, example="900")
"""``rollback --wait``: seconds, above 0 (a negative wait restored, then reported failure)."""


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``import`` and ``rollback`` subcommands."""
    i = subparsers.add_parser(
        "import",
        help="write a plan whose base is the systemd unit running on the box today",
        description=(
            "Read the unit on the box (systemctl cat, drop-ins included), parse its ExecStart "
            "and Environment into [server], and write a commented plan that reaches the box "
            "again. Secret values stay in the unit and are not copied."
        ),
    )
    add_box_target(i)
    i.add_argument("-o", "--output", default="-", help="plan file to write ('-': stdout)")
    i.set_defaults(handler=_import_cmd)

    r = subparsers.add_parser(
        "rollback",
        help="restore the box's unit from before the session's last deploy and start it",
        description=(
            "Put back the newest backup of the deployed unit (or, with --original, the one "
            "from before specconsole's first deploy), start the service and wait until it "
            "answers /health."
        ),
    )
    r.add_argument("session", type=Path, help="the session folder")
    r.add_argument("--original", action="store_true", help="restore the very first backup")
    r.add_argument(
        "--wait",
        type=bounded_number(WAIT_BOUND, "--wait"),
        default=900.0,
        help="seconds to wait for /health (default 900)",
    )
    r.add_argument(
        "--box", metavar="NAME", help="the box to restore, for a session run on a pool ([[hosts]])"
    )
    r.set_defaults(handler=_rollback_cmd)


def add_box_target(parser: argparse.ArgumentParser) -> None:
    """``TARGET [--unit UNIT]``: the box's unit, named by an ssh alias or a profile file."""
    parser.add_argument("target", help="an ssh alias/hostname, or a profile/plan TOML file")
    parser.add_argument(
        "--unit",
        default=None,
        help="the unit (default: the profile's, else ENGINE.service for the file's [server] "
        "engine or the default engine)",
    )


def profile_tables(target: str, unit: str | None) -> tuple[dict[str, Any], dict[str, Any]]:
    """([host], [service]) tables for ``target``: a TOML file's, or an ssh alias."""
    from specconsole.core.config.inputs import load_toml
    from specconsole.core.plans.decoding import decode_text
    from specconsole.core.plans.profile import default_unit

    path = Path(target)
    server: Any = None
    if path.is_file():
        document = load_toml(decode_text(path.read_bytes(), target), target, ValueError)
        host = dict(document.get("host", {}))
        service = dict(document.get("service", {}))
        server = document.get("server")
    else:
        host = {"transport": "ssh", "alias": target}
        service = {}
    service["kind"] = "systemd"
    engine = server.get("engine") if isinstance(server, dict) else None
    service["unit"] = (
        unit or service.get("unit") or default_unit(engine if isinstance(engine, str) else None)
    )
    return host, service


def _import_cmd(args: argparse.Namespace) -> int:
    from specconsole.core.config.errors import ConfigError
    from specconsole.core.launch.importplan import plan_from_unit
    from specconsole.core.plans.profile import ProfileError, parse_profile
    from specconsole.core.ports import TransportError

    if args.output != "-" and (problem := output_file_problem(args.output, "-o", "plan.toml")):
        return error(problem)
    try:
        host, service = profile_tables(args.target, args.unit)
        profile = parse_profile({"host": host, "service": service})
    except (OSError, ValueError, ProfileError) as exc:
        return error(f"{args.target}: {exc}")
    try:
        unit = asyncio.run(_read_unit(profile))
    except TransportError as exc:
        return error(str(exc))
    if unit is None or unit.text is None:
        return error(
            f"{profile.service.unit} is not installed on {args.target}"
            " (systemctl cat found nothing); check the unit name with --unit"
        )
    try:
        text = plan_from_unit(
            unit.text,
            host=host,
            service=service,
            source=f"{profile.service.unit} on {args.target}",
            secret_env=profile.service.secret_env,
            bench=bench_comment(),
            context=unit.context,
        )
    except ConfigError as exc:
        return error(f"{profile.service.unit}: {exc}")
    _warn_inline_secrets(unit.cat.main or "", args.target, profile)
    if args.output == "-":
        sys.stdout.write(text)
    else:
        try:
            Path(args.output).write_text(text)
        except OSError as exc:
            return error(f"-o {args.output}: cannot write ({exc.strerror or exc})")
        print(f"wrote {args.output}: base = {profile.service.unit} as it runs today")
    return 0


def _warn_inline_secrets(unit_text: str, target: str, profile: Any) -> None:
    """Say once, on stderr, that the unit holds secrets inline (never moved without asking)."""
    from specconsole.core.launch.unit_secrets import inline_secrets

    found = inline_secrets(unit_text, profile.service.secret_env)
    if found:
        names = ", ".join(dict.fromkeys(secret.name for secret in found))
        unit = profile.service.unit
        print(
            f"specconsole: warning: {unit} holds {names} inline: the unit file is "
            "world-readable and each deploy's backup copies it. "
            f"`specconsole move-secrets {target}"
            + ("" if unit == _default_unit() else f" --unit {unit}")
            + "` moves it to a 0600 EnvironmentFile (it shows the diff and asks first).",
            file=sys.stderr,
        )


def _default_unit() -> str:
    from specconsole.core.plans.profile import default_unit

    return default_unit()


def bench_comment() -> list[str]:
    """The imported plan's commented ``[bench]``: the default ladder and what it costs a
    production box (every request is real load on the server its users share)."""
    from specconsole.core.ports import BenchSpec, default_requests_per_level

    spec = BenchSpec()
    requests = sum(default_requests_per_level(c) + spec.warmup_requests for c in spec.ladder)
    ladder = ", ".join(map(str, spec.ladder))
    return [
        "# Without [bench], each trial restarts the server (its whole load time), then sends",
        f"# {requests:,} requests at concurrency {ladder} ({spec.input_len} prompt + "
        f"{spec.output_len} output",
        f"# tokens each, {requests * spec.output_len:,} output tokens in all): real load on a "
        "box that serves users.",
        "# Measure less there, e.g. (docs/benchmark.md):",
        "# [bench]",
        "# ladder = [1, 8]",
        "# requests_per_level = 8",
        "# output_len = 128",
    ]


async def _read_unit(profile: Any) -> UnitSource | None:
    """The unit on the box as systemd reads it (its files, specifiers, environment files)."""
    from specconsole.remote import make_backend, make_transport
    from specconsole.remote.systemd import SystemdBackend

    transport = make_transport(profile)
    try:
        backend = make_backend(profile, transport)
        assert isinstance(backend, SystemdBackend)
        return await backend.read_unit()
    finally:
        await transport.close()


def _rollback_cmd(args: argparse.Namespace) -> int:
    from specconsole.controller.restore import RollbackFailed, rollback_box
    from specconsole.core.plans.plan import PlanError
    from specconsole.core.ports import TransportError
    from specconsole.session.files import SessionError
    from specconsole.session.store import Session

    try:
        session = Session.open(args.session)
        plan = session.load_plan()
        trials = session.load_trials()
    except (SessionError, PlanError) as exc:
        return error(str(exc))
    try:
        plan = _rollback_target(plan, args.box)
    except ValueError as exc:
        return error(f"rollback: {exc}")
    if args.box is not None:  # a pool: the message names this box's trials
        trials = [t for t in trials if t.box == args.box]
    try:
        message = asyncio.run(rollback_box(plan, trials, original=args.original, wait=args.wait))
    except (TransportError, RollbackFailed) as exc:
        return error(f"rollback: {exc}")
    print(message)
    return 0


def _rollback_target(plan: Any, box: str | None) -> Any:
    """The one-box plan ``rollback`` acts on: the session's own, or for a pool the named
    box's (a pool session without ``--box`` is refused rather than guessed)."""
    names = [b.name for b in plan.boxes]
    if not names:
        if box is not None:
            raise ValueError(f"--box {box}: this session ran on one box, not a pool; drop --box")
        return plan
    if box is None:
        raise ValueError(
            f"this session ran on a pool ({', '.join(names)}): name the box to restore with "
            "--box NAME"
        )
    if box not in names:
        raise ValueError(f"--box {box}: not a box of this session; use one of {', '.join(names)}")
    from specconsole.controller.pool.run import box_plan

    return box_plan(plan, plan.boxes[names.index(box)])
