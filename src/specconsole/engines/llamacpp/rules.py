"""llama-server's rules: what it refuses at start, and when it silently runs without the
speculation it was asked for.

Why its own module: llama.cpp checks little before it loads and then either exits 1 (more
than 256 slots, synthetic rates of the wrong length) or — worse for a tuner — comes up without
speculation and says nothing that looks like a failure (``-md`` without ``--spec-type``; a
``draft-simple`` type without a draft). Both are told here before anything is deployed; the
second is also what :func:`speculation_off` reports, so the trial is marked "speculation off"
and never wins a speculative sweep. The shared fields SGLang's tree uses have no llama.cpp
flag: each is refused with the llama.cpp key that does the job.
"""

from __future__ import annotations

from specconsole.core.config.flags import extra_flags, extra_value
from specconsole.core.config.issues import IssueReport
from specconsole.core.config.model import ServerConfig
from specconsole.engines.llamacpp.options import SPELLINGS

__all__ = [
    "DRAFT_TYPES",
    "MAX_SLOTS",
    "check",
    "speculates",
    "speculation_off",
]

MAX_SLOTS = 256
"""``n_seq_max must be <= 256``: llama.cpp's cap on the sequences of one context."""
DRAFT_TYPES = frozenset({"draft-simple", "draft-eagle3"})
"""Speculative types that need a draft model (``-md``)."""
DEFAULT_N_MAX = 3
"""``--spec-draft-n-max``'s default."""
REMOVED_NAMES: dict[str, str] = {
    "--draft-max": "spec_draft_n_max",
    "--draft": "spec_draft_n_max",
    "--draft-n": "spec_draft_n_max",
    "--draft-min": "spec_draft_n_min",
    "--draft-n-min": "spec_draft_n_min",
}
"""Older builds' names this generation removed (its ``--help``: "the argument has been
removed. use --spec-draft-n-max"), with the key that renders the new name."""
DROPPED: dict[str, str] = {
    "-cd": "the draft's context size flag is gone (the draft follows ctx_size, -c)",
    "--ctx-size-draft": "the draft's context size flag is gone (the draft follows ctx_size, -c)",
}
"""Flags dropped without a new name."""

FOREIGN_KEYS: dict[str, str] = {
    "speculative_algorithm": 'set spec_type (e.g. "draft-simple") instead',
    "speculative_num_steps": "set spec_draft_n_max (tokens drafted per step) instead",
    "speculative_eagle_topk": "remove it: llama.cpp drafts a chain, not a tree",
    "speculative_num_draft_tokens": "set spec_draft_n_max instead",
    "mem_fraction_static": "remove it: size the KV cache with ctx_size and parallel",
    "cuda_graph_max_bs": "remove it: llama.cpp has no CUDA-graph batch size to set",
    "max_running_requests": "set parallel (the server's slots) instead",
    "tp_size": "remove it: split across GPUs with --split-mode / --tensor-split in extra_args",
    "context_length": "set ctx_size (-c) instead",
    "attention_backend": "remove it: pass --flash-attn through extra_args",
}
"""Other engines' keys llama-server has no flag for, with the key that does the job: a
``[server]`` table holding one is refused with the fix (``Engine.foreign_keys``)."""


def _draft(config: ServerConfig) -> bool:
    return bool(config.speculative_draft_model_path)


def _has_spec_type(config: ServerConfig) -> bool:
    """Whether the box's build knows ``--spec-type`` (builds before it drafted whenever a
    draft was given); unknown: this generation, which does."""
    flags = config.box_flags
    return flags is None or flags.accepts("--spec-type")


def speculation_off(config: ServerConfig) -> str | None:
    """Why ``config``, although it names a draft or a speculative type, will run without
    speculation (``None``: it speculates, or asks for none)."""
    spec_type = config.spec_type
    if _draft(config) and spec_type in (None, "none") and _has_spec_type(config):
        return (
            "a draft model (-md) without spec_type: llama-server loads it and never drafts "
            '(--spec-type defaults to none); set spec_type = "draft-simple"'
        )
    if spec_type in DRAFT_TYPES and not _draft(config):
        return (
            f"spec_type {spec_type} without a draft model: llama-server says '{spec_type} "
            "requires a draft context' and serves without speculation; set "
            "speculative_draft_model_path"
        )
    return None


def speculates(config: ServerConfig) -> bool:
    """Whether ``config`` asks for speculation and llama-server will do it."""
    if speculation_off(config) is not None:
        return False
    spec_type = config.spec_type
    if spec_type in (None, "none"):
        return _draft(config) and not _has_spec_type(config)  # an older build: -md drafts
    return True


