"""SGLang's statistics lines (``Decode batch``, ``Prefill batch``), read by key.

Why its own module: these are the bulk of a busy log and the figures a trial is measured
by; they change shape across releases (keys come and go, the ``[N]`` iteration counter
appeared and went), so they are parsed *by key* (:func:`~specconsole.core.logs.fields.key_values`),
and the canonical form of v0.5.9 and later alone takes a one-regex fast path whose events are
built positionally (:mod:`.logbuild`).
"""

from __future__ import annotations

import re

from specconsole.core.logs.events import DecodeStats, LogEvent, PrefillStats
from specconsole.core.logs.fields import BOOL, FLOAT, INT, key_values, stats_rest
from specconsole.core.logs.state import ParseState

from .logbuild import decode_event, prefill_event

__all__ = ["DECODE_KEYS", "PREFILL_KEYS", "decode_fast", "on_decode", "on_prefill"]

DECODE_KEYS: dict[str, tuple[str, int]] = {
    "#running-req": ("running_req", INT),
    "#token": ("num_tokens", INT),
    "#full token": ("num_tokens", INT),
    "token usage": ("token_usage", FLOAT),
    "full token usage": ("token_usage", FLOAT),
    "accept len": ("accept_len", FLOAT),
    "accept rate": ("accept_rate", FLOAT),
    "cuda graph": ("cuda_graph", BOOL),
    "gen throughput (token/s)": ("gen_throughput", FLOAT),
    "#queue-req": ("queue_req", INT),
}
PREFILL_KEYS: dict[str, tuple[str, int]] = {
    "#new-seq": ("new_seq", INT),
    "#new-token": ("new_token", INT),
    "#cached-token": ("cached_token", INT),
    "token usage": ("token_usage", FLOAT),
    "full token usage": ("token_usage", FLOAT),
    "#running-req": ("running_req", INT),
    "#queue-req": ("queue_req", INT),
    "#pending-token": ("pending_token", INT),
    "cuda graph": ("cuda_graph", BOOL),
    "input throughput (token/s)": ("input_throughput", FLOAT),
}


_DECODE_CANONICAL = re.compile(
    r"#running-req: (\d+), #token: (\d+), token usage: ([\d.]+), "
    r"(?:accept len: ([\d.]+), )?(?:accept rate: ([\d.]+), )?"
    r"cuda graph: (True|False), gen throughput \(token/s\): ([\d.]+), #queue-req: (\d+)[, ]*\Z"
)
"""The Decode line as SGLang v0.5.9 and later print it (plain KV pool, with or without spec).

Only a fast path: anything else (older releases, hybrid pools, extra keys, reordering) falls
back to :func:`~specconsole.core.logs.fields.key_values`, which parses by key and gives the
same result for this form."""


def decode_fast(rest: str) -> dict[str, object] | None:
    """Decode statistics from the canonical form in one regex match, else ``None``."""
    m = _DECODE_CANONICAL.match(rest)
    if m is None:
        return None
    g = m.groups()
    try:
        return {
            "running_req": int(g[0]),
            "num_tokens": int(g[1]),
            "token_usage": float(g[2]),
            "accept_len": float(g[3]) if g[3] is not None else None,
            "accept_rate": float(g[4]) if g[4] is not None else None,
            "cuda_graph": g[5] == "True",
            "gen_throughput": float(g[6]),
            "queue_req": int(g[7]),
        }
    except ValueError:  # e.g. "1.2.3"
        return None


def on_decode(s: ParseState, body: str, ts: str | None, rank: str | None) -> list[LogEvent]:
    if not body.startswith("Decode batch"):
        return []
    if body[12:14] == ", ":  # the common (v0.5.5+) form, without the iteration counter
        m = _DECODE_CANONICAL.match(body, 14)
        event = None if m is None else decode_event(m, ts, rank)
        if event is not None:
            return [event]
        kv = key_values(body[14:].rstrip(", "), DECODE_KEYS)
    else:
        split = stats_rest(body, 12)
        if split is None:
            return []
        kv = key_values(split[1], DECODE_KEYS)
        kv["iteration"] = split[0]
    return [DecodeStats(timestamp=ts, rank=rank, **kv)]  # type: ignore[arg-type]


_PREFILL_CANONICAL = re.compile(
    r"#new-seq: (\d+), #new-token: (\d+), #cached-token: (\d+), token usage: ([\d.]+), "
    r"#running-req: (\d+), #queue-req: (\d+), #pending-token: (\d+), "
    r"cuda graph: (True|False), input throughput \(token/s\): ([\d.]+)[, ]*\Z"
)
"""The Prefill line of the newest releases: a fast path only, like :data:`_DECODE_CANONICAL`."""


def on_prefill(s: ParseState, body: str, ts: str | None, rank: str | None) -> list[LogEvent]:
    if not body.startswith("Prefill batch"):
        return []
    if body[13:15] == ", ":
        m = _PREFILL_CANONICAL.match(body, 15)
        event = None if m is None else prefill_event(m, ts, rank)
        if event is not None:
            return [event]
        kv = key_values(body[15:].rstrip(", "), PREFILL_KEYS)
    else:
        split = stats_rest(body, 13)
        if split is None:
            return []
        kv = key_values(split[1], PREFILL_KEYS)
        kv["iteration"] = split[0]
    return [PrefillStats(timestamp=ts, rank=rank, **kv)]  # type: ignore[arg-type]
