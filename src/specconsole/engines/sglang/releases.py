"""Which SGLang release runs on the box, and how its command line differs from the others'.

Why it exists: flags change between releases, and the newest release refuses what an older one
needed. Read from the real wheels (``tests/oracle``): SGLang 0.5.9 accepts
``--cuda-graph-max-bs``; 0.5.14 has ``--cuda-graph-max-bs-decode`` /
``--cuda-graph-max-bs-prefill`` and keeps the old name only as a deprecated alias; 0.5.23 has
dropped it, so ``--cuda-graph-max-bs`` is an *ambiguous prefix* for its argparse and the server
refuses to start. The ``[server]`` keys stay stable for users (``cuda_graph_max_bs``); this
module says which flag spells each key for a given release, and which words of a command line a
release no longer accepts. Rendering, validation and the simulator (``--sim-engine-version``)
all ask it through the engine (:data:`TABLE`, read by :mod:`specconsole.core.config.releases`);
every row is checked against the release's own source by the oracle tests.

A version is SGLang's ``__version__`` text (``0.5.23``, ``0.5.15.post1``, ``0.5.10rc0``);
``None`` means unknown: the renderer then uses the names of :data:`DEFAULT_VERSION`.
"""

from __future__ import annotations

from specconsole.core.config import releases as _r
from specconsole.core.config.releases import FlagChange, ReleaseTable, parse_version

__all__ = [
    "DEFAULT_VERSION",
    "FEATURES_SINCE",
    "FLAG_CHANGES",
    "KNOWN_RELEASES",
    "TABLE",
    "FlagChange",
    "detect_command",
    "flag_for",
    "has_new_name",
    "parse_detected",
    "parse_version",
    "removed_flags",
    "rule_applies",
]

FLAG_CHANGES: tuple[FlagChange, ...] = (
    FlagChange(
        key="cuda_graph_max_bs",
        old="--cuda-graph-max-bs",
        new="--cuda-graph-max-bs-decode",
        since="0.5.14",
        removed="0.5.23",
        note="split into --cuda-graph-max-bs-decode / --cuda-graph-max-bs-prefill",
    ),
    FlagChange(
        key="",
        old="--disable-cuda-graph",
        new="--cuda-graph-backend-decode=disabled",
        since="0.5.14",
        note="deprecated alias of --cuda-graph-backend-{decode,prefill}=disabled",
    ),
)
"""Flag changes by release, each row tested against the real wheels (tests/oracle)."""

RULES_UNTIL: dict[str, str] = {
    "pp_speculative": "0.5.23",
}
"""SGLang checks that later releases dropped: rule -> first checked release without it.
``pp_speculative``: up to 0.5.2x ``assert ... "Pipeline parallelism is not compatible with
overlap schedule, speculative decoding"``; 0.5.23 only asserts the overlap schedule is off."""

KNOWN_RELEASES: tuple[str, ...] = ("0.5.9", "0.5.14", "0.5.23")
"""Releases the oracle tests read (tests/oracle/sglang-versions.txt): the ones we vouch for."""

DEFAULT_VERSION = "0.5.9"
"""Names used when the release is unknown: the oldest checked spelling, which every release up
to the one that removes it still accepts (the detected version replaces it before a deploy)."""

FEATURES_SINCE: dict[str, str] = {
    "adaptive": "0.5.11",
    "adaptive_by_batch": "0.5.13",
    "adaptive_zero_step": "0.5.14",
    "simulated_accept_matches_mean": "0.5.11",
}
"""What later releases added (read from their wheels: 0.5.10 has no adaptive mode; 0.5.11 and
0.5.12 adapt one candidate list to the acceptance; 0.5.13 keys candidates by batch size;
0.5.14 takes a 0 candidate): ``adaptive`` is ``--speculative-adaptive`` and its config file,
``adaptive_by_batch`` candidate steps per batch-size bucket, ``adaptive_zero_step`` a bucket
without a draft (``engines.sglang.adaptive``); ``simulated_accept_matches_mean``: from 0.5.11
``SGLANG_SIMULATE_ACC_METHOD`` defaults to ``match-expected`` (0.5.10: ``multinomial``)."""

TABLE = ReleaseTable(
    changes=FLAG_CHANGES,
    known=KNOWN_RELEASES,
    default_version=DEFAULT_VERSION,
    rules_until=RULES_UNTIL,
    features_since=FEATURES_SINCE,
)
"""SGLang's releases as the core's release mechanics read them."""


def rule_applies(rule: str, version: str | None) -> bool:
    """Whether release ``version`` (unknown: assume it does) still enforces ``rule``."""
    return _r.rule_applies(TABLE, rule, version)


def has_new_name(change: FlagChange, version: str | None) -> bool:
    """Whether release ``version`` (unknown: :data:`DEFAULT_VERSION`) has ``change.new``."""
    return _r.has_new_name(TABLE, change, version)


def flag_for(key: str, default: str, version: str | None) -> str:
    """The flag that spells ``[server]`` key ``key`` for ``version`` (``default`` if unchanged)."""
    return _r.flag_for(TABLE, key, default, version)


def removed_flags(version: str | None) -> dict[str, FlagChange]:
    """Flags release ``version`` no longer accepts at all: old name -> the change."""
    return _r.removed_flags(TABLE, version)


def detect_command(python: str = "python3") -> list[str]:
    """The argv that prints the box's SGLang version through the launcher's interpreter."""
    return [python, "-c", "import sglang; print(sglang.__version__)"]


def parse_detected(output: str) -> str | None:
    """The version from :func:`detect_command`'s output or ``/server_info``'s ``version``;
    ``None`` when it is not a release number (an import error, an empty reply)."""
    return _r.parse_release(output)
