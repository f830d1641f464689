"""``validate`` and ``render``: the engine knowledge about a configuration, without a box.

Why: users want to check a configuration before a ~100 s load, see exactly what would be
deployed (argv, command line or systemd unit), and make sense of logs they already have
(``journalctl -u sglang > crash.log``). These commands are thin: reading files and printing
is all they add to :mod:`specconsole.core.config.model`, :mod:`~specconsole.core.config.validation`,
:mod:`~specconsole.core.config.render` and :mod:`~specconsole.core.logs`.

``render`` and ``validate`` read a file the same way and print errors through one function,
so ``render`` renders exactly what ``validate`` accepts (a plan: its base, or ``--trial N``).

Exit codes: 0 fine, 1 the configuration has errors (validate; render still prints the text,
then the same errors) or the log shows a fatal error (parse-log), 2 the input cannot be read
(missing file, not UTF-8, bad TOML, unknown key, out-of-range plan value).
"""

from __future__ import annotations

import argparse
import sys
import tomllib
from pathlib import Path
from typing import Any, TextIO

from specconsole.core.config.errors import ConfigError
from specconsole.core.config.inputs import check_nesting, too_deep_message
from specconsole.core.config.issues import Issue, Severity
from specconsole.core.config.model import (
    ServerConfig,
    config_from_table,
    config_to_table,
    replace_config,
)
from specconsole.core.config.validation import errors, normalized, validate
from specconsole.core.plans.decoding import DecodeError, decode_text
from specconsole.core.plans.launch import RENDER_FORMS, launch_text
from specconsole.core.plans.plan import StrategyKind, SweepPlan
from specconsole.core.plans.profile import Profile

MAX_PLAN_TRIALS = 500
"""validate checks at most this many trial configurations of a sweep plan."""


_VERSION_ARGS = ("--engine-version",)
_VERSION_KW: dict[str, Any] = {
    "metavar": "V",
    "default": None,
    "help": "the engine's release on the box (e.g. 0.5.23): use its flag names and rules "
    "(overrides [server] engine_version)",
}


def _with_version(config: ServerConfig, version: str | None) -> ServerConfig:
    """``config`` at ``--engine-version``'s release (refused, naming the option, when it is
    not one of the engine's release numbers: every render reads it as one)."""
    if version is None:
        return config
    from specconsole.core.plans.tables import not_a_release

    wrong = not_a_release(config.engine, version)
    if wrong is not None:
        raise _InputError(
            f"--engine-version {version!r} is not a {wrong[0]} release number. Fix: give the "
            f"release on the box, e.g. --engine-version {wrong[1]}, or leave the option out."
        )
    return replace_config(config, engine_version=version)


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``validate`` and ``render`` subcommands."""
    v = subparsers.add_parser(
        "validate",
        help="check a configuration (or profile/plan) TOML with its engine's rules",
        description=(
            "Check the [server] table of a configuration, profile or sweep plan with its "
            "engine's rules; every problem is printed with its field and fix. "
            "For a plan, every trial of the sweep grid is checked. Exit 1 on errors."
        ),
    )
    v.add_argument("file", help="TOML file with a [server] table ('-' for stdin)")
    v.add_argument("--quiet", "-q", action="store_true", help="print errors only")
    v.add_argument(*_VERSION_ARGS, **_VERSION_KW)  # type: ignore[arg-type]
    v.set_defaults(handler=_validate_cmd)

    r = subparsers.add_parser(
        "render",
        help="print exactly what would be deployed (argv, command line or systemd unit)",
        description="Render the [server] table of a TOML file as it would be deployed.",
    )
    r.add_argument("file", help="TOML file with a [server] table ('-' for stdin)")
    r.add_argument(
        "--as",
        dest="form",
        choices=RENDER_FORMS,
        default="command",
        help="argv (JSON list), command (shell-quoted line, with env; secrets sourced from "
        "their EnvironmentFile) or unit (systemd)",
    )
    r.add_argument(
        "--trial",
        type=int,
        default=None,
        metavar="N",
        help="for a sweep plan: render trial N of its grid (default: the plan's base)",
    )
    r.add_argument(*_VERSION_ARGS, **_VERSION_KW)  # type: ignore[arg-type]
    r.set_defaults(handler=_render_cmd)


# ---------------------------------------------------------------------------------------------
# Reading inputs
# ---------------------------------------------------------------------------------------------


class _InputError(Exception):
    """The input cannot be read; the message says what and how to fix it."""


def _read_text(path: str) -> str:
    """The file's text, read as bytes and decoded (an error names the byte offset)."""
    try:
        data = sys.stdin.buffer.read() if path == "-" else Path(path).read_bytes()
    except OSError as exc:
        raise _InputError(f"{path}: cannot read ({exc.strerror or exc}).") from None
    try:
        return decode_text(data, path)
    except DecodeError as exc:
        raise _InputError(str(exc)) from None


