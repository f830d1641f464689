"""SGLang's speculative-decoding rules: draft model, tree sizes, backends, releases.

Why its own module: these are the rules that cost a model load (or an illegal memory access
under load) when broken, they follow SGLang's releases (:mod:`.releases`), and they are the
part a new SGLang release changes; the engine-independent type/range checks stay in
:mod:`specconsole.core.config.validation`, which hands the rest to the engine.
"""

from __future__ import annotations

from specconsole.core.config.bounds import is_int
from specconsole.core.config.flags import extra_flags, extra_value
from specconsole.core.config.issues import IssueReport
from specconsole.core.config.model import ServerConfig
from specconsole.core.config.speculation import spec_fields_without_algorithm
from specconsole.engines.sglang.keys import (
    NEEDS_DRAFT_MODEL,
    TREE_ALGOS,
    TREE_FIELDS,
    SpecAlgorithm,
)
from specconsole.engines.sglang.releases import parse_version, removed_flags, rule_applies

MSG_DRAFT_ADJUSTED = (
    "speculative_num_draft_tokens is adjusted to speculative_num_steps + 1 when "
    "speculative_eagle_topk == 1"
)
"""SGLang's own warning text (``_handle_eagle_family``)."""


def _valid_version(config: ServerConfig) -> str | None:
    """``engine_version`` when it is a release number, else ``None`` (unknown)."""
    try:
        parse_version(str(config.engine_version))
    except ValueError:
        return None
    return config.engine_version


def check_engine_version(config: ServerConfig, r: IssueReport) -> None:
    """``engine_version`` is a release number, and extra_args use no flag it has removed."""
    version = config.engine_version
    if version is None:
        return
    try:
        parse_version(str(version))
    except ValueError:
        r.err(
            "engine_version",
            f"{version!r} is not a release number.",
            'write the SGLang release on the box, e.g. engine_version = "0.5.23", or remove it.',
        )
        return
    removed = removed_flags(version)
    for flag in extra_flags(config):
        change = removed.get(flag)
        if change is not None:
            r.err(
                "extra_args",
                f"SGLang {version} no longer accepts {flag} ({change.note}).",
                f"use {change.new} instead.",
            )


