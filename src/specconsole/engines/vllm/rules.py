"""vLLM's speculative-decoding rules, checked before anything is deployed.

Why its own module: what vLLM refuses or ignores differs from SGLang's (a chain, not a tree;
no CUDA-graph batch-size flag specconsole renders; the draft model inside
``--speculative-config``); the engine-independent checks are in
:mod:`specconsole.core.config.validation`.
"""

from __future__ import annotations

from specconsole.core.config.bounds import is_int
from specconsole.core.config.issues import IssueReport
from specconsole.core.config.model import ServerConfig, SpecAlgorithm
from specconsole.core.config.speculation import NEEDS_DRAFT_MODEL, spec_fields_without_algorithm
from specconsole.engines.vllm.options import PER_BATCH_K, SYNTHETIC, ScheduleError, parse_schedule
from specconsole.engines.vllm.releases import (
    MAX_SPEC_LEN,
    PER_BATCH_K_SINCE,
    SYNTHETIC_SINCE,
    UNCAPPED_K_SINCE,
    has_per_batch_k,
    reads,
)

__all__ = ["validate_vllm"]


def validate_vllm(
    config: ServerConfig, algo: SpecAlgorithm | None, bad_ints: set[str], r: IssueReport
) -> None:
    err, warn = r.err, r.warn
    if config.attention_backend is not None:
        warn(
            "attention_backend",
            "vLLM has no --attention-backend flag here; it is not rendered.",
            "set VLLM_ATTENTION_BACKEND in env instead.",
        )
    if config.cuda_graph_max_bs is not None:
        warn(
            "cuda_graph_max_bs",
            "vLLM has no equivalent flag that specconsole renders; it is ignored.",
            "pass vLLM's own CUDA-graph option through extra_args.",
        )
    schedule = dict(config.options).get(PER_BATCH_K)
    synthetic = dict(config.options).get(SYNTHETIC)
    if algo is None:
        spec_fields_without_algorithm(config, r)
        for key, value in ((PER_BATCH_K, schedule), (SYNTHETIC, synthetic)):
            if value is not None:
                warn(
                    key,
                    f"{key} without speculative decoding does nothing.",
                    f"set speculative_algorithm, or remove {key}.",
                )
        return
    if isinstance(schedule, str):
        _check_schedule(config, schedule, r)
    if synthetic is not None:
        _check_synthetic(config, synthetic, r)
    if algo in NEEDS_DRAFT_MODEL and not config.speculative_draft_model_path:
        err(
            "speculative_draft_model_path",
            f"vLLM's {algo.value.lower()} method needs a draft model.",
            "set speculative_draft_model_path.",
        )
    steps, topk, draft = (
        config.speculative_num_steps,
        config.speculative_eagle_topk,
        config.speculative_num_draft_tokens,
    )
    if steps is None and "speculative_num_steps" not in bad_ints:
        err(
            "speculative_num_steps",
            "vLLM needs num_speculative_tokens, rendered from speculative_num_steps.",
            "set speculative_num_steps (e.g. 3).",
        )
    if is_int(steps) and steps > MAX_SPEC_LEN:
        _check_k_cap(config.engine_version, steps, r)
    if is_int(topk) and topk > 1:
        err(
            "speculative_eagle_topk",
            "vLLM drafts a chain, not a tree: topk must be 1.",
            "set speculative_eagle_topk = 1 or remove it.",
        )
    if is_int(draft) and is_int(steps) and draft != steps + 1:
        warn(
            "speculative_num_draft_tokens",
            "vLLM ignores speculative_num_draft_tokens (it "
            f"verifies num_speculative_tokens + 1 = {steps + 1}).",
            "remove speculative_num_draft_tokens.",
        )


def _check_k_cap(version: str | None, steps: int, r: IssueReport) -> None:
    """More draft tokens than the release's rejection sampler verifies: it starts, then dies
    on its first drafting request (refused when the release is known to cap, warned while it
    is unknown)."""
    capped = reads(version, UNCAPPED_K_SINCE)
    if capped is True:
        return
    said = f"vLLM {version}" if version else "vLLM before 0.34 (the box's release is unknown)"
    (r.err if capped is False else r.warn)(
        "speculative_num_steps",
        f"{said} verifies at most {MAX_SPEC_LEN} draft tokens (its rejection sampler's "
        f"MAX_SPEC_LEN): num_speculative_tokens {steps} starts, then its first drafting request "
        "fails the engine and the server exits.",
        f"set speculative_num_steps to {MAX_SPEC_LEN} or less, or use vLLM {UNCAPPED_K_SINCE} "
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
    steps = config.speculative_num_steps
    if is_int(steps) and any(k > steps for _a, _b, k in schedule):
        r.note(
            PER_BATCH_K,
            f"vLLM caps each K at num_speculative_tokens ({steps}).",
            f"raise speculative_num_steps to {max(k for _a, _b, k in schedule)} for the "
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
    steps = config.speculative_num_steps
    if isinstance(length, int | float) and is_int(steps) and not 1.0 <= length <= steps + 1:
        r.err(
            SYNTHETIC,
            f"vLLM refuses it: synthetic_acceptance_length must be in [1, {steps + 1}], got "
            f"{float(length)}.",
            f"give a length between 1 and num_speculative_tokens + 1 ({steps + 1}).",
        )