def _read_document(path: str) -> tuple[dict[str, Any], str]:
    text = _read_text(path)
    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        pass
    except RecursionError:
        raise _InputError(too_deep_message(path)) from None
    else:
        check_nesting(document, path, _InputError)
        return document, text
    # Not TOML: a systemd unit (or `systemctl cat` output) or a command line also names a
    # configuration; read it as the [server] table it stands for.
    from specconsole.core.launch.importplan import read_server_text

    try:
        _kind, config = read_server_text(text, path)
    except ConfigError as exc:
        raise _InputError(f"{path}: {exc}") from None
    return {"server": config_to_table(config)}, text


def _server_config(
    document: dict[str, Any], path: str, notes: list[Issue] | None = None
) -> ServerConfig:
    table = document.get("server")
    if not isinstance(table, dict):
        raise _InputError(
            f'{path}: no [server] table. Fix: add [server] with at least model_path = "...".'
        )
    try:
        return config_from_table(table, notes)
    except ConfigError as exc:
        raise _InputError(f"{path}: {exc}") from None


def _fail(message: str, err: TextIO) -> int:
    print(f"error: {message}", file=err)
    return 2


# ---------------------------------------------------------------------------------------------
# validate
# ---------------------------------------------------------------------------------------------


def _known_tables(document: dict[str, Any], path: str) -> None:
    """A file's top-level tables are a plan's (a misspelt ``[sweeep]`` is named, with the
    closest table, instead of being ignored)."""
    from specconsole.core.plans.parse import PLAN_TABLES
    from specconsole.core.plans.tables import check_keys

    try:
        check_keys(document, set(PLAN_TABLES), "the file")
    except ValueError as exc:
        raise _InputError(f"{path}: {exc}") from None


def _trial_configs(
    document: dict[str, Any], text: str, path: str, notes: list[Issue]
) -> list[tuple[str, ServerConfig]]:
    """(label, config) pairs to check: the [server] table, or each trial of a sweep plan;
    what reading it noticed (a key's former name) into ``notes``."""
    _known_tables(document, path)
    if "sweep" not in document:
        _profile(document, path)  # a [host] or [service] beside it is checked too
        return [("", _server_config(document, path, notes))]
    from specconsole.present.labels import config_label

    plan = _load_plan(text, path)
    notes.extend(plan.notices)
    grid = plan.grid()[:MAX_PLAN_TRIALS]
    if plan.strategy is StrategyKind.OPTIMIZE:
        grid = _optimize_points(grid, path)
    if len(grid) == 1:
        return [("", grid[0])]
    return [(config_label(config, plan.base), config) for config in grid]


def _optimize_points(grid: list[ServerConfig], path: str) -> list[ServerConfig]:
    """An ``optimize`` plan's points worth checking: the search skips invalid corners of its
    space by design, so they are counted, not reported as errors — unless none is valid."""
    valid = [config for config in grid if not errors(validate(config))]
    if valid and len(valid) < len(grid):
        print(
            f"{path}: {len(grid) - len(valid)} of {len(grid)} points of [sweep.axes] are "
            "invalid; optimize skips them (checking the valid ones)",
            file=sys.stderr,
        )
    return valid or grid


def _load_plan(text: str, path: str) -> SweepPlan:
    """A sweep plan with ``{python}`` and ``port = "auto"`` resolved as ``sweep`` would."""
    from specconsole.controller.localplan import resolve_local_placeholders
    from specconsole.core.plans.parse import loads_plan

    try:
        return resolve_local_placeholders(loads_plan(text))
    except ValueError as exc:  # PlanError, or a ConfigError from the [server] table
        raise _InputError(f"{path}: {exc}") from None


