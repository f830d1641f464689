"""How SGLang picks the draft length of a decode batch, where a schedule's edges fall, and its
own adaptive mode as the schedule's contender.

Why its own module: a schedule proven on the ladder's levels (1, 4, 16, 32, 64) is never
measured where it switches, and SGLang does not switch where the file says: it rounds a
decode batch up to a captured CUDA-graph batch size first, then takes the bucket with the
largest key not above it (``adaptive_spec_params.py``, ``eagle_worker_v2.py``; read from the
0.5.14 and 0.5.23 wheels, never imported). So the edge between ``3: [4]`` and ``46: [3]``
is at 45 (45 pads to 48), and a schedule's proof measures there (``core.search.edges``).

The engine's own adaptive mode is what a user compares a schedule with:

* **its defaults** — ``--speculative-adaptive`` without a file: the release's
  ``DEFAULT_ADAPTIVE_CONFIG`` (:data:`DEFAULT_TIERS`), an EMA of accepted drafts choosing
  among 1/3/7 steps below batch 8 (1/3/5/7 from 0.5.23), 0/1/3 to 31, 0/1 to 63 and none
  above; its KV slots are sized for the largest candidate (7);
* **the same candidates** — the schedule's own bucket keys, each holding every draft length
  the schedule uses, so the EMA chooses among them at run time where the schedule pins one
  per bucket: the fair comparison.

SGLang's EMA moves on acceptance, not speed (a bucket steps up while its EMA of accepted
drafts exceeds its step less 0.5): with a draft that accepts well it climbs to the longest
candidate whatever the batch size.
"""

from __future__ import annotations

import bisect

from specconsole.core.config.issues import Issue, Severity
from specconsole.core.config.model import ServerConfig, set_values
from specconsole.core.config.releases import parse_version
from specconsole.core.engine.schedule import Edge, switch_points
from specconsole.engines.sglang.adaptive import (
    ADAPTIVE,
    ADAPTIVE_CONFIG,
    SCHEDULE,
    AdaptiveFile,
    adaptive_on,
    schedule_of,
)

__all__ = [
    "DEFAULT_TIERS",
    "adaptive_mode",
    "capture_sizes",
    "contender",
    "default_tiers",
    "edges",
    "steps_at",
]

DEFAULT_TIERS: tuple[tuple[str, tuple[tuple[int, tuple[int, ...]], ...]], ...] = (
    ("0.5.23", ((1, (1, 3, 5, 7)), (8, (0, 1, 3)), (32, (0, 1)), (64, (0,)))),
    ("0.5.14", ((1, (1, 3, 7)), (8, (0, 1, 3)), (32, (0, 1)), (64, (0,)))),
    ("0.5.13", ((1, (1, 3, 7)), (8, (1, 3)), (32, (1,)))),
)
"""Each release's ``DEFAULT_ADAPTIVE_CONFIG``: (bucket key, candidate steps), newest first
(the simulator's SGLang face keeps its own copy, held equal by a test)."""

SPECULATIVE_RUNNING = 48
"""SGLang's ``max_running_requests`` when speculation is on and it is unset."""


def default_tiers(version: str | None) -> tuple[tuple[int, tuple[int, ...]], ...]:
    """The release's default buckets (unknown or older: the newest known)."""
    try:
        parsed = parse_version(version) if version else None
    except ValueError:
        parsed = None
    for since, tiers in DEFAULT_TIERS:
        if parsed is not None and parsed >= parse_version(since):
            return tiers
    return DEFAULT_TIERS[0][1]


def capture_sizes(max_bs: int, speculative: bool = True) -> tuple[int, ...]:
    """SGLang's CUDA-graph capture ladder up to ``max_bs`` (``cuda_graph_runner.py``)."""
    if speculative:
        ladder = [
            *range(1, 9),
            *range(10, 33, 2),
            *range(40, 65, 4),
            *range(72, 257, 8),
            *range(272, max(max_bs, 272) + 1, 16),
        ]
    else:
        ladder = [1, 2, 4, *range(8, max(max_bs, 8) + 1, 8)]
    sizes = tuple(b for b in ladder if b <= max_bs)
    return sizes or (1,)


def _graph_top(config: ServerConfig) -> int | None:
    """The largest captured batch: ``cuda_graph_max_bs`` capped by the running limit (None:
    SGLang sizes it from the GPU, which the configuration does not say)."""
    top = config.cuda_graph_max_bs
    if not isinstance(top, int):
        return None
    running = config.max_running_requests
    if not isinstance(running, int) and config.speculative_algorithm is not None:
        running = SPECULATIVE_RUNNING
    return min(top, running) if isinstance(running, int) else top


