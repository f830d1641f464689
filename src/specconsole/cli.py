"""Command-line entry point: argument parsing and dispatch to subcommands.

Each subcommand lives in its own module under ``specconsole.commands`` and exposes
``register(subparsers)``; this module only wires them together. Heavy imports (Textual,
asyncssh, httpx) happen inside the subcommand that needs them, so ``--help`` and
``--version`` stay instant and work without the optional pieces.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence

from specconsole import __version__
from specconsole.startup import hold_collection, release_collection

COMMAND_MODULES: tuple[str, ...] = (
    "specconsole.commands.validate",
    "specconsole.commands.parselog",
    "specconsole.commands.bench",
    "specconsole.commands.sweep",
    "specconsole.commands.report",
    "specconsole.commands.best",
    "specconsole.commands.tui",
    "specconsole.commands.sim",
    "specconsole.commands.boxcmd",
    "specconsole.commands.movesecrets",
)
"""Modules that contribute subcommands, in the order ``--help`` lists them."""


def build_parser() -> argparse.ArgumentParser:
    """The full argument parser with every available subcommand registered."""
    parser = argparse.ArgumentParser(
        prog="specconsole",
        description=(
            "A terminal console that tunes speculative decoding (SGLang, vLLM, llama.cpp) "
            "on a remote GPU box: deploy a configuration, watch it load, benchmark a "
            "concurrency ladder, record everything, resume after crashes."
        ),
    )
    parser.add_argument("--version", action="version", version=f"specconsole {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module_name in COMMAND_MODULES:
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            if exc.name == module_name:
                continue  # subcommand not built yet
            raise
        module.register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the process exit code."""
    hold_collection()  # the console's start; the app releases it at its first frame
    try:
        return _dispatch(argv)
    finally:
        release_collection()  # whatever way out (an error, --help, the console closed)


def _dispatch(argv: Sequence[str] | None) -> int:
    """Parse ``argv`` and run its command (the console's when none is named)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    handler = getattr(args, "handler", None)
    if handler is None:
        if "specconsole.commands.tui" in sys.modules:
            args = parser.parse_args(["tui", *(argv or [])])
            handler = args.handler
        else:
            parser.print_help()
            return 0
    if not getattr(args, "opens_console", False):
        release_collection()  # a sweep or a report runs for long: it collects as usual
    try:
        return int(handler(args) or 0)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return _reader_gone()


EXIT_READER_GONE = 141
"""128 + SIGPIPE: what a shell tool's status is when its reader (``| head``) went away."""


def _reader_gone() -> int:
    """Stop quietly when the output's reader closed the pipe (``specconsole best | head``).

    Why: a traceback for ``| head`` is noise; stdout is pointed at /dev/null so the
    interpreter's last flush cannot raise again, and the status says what happened.
    """
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
    return EXIT_READER_GONE


if __name__ == "__main__":
    raise SystemExit(main())
