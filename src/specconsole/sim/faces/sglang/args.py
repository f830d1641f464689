"""SGLang's command line as the SGLang face reads it, release by release.

The simulator is deployed exactly like SGLang (the core renders the same flags for both), so
it must accept SGLang's flag names — the release's own spellings, from the SGLang engine's
release table reached through the registry — and refuse what that release's argparse refuses.
Unknown ``--flags`` are kept and reported rather than refused, because real configurations
carry many flags the simulator has no physics for. Resolving what was read is
:mod:`.resolve`'s. Pure: no I/O.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from specconsole.core.config.model import ServerConfig, key_limits, option_fields
from specconsole.core.config.releases import (
    has_feature,
    has_new_name,
    parse_version,
    removed_flags,
)
from specconsole.core.engine.protocol import Engine
from specconsole.core.engine.registry import get_engine
from specconsole.sim.arguments import ParsedArgs, SimArgError, split_unknown
from specconsole.sim.faults import add_fault_flags


def imitated_engine() -> Engine:
    """The engine the simulator imitates, as the registry has it: its flags, its releases."""
    return get_engine("sglang")


def server_limits() -> dict[str, int]:
    """The bounds of SGLang's integer keys, as its engine declares them."""
    return key_limits(imitated_engine().name)


class _RaisingParser(argparse.ArgumentParser):
    """An argparse parser that raises instead of printing usage and exiting."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise SimArgError(f"{self.prog}: error: {message}")


def _int_or_human(text: str) -> int:
    """SGLang accepts human-readable ints for some sizes (``32k``, ``1M``)."""
    t = text.strip().lower().replace("_", "")
    mult = 1
    if t and t[-1] in "km":
        mult = 1024 if t[-1] == "k" else 1024 * 1024
        t = t[:-1]
    try:
        return int(float(t) * mult)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid int value: {text!r}") from None


def _port(text: str) -> int:
    """``--port``: 0 (any free port) to 65535, as the socket accepts."""
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid int value: {text!r}") from None
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"port must be 0-65535, got {port}")
    return port


def _cuda_graph_flags(engine_version: str | None) -> list[str]:
    """``--cuda-graph-max-bs`` and its successors as release ``engine_version`` spells them
    (the imitated engine's release table); both names when unknown."""
    table = imitated_engine().releases
    (change,) = [c for c in table.changes if c.key == "cuda_graph_max_bs"]
    if engine_version is None:
        return [change.old, change.new]
    if not has_new_name(table, change, engine_version):
        return [change.old]
    removed = removed_flags(table, engine_version)
    return [change.new] + ([] if change.old in removed else [change.old])


_KIND_TYPES: dict[str, Callable[[str], Any]] = {"int": int, "float": float}
"""How argparse reads a key of the engine's declared kind (other kinds: text)."""

OWN_TYPES: dict[str, Callable[[str], Any]] = {"port": _port, "context_length": _int_or_human}
"""Keys SGLang's argparse reads beyond their declared kind (a port's range, ``32k``)."""

FLAG_DEFAULTS: dict[str, Any] = {"host": "127.0.0.1", "port": 30000, "tp_size": 1}
"""SGLang's defaults where the face needs one to run (unset otherwise: resolution decides)."""


def _declared_kind(key: str) -> str | None:
    field = option_fields(imitated_engine().name).get(key)
    return None if field is None else field.kind


def flag_type(key: str) -> Callable[[str], Any]:
    """How SGLang's argparse reads modelled key ``key``: its own type, else by the kind the
    engine declares for it."""
    return OWN_TYPES.get(key) or _KIND_TYPES.get(_declared_kind(key) or "", str)


ADAPTIVE_KEYS = frozenset({"speculative_adaptive", "speculative_adaptive_config"})
"""The adaptive mode's keys: flags of the releases that have it (its ``adaptive`` feature)."""


def modelled_flags() -> dict[str, list[str]]:
    """The SGLang engine's modelled flags, reached through the registry: its key -> the flag
    and its aliases, in its table's order (``--tp`` too: SGLang's argparse takes it as the
    abbreviation of ``--tp-size``)."""
    out: dict[str, list[str]] = {}
    for flag, key in imitated_engine().modelled_flags.items():
        out.setdefault(key, []).append(flag)
    return out


def sglang_parser(
    prog: str = "python -m specconsole.sim", engine_version: str | None = None
) -> argparse.ArgumentParser:
    """Parser for the SGLang flags the simulator models — the SGLang engine's modelled flags
    (:func:`modelled_flags`), then those the face has physics for beyond them — plus its own
    ``--sim-*`` flags.

    With ``engine_version`` it accepts that release's flag names only (the rows of
    the imitated engine's release table); without, every release's."""
    p = _RaisingParser(
        prog=prog,
        add_help=True,
        allow_abbrev=False,
        description="Simulated SGLang server (specconsole).",
    )
    a = p.add_argument
    adaptive = has_feature(imitated_engine().releases, "adaptive", engine_version) is not False
    for key, names in modelled_flags().items():
        if key == "cuda_graph_max_bs":
            names = _cuda_graph_flags(engine_version)
        elif key in ADAPTIVE_KEYS and not adaptive:
            continue  # a later release's flag: this one refuses it (parse_argv)
        if _declared_kind(key) == "bool":  # a switch: takes no value
            a(*names, dest=key, action="store_true")
        else:
            a(*names, dest=key, type=flag_type(key), default=FLAG_DEFAULTS.get(key))
        if key == "cuda_graph_max_bs" and "--cuda-graph-max-bs-decode" in names:
            a("--cuda-graph-max-bs-prefill", type=int, default=None)
    # SGLang's flags with physics beyond a configuration's fields (the face's own).
    a("--tokenizer-path", default=None)
    a("--served-model-name", default=None)
    a("--dp-size", type=int, default=1)
    a("--max-total-tokens", type=int, default=None)
    a("--chunked-prefill-size", type=int, default=None)
    a("--max-prefill-tokens", type=int, default=16384)
    a("--disable-cuda-graph", action="store_true")
    a("--speculative-accept-threshold-single", type=float, default=1.0)
    a("--speculative-accept-threshold-acc", type=float, default=1.0)
    a("--decode-log-interval", type=int, default=40)
    a("--enable-metrics", action="store_true")
    a("--log-level", default="info")
    a("--random-seed", type=int, default=None)
    a("--trust-remote-code", action="store_true")
    a("--api-key", default=None)
    sim = p.add_argument_group("simulator")
    sim.add_argument(
        "--sim-engine-version",
        default=None,
        metavar="V",
        help="play SGLang release V: accept exactly its flags, report it in /server_info",
    )
    sim.add_argument(
        "--sim-profile",
        default=None,
        help="profile TOML (default: the packaged Qwen3.5-122B-A10B EAGLE-3 box)",
    )
    sim.add_argument(
        "--sim-load-seconds",
        type=float,
        default=None,
        help="total load time; phases are spread proportionally",
    )
    sim.add_argument(
        "--sim-crash-after-requests",
        type=int,
        default=None,
        help="crash the scheduler after N requests finished",
    )
    sim.add_argument(
        "--sim-hang-during-load",
        action="store_true",
        help="stop loading half-way and never become ready",
    )
    sim.add_argument(
        "--sim-stall-after-tokens",
        type=int,
        default=None,
        help="every stream stops producing tokens after N tokens (never finishes)",
    )
    sim.add_argument(
        "--sim-slow-start",
        type=float,
        default=0.0,
        help="extra seconds of silence before the first log line",
    )
    sim.add_argument(
        "--sim-unthrottled",
        action="store_true",
        help="no real-time pacing: run the scheduler as fast as possible",
    )
    add_fault_flags(sim)
    return p


def parse_argv(argv: Sequence[str]) -> ParsedArgs:
    """Parse a SGLang-style command line; unknown ``--flags`` are collected, not refused."""
    args = list(argv)
    version = _engine_version(args)
    removed = removed_flags(imitated_engine().releases, version)
    for tok in args:
        name = tok.split("=", 1)[0]
        if name in removed:
            # What the release's own argparse says (allow_abbrev): the old name is a prefix of
            # its successors.
            raise SimArgError(
                f"launch_server.py: error: ambiguous option: {name} could match "
                f"{name}-decode, {name}-prefill"
            )
        if version is not None and (name in _not_yet(version) or name in _later(version)):
            raise SimArgError(f"launch_server.py: error: unrecognized arguments: {name}")
    ns, unknown = sglang_parser(engine_version=version).parse_known_args(args)
    return ParsedArgs(values=vars(ns), unknown=split_unknown(unknown))


def _later(version: str) -> set[str]:
    """Flags of features release ``version`` does not have yet."""
    if has_feature(imitated_engine().releases, "adaptive", version) is False:
        return {f for key, flags in modelled_flags().items() if key in ADAPTIVE_KEYS for f in flags}
    return set()


def _not_yet(version: str) -> set[str]:
    """Flags of later releases that release ``version`` does not know yet."""
    out: set[str] = set()
    table = imitated_engine().releases
    for change in table.changes:
        if not has_new_name(table, change, version):
            new = change.new.split("=", 1)[0]
            out.add(new)
            if new.endswith("-decode"):
                out.add(new.removesuffix("-decode") + "-prefill")
    return out


def _engine_version(argv: Sequence[str]) -> str | None:
    """``--sim-engine-version V`` (or ``=V``) from an argv, before the parser is built."""
    for i, tok in enumerate(argv):
        if tok == "--sim-engine-version" and i + 1 < len(argv):
            version = argv[i + 1]
        elif tok.startswith("--sim-engine-version="):
            version = tok.split("=", 1)[1]
        else:
            continue
        try:
            parse_version(version)
        except ValueError:
            raise SimArgError(
                f"--sim-engine-version: {version!r} is not a release number (e.g. 0.5.23)"
            ) from None
        return version
    return None


def argv_from_server_config(config: ServerConfig) -> list[str]:
    """The SGLang flags a :class:`ServerConfig` stands for (no launcher), in field order:
    exactly what the console deploys (the imitated engine's ``render_flags``)."""
    return imitated_engine().render_flags(config, [])


def in_context(
    parsed: ParsedArgs, env: Mapping[str, str], read: Callable[[str], str | None]
) -> ParsedArgs:
    """``parsed`` with what SGLang reads besides its flags: ``SGLANG_SIMULATE_ACC_LEN`` /
    ``_METHOD`` from the environment (an ``EnvFloat``: a bad value is SGLang's ValueError),
    and the adaptive config's text when the mode is on (SGLang opens the file while it
    resolves its arguments; ``read(path)`` None: it cannot)."""
    values = dict(parsed.values)
    length = env.get("SGLANG_SIMULATE_ACC_LEN")
    if length is not None:
        try:
            values["simulate_acc_len"] = float(length)
        except ValueError:
            raise SimArgError(f"could not convert string to float: {length!r}") from None
    if "SGLANG_SIMULATE_ACC_METHOD" in env:
        values["simulate_acc_method"] = env["SGLANG_SIMULATE_ACC_METHOD"]
    path = values.get("speculative_adaptive_config")
    if values.get("speculative_adaptive") and path:
        text = read(str(path))
        if text is None:
            raise SimArgError(
                f"[Errno 2] No such file or directory: {str(path)!r}", "FileNotFoundError"
            )
        values["adaptive_config_text"] = text
    return ParsedArgs(values=values, unknown=parsed.unknown)
