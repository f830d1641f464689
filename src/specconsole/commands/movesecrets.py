"""``specconsole move-secrets TARGET``: take the secrets out of the user's own unit, on consent.

Why a command of its own (issue 33 #8): a hand-written ``Environment=HF_TOKEN=…`` or
``--api-key …`` sits in a world-readable unit and in every backup of it. specconsole warns
about it once (before a sweep's first deploy, and at ``import``) and never edits the user's
lines without asking: this command shows the change as a diff — the values redacted — and
makes it only on ``y`` (or ``--yes``): the values go to a 0600 ``EnvironmentFile=`` next to
the backups, the unit references it, every backup holding a value is rewritten the same way
(:mod:`specconsole.remote.unitsecrets`). The running server is not restarted.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from typing import Any

from specconsole.commands.boxcmd import add_box_target
from specconsole.commands.common import error


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``move-secrets``."""
    p = subparsers.add_parser(
        "move-secrets",
        help="move secrets written inline in the box's unit to a 0600 EnvironmentFile",
        description=(
            "Show, as a diff, how the unit's inline secrets (Environment=HF_TOKEN=..., "
            "--api-key ...) move to a 0600 EnvironmentFile= next to specconsole's backups, "
            "and make the change after you confirm. Backups that hold a value are rewritten "
            "the same way; the running server keeps its environment until restarted."
        ),
    )
    add_box_target(p)
    p.add_argument("--yes", action="store_true", help="make the change without asking")
    p.set_defaults(handler=_move_cmd)


def _move_cmd(args: argparse.Namespace) -> int:
    from specconsole.commands.boxcmd import profile_tables
    from specconsole.core.config.errors import ConfigError
    from specconsole.core.plans.profile import ProfileError, parse_profile
    from specconsole.core.ports import TransportError

    try:
        host, service = profile_tables(args.target, args.unit)
        profile = parse_profile({"host": host, "service": service})
    except (OSError, ValueError, ProfileError) as exc:
        return error(f"{args.target}: {exc}")
    try:
        return asyncio.run(_move(profile, yes=args.yes))
    except (TransportError, ConfigError) as exc:
        return error(f"move-secrets: {exc}")


def _confirm(question: str) -> bool:
    if not sys.stdin.isatty():
        return False
    try:
        return input(question).strip().lower() in ("y", "yes")
    except EOFError:
        return False


async def _move(profile: Any, *, yes: bool) -> int:
    from specconsole.remote import make_backend, make_transport
    from specconsole.remote.systemd import SystemdBackend
    from specconsole.remote.unitsecrets import apply_move, plan_move

    transport = make_transport(profile)
    try:
        backend = make_backend(profile, transport)
        assert isinstance(backend, SystemdBackend)
        move = await plan_move(backend)
        unit = profile.service.unit
        if move is None:
            print(f"{unit} holds no secret inline: nothing to move")
            return 0
        names = ", ".join(move.names)
        print(move.diff, end="")
        question = f"Move {names} from {unit} to {move.env_file} (mode 0600)? [y/N] "
        if not yes and not _confirm(question):
            print(
                f"nothing changed; re-run with --yes to move {names} (the diff above is the "
                "whole change)",
                file=sys.stderr,
            )
            return 1
        rewritten = await apply_move(backend, move)
        print(
            f"moved {names} to {move.env_file} (0600); {unit} references it"
            + (f"; {len(rewritten)} backup(s) rewritten the same way" if rewritten else "")
            + f". The running server keeps its environment until restarted "
            f"(systemctl restart {unit})."
        )
        return 0
    finally:
        await transport.close()