def _render_target(
    document: dict[str, Any], text: str, path: str, trial: int | None
) -> tuple[str, ServerConfig]:
    """What ``render`` shows: the [server] table; for a plan its base, or ``--trial N`` of its
    grid (a base the axes complete, e.g. steps only in [sweep.axes], shows trial 1)."""
    _known_tables(document, path)
    if "sweep" not in document:
        if trial is not None:
            raise _InputError(f"{path}: --trial needs a sweep plan (this file has no [sweep]).")
        return "", _server_config(document, path)
    from specconsole.present.labels import config_label

    plan = _load_plan(text, path)
    grid = plan.grid()
    if trial is not None:
        if not 1 <= trial <= len(grid):
            raise _InputError(
                f"{path}: --trial {trial} is not in the plan's grid; use 1 to {len(grid)}."
            )
        config = grid[trial - 1]
        return f"trial {trial} {config_label(config, plan.base)}", config
    base = plan.derive(plan.base)
    if not errors(validate(base)) or not grid:
        return "", base
    return f"trial 1 {config_label(grid[0], plan.base)} (the base alone is incomplete)", grid[0]


def _check(trials: list[tuple[str, ServerConfig]], out: TextIO, *, quiet: bool) -> tuple[int, int]:
    """Print every issue of every (label, config) with its field and fix — the one error
    path of ``validate`` and ``render``; returns (errors, warnings)."""
    n_errors = n_warnings = 0
    seen: set[tuple[str | None, str]] = set()
    for label, config in trials:
        issues = validate(config)
        if not quiet:
            # What SGLang will choose by itself (auto tree sizes...), unless already said.
            mentioned = {i.field for i in issues}
            issues += [
                i
                for i in normalized(config)[1]
                if i.severity is Severity.NOTICE and i.field not in mentioned
            ]
        for issue in issues:
            if quiet and not issue.blocking:
                continue
            key = (issue.field, issue.message)
            if key in seen and issue.severity is not Severity.ERROR:
                continue  # the same warning for every trial once is enough
            seen.add(key)
            _print_issue(issue, label, out)
            n_errors += issue.severity is Severity.ERROR
            n_warnings += issue.severity is Severity.WARNING
    return n_errors, n_warnings


def _print_issue(issue: Issue, label: str, out: TextIO) -> None:
    where = issue.field or "config"
    prefix = f"[{label}] " if label else ""
    print(f"{prefix}{issue.severity.value}: {where}: {issue.message}", file=out)
    print(f"{' ' * len(prefix)}  fix: {issue.fix}", file=out)


def _validate_cmd(args: argparse.Namespace) -> int:
    out, err = sys.stdout, sys.stderr
    notes: list[Issue] = []
    try:
        document, text = _read_document(args.file)
        trials = _trial_configs(document, text, args.file, notes)
        trials = [(label, _with_version(c, args.engine_version)) for label, c in trials]
    except _InputError as exc:
        return _fail(str(exc), err)
    for note in notes if not args.quiet else ():
        _print_issue(note, "", out)
    n_errors, n_warnings = _check(trials, out, quiet=args.quiet)
    n_warnings += 0 if args.quiet else len(notes)
    many = len(trials) > 1
    what = f"{len(trials)} configurations" if many else "configuration"
    verdict = ("have errors" if many else "has errors") if n_errors else "OK"
    print(f"{args.file}: {what} {verdict} ({n_errors} errors, {n_warnings} warnings)", file=out)
    return 1 if n_errors else 0


# ---------------------------------------------------------------------------------------------
# render
# ---------------------------------------------------------------------------------------------


def _render_cmd(args: argparse.Namespace) -> int:
    out, err = sys.stdout, sys.stderr
    try:
        document, text = _read_document(args.file)
        label, config = _render_target(document, text, args.file, args.trial)
        config = _with_version(config, args.engine_version)
    except _InputError as exc:
        return _fail(str(exc), err)
    if label:
        print(f"{args.file}: rendering {label}", file=err)
    name = document.get("name")
    try:  # the one launch renderer (``best`` prints the same bytes); secrets by reference
        profile = _profile(document, args.file)
        name = name if isinstance(name, str) and name else None
        out.write(launch_text(config, args.form, profile.service, name=name, host=profile.host))
    except _InputError as exc:
        return _fail(str(exc), err)
    except ConfigError as exc:
        return _fail(f"{args.file}: {exc}", err)
    n_errors, _ = _check([(label, config)], err, quiet=True)  # validate's errors, verbatim
    if n_errors:
        print(
            f"{args.file}: this configuration has {n_errors} error(s) (above) and would not "
            "be deployed.",
            file=err,
        )
        return 1
    return 0


def _profile(document: dict[str, Any], path: str) -> Profile:
    """The file's ``[host]`` and ``[service]`` (where a secret's ``EnvironmentFile=`` is, the
    unit's scope); the defaults for a table it lacks."""
    from specconsole.core.plans.profile import ProfileError, parse_profile

    try:
        return parse_profile(document)
    except (ProfileError, TypeError) as exc:
        raise _InputError(f"{path}: {exc}") from None
