"""``parse-log``: a saved server log or journalctl output as events, without a box.

Why: users want to make sense of logs they already have (``journalctl -u sglang >
crash.log``): the same incremental parser the controller runs over a live journal
(:mod:`specconsole.core.logs`) reads a file or stdin in bounded chunks and prints one JSON
event per line, then a summary (phases reached, capacity, ready or the fatal cause).

Exit codes: 0 no fatal error, 1 the log shows one, 2 the file cannot be read.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import TextIO

from specconsole.core.engine.registry import engine_names


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``parse-log`` subcommand."""
    p = subparsers.add_parser(
        "parse-log",
        help="turn a saved server log or journalctl output into events (JSON lines)",
        description=(
            "Read a server's log (plain, or journalctl -o short / short-iso / cat / json) "
            "and print one JSON event per line, then a one-line summary: phases reached, "
            "capacity, ready or the fatal cause. Exit 1 when the log shows a fatal error."
        ),
    )
    p.add_argument("file", nargs="?", default="-", help="log file ('-' or nothing for stdin)")
    p.add_argument("--engine", choices=engine_names(), default=None, help="default: detect")
    p.add_argument("--summary-only", action="store_true", help="print only the summary line")
    p.set_defaults(handler=_parse_log_cmd)


def _parse_log_cmd(args: argparse.Namespace) -> int:
    # the parser and every engine's grammar: loaded when the command runs, not by the
    # command line's parser that every other command (the console's included) builds
    from specconsole.core.logs.load_summary import LoadSummary, summarize
    from specconsole.core.logs.parser import LogParser

    out, err = sys.stdout, sys.stderr
    parser = LogParser(engine=args.engine or None)
    summary = LoadSummary()
    try:
        if args.file == "-":
            stream: TextIO = sys.stdin
            close = False
        else:
            stream = open(args.file, encoding="utf-8", errors="replace")  # noqa: SIM115
            close = True
    except OSError as exc:
        print(f"error: {args.file}: cannot read ({exc.strerror or exc}).", file=err)
        return 2
    try:
        while True:
            chunk = stream.read(1 << 16)
            if not chunk:
                break
            batch = parser.feed_chunk(chunk)
            summary = summarize(batch, summary)  # folded as we go: logs can be large
            if not args.summary_only:
                for event in batch:
                    print(json.dumps(event.to_dict()), file=out)
        tail = parser.flush()
        summary = summarize(tail, summary)
        if not args.summary_only:
            for event in tail:
                print(json.dumps(event.to_dict()), file=out)
    finally:
        if close:
            stream.close()
    print(json.dumps(summary.to_dict()), file=out)
    print(summary.one_line(), file=err)
    return 1 if summary.fatal is not None else 0