def _padded(config: ServerConfig, batch: int) -> int:
    """The batch size SGLang looks the bucket up with: rounded up to a captured size (itself
    beyond the largest captured size, or when the captured sizes are not known)."""
    top = _graph_top(config)
    sizes = capture_sizes(top) if top is not None else capture_sizes(max(batch, 1))
    i = bisect.bisect_left(sizes, batch)
    return sizes[i] if i < len(sizes) else batch


def _bucket(adaptive: AdaptiveFile, padded: int) -> tuple[int, tuple[int, ...]]:
    keys = [k for k, _s in adaptive.buckets]
    return adaptive.buckets[max(0, bisect.bisect_right(keys, padded) - 1)]


def steps_at(config: ServerConfig, batch: int) -> int | None:
    """The draft length a decode batch of ``batch`` requests runs (see the module
    docstring); None where the EMA chooses among several candidates."""
    if config.speculative_algorithm is None:
        return 0
    adaptive = schedule_of(config)
    if adaptive is None:
        if adaptive_on(config):
            return None
        steps = config.speculative_num_steps
        return steps if isinstance(steps, int) else None
    _key, candidates = _bucket(adaptive, _padded(config, batch))
    return candidates[0] if len(candidates) == 1 else None


def edges(config: ServerConfig, up_to: int) -> tuple[Edge, ...]:
    """Where the draft length switches (as SGLang routes), and the largest captured
    CUDA-graph batch when a batch above it can run."""
    adaptive = schedule_of(config)

    def said(batch: int, old: int, new: int) -> str:
        key = _bucket(adaptive, _padded(config, batch))[0] if adaptive is not None else batch
        pad = _padded(config, batch)
        rounded = f", {batch} rounds up to captured size {pad}" if pad != batch else ""
        return f"steps {old} → {new} at batch {batch} (bucket {key}{rounded})"

    out = list(switch_points(lambda b: steps_at(config, b), up_to, said))
    top = _graph_top(config)
    if top is not None and top + 1 <= up_to:
        out.append(Edge(top + 1, f"above {top}: no CUDA graph (cuda_graph_max_bs)", False))
    return tuple(sorted(out, key=lambda e: e.batch))


def adaptive_mode(config: ServerConfig) -> str | None:
    """How ``config``'s EMA chooses (None: static, or every bucket pins one length)."""
    if config.speculative_algorithm is None or not adaptive_on(config):
        return None
    adaptive = schedule_of(config)
    if adaptive is not None:
        if all(len(steps) == 1 for _k, steps in adaptive.buckets):
            return None  # a measured schedule: nothing to choose
        said = _tiers_text(adaptive.buckets)
        return f"SGLang's adaptive mode (EMA of acceptance) over {said}"
    if dict(config.options).get(ADAPTIVE_CONFIG):
        return "SGLang's adaptive mode (EMA of acceptance) with its config file"
    said = _tiers_text(default_tiers(config.engine_version))
    return f"SGLang's adaptive mode with its defaults (EMA of acceptance): {said}"


def _tiers_text(buckets: tuple[tuple[int, tuple[int, ...]], ...]) -> str:
    return ", ".join(f"{k}:{'/'.join(map(str, s))}" for k, s in buckets)


def contender(schedule: ServerConfig, same_candidates: bool) -> ServerConfig | Issue:
    """SGLang's adaptive mode beside ``schedule``: its defaults (``--speculative-adaptive``
    alone: the middle candidate first, chains), or the schedule's buckets each holding every draft
    length it uses."""
    adaptive = schedule_of(schedule)
    if adaptive is None or schedule.speculative_algorithm is None:
        return Issue(
            SCHEDULE,
            Severity.ERROR,
            "the configuration is not a schedule by batch size: there is nothing to compare "
            "SGLang's adaptive mode with.",
            'derive a schedule first (strategy = "per_level").',
        )
    if not same_candidates:
        return set_values(
            schedule,
            speculative_num_steps=None,
            speculative_num_draft_tokens=None,
            speculative_eagle_topk=None,  # SGLang's adaptive mode drafts chains (topk 1)
            **{ADAPTIVE: True, SCHEDULE: None, ADAPTIVE_CONFIG: None},
            description="",
        )
    lengths = tuple(sorted({s for s in adaptive.candidates if s > 0}))
    if len(lengths) < 2:
        return Issue(
            SCHEDULE,
            Severity.ERROR,
            f"the schedule drafts one length ({lengths[0] if lengths else 0}) wherever it "
            "drafts: SGLang's EMA would have nothing to choose from.",
            "compare with the best static (the schedule is one).",
        )
    zero = (0,) if 0 in adaptive.candidates else ()
    every = AdaptiveFile(tuple((key, (*zero, *lengths)) for key, _s in adaptive.buckets))
    top = max(lengths)
    return set_values(
        schedule,
        speculative_num_steps=top,
        speculative_num_draft_tokens=top + 1,
        speculative_eagle_topk=1,
        **{SCHEDULE: every.compact()},
        description="",
    )