def check(config: ServerConfig, r: IssueReport) -> None:
    """llama.cpp's findings (the engine-independent checks ran already)."""
    if config.engine_version is not None:
        r.note(
            "engine_version",
            "llama.cpp has no release tables here (a source build says 'build 0'): the flags "
            "are chosen by the box's own --help, not by a release number.",
            "remove engine_version.",
        )
    off = speculation_off(config)
    if off is not None:
        field = "spec_type" if _draft(config) else "speculative_draft_model_path"
        reason, _, fix = off.rpartition("; ")
        r.warn(field, f"speculation is off: {reason}.", f"{fix}.")
    _check_sizes(config, r)
    _check_speculation(config, r)
    _check_removed(config, r)
    if config.metrics is not True:
        r.warn(
            "metrics",
            "without --metrics llama-server serves no /metrics: acceptance per level cannot "
            "be read from its own counters.",
            "set metrics = true.",
        )


def _check_sizes(config: ServerConfig, r: IssueReport) -> None:
    parallel = config.parallel
    if isinstance(parallel, int) and parallel > MAX_SLOTS:
        r.err(
            "parallel",
            f"{parallel} slots: llama-server refuses more than {MAX_SLOTS} sequences "
            "('n_seq_max must be <= 256') and exits while loading.",
            f"set parallel to {MAX_SLOTS} or less.",
        )
    if parallel == 0:
        r.err("parallel", "0 slots serve nothing.", "set parallel to 1 or more (-1: auto).")
    if config.threads == 0:
        r.err("threads", "0 threads cannot run.", "set threads to 1 or more (-1: auto).")


def _check_speculation(config: ServerConfig, r: IssueReport) -> None:
    n_max, n_min = config.spec_draft_n_max, config.spec_draft_n_min
    if isinstance(n_max, int) and isinstance(n_min, int) and n_min > n_max:
        r.err(
            "spec_draft_n_min",
            f"{n_min} is above spec_draft_n_max ({n_max}).",
            f"set spec_draft_n_min to {n_max} or less.",
        )
    rates = config.spec_synth_rates
    if isinstance(rates, str):
        _check_rates(rates, n_max if isinstance(n_max, int) else DEFAULT_N_MAX, r)
    if not speculates(config) and speculation_off(config) is None:
        tuned = [
            name
            for name in ("spec_draft_n_max", "spec_draft_n_min", "spec_draft_p_min")
            if getattr(config, name) is not None
        ]
        if tuned:
            r.warn(
                tuned[0],
                f"{', '.join(tuned)} {'is' if len(tuned) == 1 else 'are'} ignored: speculation "
                "is off (no draft model, no spec_type).",
                'set speculative_draft_model_path and spec_type = "draft-simple", or remove them.',
            )


def _check_removed(config: ServerConfig, r: IssueReport) -> None:
    """Flags this generation removed, in ``extra_args``: the renamed ones with their new
    spelling, the dropped ones with what replaced them (the server exits 1 on either)."""
    for flag in extra_flags(config):
        key = REMOVED_NAMES.get(flag)
        if key is not None:
            new = SPELLINGS[key][0]
            value = extra_value(config, flag)
            shown = f" = {value}" if value else ""
            r.err(
                "extra_args",
                f"{flag} is llama.cpp's old name for {new}: this generation removed it and "
                f"exits 1 ('the argument has been removed. use {new}').",
                f"set {key}{shown} instead (rendered as {new} where the box's llama-server has "
                f"it) and remove {flag} from extra_args.",
            )
        elif flag in DROPPED:
            r.warn(
                "extra_args",
                f"{flag}: {DROPPED[flag]}; this llama.cpp generation exits 1 on it ('error: "
                f"invalid argument: {flag}').",
                f"remove {flag} from extra_args (older builds still accept it).",
            )


def _check_rates(rates: str, n_max: int, r: IssueReport) -> None:
    try:
        values = [float(v) for v in rates.split(",")]
    except ValueError:
        r.err(
            "spec_synth_rates",
            f"{rates!r} is not a comma-separated list of probabilities.",
            'write e.g. spec_synth_rates = "0.9,0.8,0.7".',
        )
        return
    if any(not 0.0 <= v <= 1.0 for v in values):
        r.err("spec_synth_rates", "each rate is a probability.", "keep every value in [0, 1].")
    if len(values) != n_max:
        r.err(
            "spec_synth_rates",
            f"{len(values)} rates for {n_max} drafted positions: llama-server exits while "
            f"loading ('synthetic acceptance rates must contain {n_max} values').",
            f"give {n_max} values (one per position up to spec_draft_n_max), or unset it.",
        )
