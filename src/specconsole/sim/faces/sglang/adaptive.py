"""SGLang's adaptive config file as the SGLang face reads it: which buckets and candidate
steps ``--speculative-adaptive-config`` gives the box's controller, by the release's rules.

Why in the face: the file's shape and its refusals are SGLang's, release by release (read
from the 0.5.11 to 0.5.23 wheels' ``adaptive_spec_params.py``; reimplemented, never copied):
integer keys are buckets (a bucket's smallest batch size) holding ``candidate_steps`` (a
non-empty list of non-negative ints: 0.5.14 and later; positive before); other keys are knobs
every bucket inherits, a bucket's own winning. No file: the release's
``DEFAULT_ADAPTIVE_CONFIG``. Before 0.5.13 the file is one flat candidate list for every
batch. What the controller then does with it is the box's physics
(:mod:`specconsole.sim.physics.adaptive`). Pure.
"""

from __future__ import annotations

import json

from specconsole.core.config.releases import has_feature, parse_version
from specconsole.sim.arguments import SimArgError
from specconsole.sim.faces.sglang.args import imitated_engine, server_limits
from specconsole.sim.physics.adaptive import DEFAULT_KNOBS, AdaptiveSpec, Bucket

__all__ = ["default_spec", "load_spec"]

_DEFAULTS: tuple[tuple[str, tuple[tuple[int, tuple[int, ...], float, float], ...]], ...] = (
    ("0.5.23", ((1, (1, 3, 5, 7), 0.0, -0.25), (8, (0, 1, 3), 0.0, 0.0), (32, (0, 1), 0.0, 0.0),
                (64, (0,), 0.0, 0.0))),
    ("0.5.14", ((1, (1, 3, 7), 0.0, -0.25), (8, (0, 1, 3), 0.0, 0.0), (32, (0, 1), 0.0, 0.0),
                (64, (0,), 0.0, 0.0))),
    ("0.5.13", ((1, (1, 3, 7), 0.0, -0.25), (8, (1, 3), 0.0, 0.0), (32, (1,), 0.0, 0.0))),
)  # fmt: skip
"""Each release's ``DEFAULT_ADAPTIVE_CONFIG``: (bucket, candidates, up, down hysteresis)."""


def _error(message: str) -> SimArgError:
    return SimArgError(message, "ValueError")


def load_spec(text: str | None, release: str | None) -> AdaptiveSpec:
    """The adaptive config ``text`` (None: the release's default), loaded by release
    ``release``'s rules (unknown: the newest's); raises SimArgError with SGLang's texts."""
    table = imitated_engine().releases
    by_batch = has_feature(table, "adaptive_by_batch", release) is not False
    zero_ok = has_feature(table, "adaptive_zero_step", release) is not False
    if text is None:
        return default_spec(release) if by_batch else AdaptiveSpec((Bucket(1, (1, 3, 7)),), False)
    try:
        document = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise _error(f"json.decoder.JSONDecodeError: {exc}") from None
    if not isinstance(document, dict):
        raise _error(
            f"speculative_adaptive_config must be a JSON object, got {type(document).__name__}"
        )
    knobs = tuple((k, v) for k, v in document.items() if not k.isdigit() and k in DEFAULT_KNOBS)
    if not by_batch:  # 0.5.11/0.5.12: one list, at least two distinct values
        flat = document.get("candidate_steps", [1, 3, 7])
        if not isinstance(flat, list) or not all(
            isinstance(v, int) and 0 < v <= server_limits()["speculative_num_steps"] for v in flat
        ):
            raise _error(f"candidate_steps must be a list of positive ints, got {flat!r}")
        steps = sorted(set(flat))
        if len(steps) < 2:
            raise SimArgError(
                "candidate_steps must have at least 2 distinct values", "AssertionError"
            )
        return AdaptiveSpec((Bucket(1, tuple(steps), knobs),), by_batch=False)
    buckets: list[Bucket] = []
    for key, entry in document.items():
        if not key.isdigit():
            continue
        steps = entry.get("candidate_steps") if isinstance(entry, dict) else None
        floor = 0 if zero_ok else 1
        if (
            not isinstance(steps, list)
            or not steps
            or not all(isinstance(s, int) and not isinstance(s, bool) and s >= floor for s in steps)
        ):
            kind = "non-negative" if zero_ok else "positive"
            raise _error(f"BS {key}: candidate_steps must be a list of {kind} ints, got {steps!r}")
        if max(steps) > server_limits()["speculative_num_steps"] or len(buckets) >= 4096:
            raise _error(
                f"BS {key}: candidate step {max(steps)} (or bucket {len(buckets) + 1}) is above "
                "the simulator's limit; a real box runs far below it"
            )
        own = tuple((k, v) for k, v in entry.items() if k in DEFAULT_KNOBS)
        buckets.append(Bucket(int(key), tuple(sorted(set(steps))), (*knobs, *own)))
    if not buckets:
        raise _error(
            "speculative_adaptive_config must contain at least one integer-string BS key, "
            f'e.g. {{"1": {{"candidate_steps": [1,3,7]}}}}. Got keys: {list(document)}'
        )
    return AdaptiveSpec(tuple(sorted(buckets, key=lambda b: b.key)))


def default_spec(release: str | None) -> AdaptiveSpec:
    """The release's ``DEFAULT_ADAPTIVE_CONFIG`` (unknown: the newest checked)."""
    chosen = _DEFAULTS[0][1]
    if release is not None:
        try:
            version = parse_version(release)
        except ValueError:
            version = None
        for since, rows in _DEFAULTS:
            if version is not None and version >= parse_version(since):
                chosen = rows
                break
    return AdaptiveSpec(
        tuple(
            Bucket(k, c, (("up_hysteresis", up), ("down_hysteresis", down), ("ceiling_coeff", 0)))
            for k, c, up, down in chosen
        )
    )
