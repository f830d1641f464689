"""vLLM's speculative-decoding rules, checked before anything is deployed.

Why its own module: what vLLM refuses differs from SGLang's (a chain of
``num_speculative_tokens``, not a tree; the draft model inside ``--speculative-config``; the
per-batch-size K and the synthetic acceptance of newer releases); the engine-independent
checks (types, bounds) are :mod:`specconsole.core.config.validation`'s.
"""

from __future__ import annotations

from specconsole.core.config.bounds import is_int
from specconsole.core.config.issues import IssueReport
from specconsole.core.config.model import ServerConfig
from specconsole.core.config.speculation import spec_fields_without_algorithm
from specconsole.engines.vllm.options import (
    NEEDS_DRAFT_MODEL,
    PER_BATCH_K,
    SYNTHETIC,
    ScheduleError,
    parse_schedule,
)
from specconsole.engines.vllm.releases import (
    MAX_SPEC_LEN,
    PER_BATCH_K_SINCE,
    SYNTHETIC_SINCE,
    UNCAPPED_K_SINCE,
    has_per_batch_k,
    reads,
)

__all__ = ["validate_vllm"]


def validate_vllm(config: ServerConfig, bad_ints: set[str], r: IssueReport) -> None:
    err, warn = r.err, r.warn
    method = config.method
    schedule = dict(config.options).get(PER_BATCH_K)
    synthetic = dict(config.options).get(SYNTHETIC)
    if method is None:
        spec_fields_without_algorithm(config, r)
        for key, value in ((PER_BATCH_K, schedule), (SYNTHETIC, synthetic)):
            if value is not None:
                warn(
                    key,
                    f"{key} without speculative decoding does nothing.",
                    f"set method, or remove {key}.",
                )
        return
    if isinstance(schedule, str):
        _check_schedule(config, schedule, r)
    if synthetic is not None:
        _check_synthetic(config, synthetic, r)
    if method in NEEDS_DRAFT_MODEL and not config.speculative_model:
        err(
            "speculative_model",
            f"vLLM's {method} method needs a draft model.",
            "set speculative_model.",
        )
    if config.num_speculative_tokens is None and "num_speculative_tokens" not in bad_ints:
        err(
            "num_speculative_tokens",
            "vLLM needs num_speculative_tokens in --speculative-config.",
            "set num_speculative_tokens (e.g. 3).",
        )
    steps = config.num_speculative_tokens
    if is_int(steps) and steps > MAX_SPEC_LEN:
        _check_k_cap(config.engine_version, steps, r)


def _check_k_cap(version: str | None, steps: int, r: IssueReport) -> None:
    """More draft tokens than the release's rejection sampler verifies: it starts, then dies
    on its first drafting request (refused when the release is known to cap, warned while it
    is unknown)."""
    capped = reads(version, UNCAPPED_K_SINCE)
    if capped is True:
        return
    said = f"vLLM {version}" if version else "vLLM before 0.34 (the box's release is unknown)"
    (r.err if capped is False else r.warn)(
        "num_speculative_tokens",
        f"{said} verifies at most {MAX_SPEC_LEN} draft tokens (its rejection sampler's "
        f"MAX_SPEC_LEN): num_speculative_tokens {steps} starts, then its first drafting request "
        "fails the engine and the server exits.",
        f"set num_speculative_tokens to {MAX_SPEC_LEN} or less, or use vLLM {UNCAPPED_K_SINCE} "
        "or later.",
    )


def _check_schedule(config: ServerConfig, text: str, r: IssueReport) -> None:
    """vLLM's rules for ``num_speculative_tokens_per_batch_size`` (its own messages), and the
    release that reads it."""
    try:
        schedule = parse_schedule(text)
    except ScheduleError as exc:
        r.err(PER_BATCH_K, f"vLLM refuses it: {exc}", 'write e.g. "1-8:5,9-64:3,65-1024:1".')
        return
    version = config.engine_version
    if has_per_batch_k(version) is False:
        r.err(
            PER_BATCH_K,
            f"vLLM {version} has no {PER_BATCH_K}: its SpeculativeConfig ignores the key, so "
            "every batch would draft num_speculative_tokens.",
            f"use vLLM {PER_BATCH_K_SINCE} or later, or remove {PER_BATCH_K}.",
        )
    steps = config.num_speculative_tokens
    if is_int(steps) and any(k > steps for _a, _b, k in schedule):
        r.note(
            PER_BATCH_K,
            f"vLLM caps each K at num_speculative_tokens ({steps}).",
            f"raise num_speculative_tokens to {max(k for _a, _b, k in schedule)} for the "
            "largest K to count.",
        )


def _check_synthetic(config: ServerConfig, length: object, r: IssueReport) -> None:
    """vLLM's rules for the synthetic acceptance (``_resolve_synthetic_acceptance_rates``, its
    text), and the release that has it."""
    version = config.engine_version
    if reads(version, SYNTHETIC_SINCE) is False:
        r.err(
            SYNTHETIC,
            f"vLLM {version} has no synthetic rejection sampler: its SpeculativeConfig "
            "ignores the keys and the real draft's acceptance would be measured.",
            f"use vLLM {SYNTHETIC_SINCE} or later for the what-if, or remove {SYNTHETIC}.",
        )
    steps = config.num_speculative_tokens
    if isinstance(length, int | float) and is_int(steps) and not 1.0 <= length <= steps + 1:
        r.err(
            SYNTHETIC,
            f"vLLM refuses it: synthetic_acceptance_length must be in [1, {steps + 1}], got "
            f"{float(length)}.",
            f"give a length between 1 and num_speculative_tokens + 1 ({steps + 1}).",
        )