def validate_sglang(
    config: ServerConfig, algo: SpecAlgorithm | None, bad_ints: set[str], r: IssueReport
) -> None:
    err, warn, note = r.err, r.warn, r.note
    if algo is None:
        spec_fields_without_algorithm(config, r)
        return
    steps, topk, draft = (
        config.speculative_num_steps,
        config.speculative_eagle_topk,
        config.speculative_num_draft_tokens,
    )
    dp_attention = "--enable-dp-attention" in extra_flags(config)
    pp = extra_value(config, "--pp-size") or extra_value(config, "--pipeline-parallel-size")
    if (
        pp is not None
        and pp.strip() not in ("", "1")
        and rule_applies("pp_speculative", _valid_version(config))
    ):
        err(
            "extra_args",
            "Pipeline parallelism is not compatible with overlap schedule, "
            "speculative decoding (SGLang refuses it).",
            "remove --pp-size or disable speculative decoding.",
        )
    if algo in NEEDS_DRAFT_MODEL and not config.speculative_draft_model_path:
        err(
            "speculative_draft_model_path",
            f"{algo.value} needs a draft model.",
            "set speculative_draft_model_path to the draft (EAGLE head) model.",
        )
    if algo is SpecAlgorithm.NGRAM:
        if config.speculative_draft_model_path:
            warn(
                "speculative_draft_model_path",
                "NGRAM drafts from the prompt; the draft model is ignored.",
                "remove speculative_draft_model_path.",
            )
        for name in ("speculative_num_steps", "speculative_eagle_topk"):
            if getattr(config, name) is not None:
                warn(
                    name,
                    f"NGRAM ignores {name}; it is sized by speculative_num_draft_tokens "
                    "(default 12) and the --speculative-ngram-* flags.",
                    f"remove {name}.",
                )
        if dp_attention:
            err(
                "extra_args",
                "NGRAM speculative decoding does not support DP attention.",
                "remove --enable-dp-attention.",
            )
    else:
        if algo is SpecAlgorithm.STANDALONE and dp_attention:
            err(
                "extra_args",
                "Currently standalone speculative decoding does not support dp attention.",
                "remove --enable-dp-attention or use EAGLE/EAGLE3.",
            )
        given = [f for f in TREE_FIELDS if getattr(config, f) is not None]
        chain_fill = (
            is_int(steps) and steps >= 1 and topk == 1 and draft is None
        )  # SGLang fills draft tokens = steps + 1 itself
        if chain_fill:
            note(
                "speculative_num_draft_tokens",
                f"{MSG_DRAFT_ADJUSTED} (SGLang will use {steps + 1}).",
                f"nothing to do, or set speculative_num_draft_tokens = {steps + 1} explicitly.",
            )
        elif given and len(given) < 3:
            missing = [f for f in TREE_FIELDS if f not in given]
            err(
                missing[0],
                f"set all three tree sizes or none: {', '.join(missing)} "
                f"{'is' if len(missing) == 1 else 'are'} missing (SGLang asserts this).",
                "set speculative_num_steps, speculative_eagle_topk and "
                "speculative_num_draft_tokens together (e.g. 3, 1, 4), or remove all three "
                "for SGLang's auto choice.",
            )
        tree_ok = not (set(TREE_FIELDS) & bad_ints) and all(is_int(v) for v in (steps, topk, draft))
        if tree_ok and steps is not None and topk is not None and draft is not None:
            if topk == 1 and draft != steps + 1:
                note(
                    "speculative_num_draft_tokens",
                    f"{MSG_DRAFT_ADJUSTED} (SGLang will use {steps + 1}, not {draft}).",
                    f"set speculative_num_draft_tokens = {steps + 1}.",
                )
            elif draft > steps * topk + 1:
                err(
                    "speculative_num_draft_tokens",
                    f"{draft} draft tokens exceed what the tree can hold: steps x topk + 1 = "
                    f"{steps * topk + 1}. SGLang does not check this and crashes later with an "
                    "illegal memory access.",
                    f"set speculative_num_draft_tokens <= {steps * topk + 1}, or raise "
                    "speculative_num_steps / speculative_eagle_topk.",
                )
            if topk > 1:
                note(
                    "speculative_eagle_topk",
                    f"a tree with topk={topk} costs more memory and compute per step than a "
                    "chain (topk=1).",
                    "compare against topk=1 at your target concurrency.",
                )
        backends = {
            config.attention_backend if isinstance(config.attention_backend, str) else None,
            extra_value(config, "--decode-attention-backend"),
            extra_value(config, "--prefill-attention-backend"),
        }
        if "trtllm_mha" in backends and is_int(topk) and topk > 1:
            err(
                "speculative_eagle_topk",
                "trtllm_mha backend only supports topk = 1 for speculative decoding.",
                "set speculative_eagle_topk = 1 or choose another attention_backend "
                "(fa3, flashinfer, triton).",
            )
        page = extra_value(config, "--page-size")
        if (
            is_int(topk)
            and topk > 1
            and page is not None
            and page.strip().isdigit()
            and int(page) > 1
            and isinstance(config.attention_backend, str)
            and config.attention_backend not in ("flashinfer", "fa3", "triton")
        ):
            err(
                "attention_backend",
                "speculative_eagle_topk > 1 with page_size > 1 is only supported on flashinfer, "
                "fa3 and triton.",
                "use one of those backends, page_size 1, or topk 1.",
            )
        if "--enable-mixed-chunk" in extra_flags(config):
            warn(
                "extra_args",
                "Mixed chunked prefill is disabled because of using eagle speculative decoding.",
                "remove --enable-mixed-chunk.",
            )
    if config.max_running_requests is None and algo in TREE_ALGOS:
        warn(
            "max_running_requests",
            "not set: SGLang caps it at 48 with speculative decoding, "
            "which limits throughput at higher concurrency.",
            "set max_running_requests explicitly (e.g. to your highest benchmark concurrency).",
        )
    cg, mrr = config.cuda_graph_max_bs, config.max_running_requests
    if is_int(cg) and is_int(mrr) and cg >= 1 and mrr > cg:
        note(
            "cuda_graph_max_bs",
            f"batches above cuda_graph_max_bs={cg} (up to "
            f"max_running_requests={mrr}) run without CUDA graphs (`cuda graph: False`).",
            "raise cuda_graph_max_bs if memory allows, or accept slower large batches.",
        )
