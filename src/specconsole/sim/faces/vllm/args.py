"""``vllm serve MODEL [flags]`` as the simulator's vLLM face reads it, resolved by vLLM's
rules into the box's :class:`~specconsole.sim.physics.launch.ResolvedArgs`.

Why apart from the face's life (:mod:`.server`): this is where vLLM's decisions live — its
defaults for the GPU (``max_num_seqs`` 1024 and ``max_num_batched_tokens`` 8192 on a GPU of
70 GiB or more that is not an A100, else 256 and 2048: ``EngineArgs._set_default_args``;
``gpu_memory_utilization`` 0.9), the chain it drafts (``num_speculative_tokens`` K, verified
with the bonus token: K + 1), the batches its CUDA graphs cover (a ceiling of 512 tokens:
0.11 captures up to ``min(2 x max_num_seqs, 512)`` tokens, 0.34 up to
``min(2 x max_num_seqs x (K + 1), 512)``, so with K draft tokens graphs cover batches up to
512 // (K + 1)), the per-batch-size K of 0.34, the order it sizes memory in (0.11: the
utilization is a static budget for the weights, a profiling run's activations and the KV
cache, CUDA graphs captured afterwards from the memory outside it; 0.34: an *extensible* KV
cache sized last, from what the graphs and warm-up leave within the utilization), that it
refuses a KV cache that cannot hold one request of ``--max-model-len``, and what it refuses.

The command line is read by the vLLM engine's own reverse parse, reached through the registry
(the model, ``--speculative-config``, memory, sequences, tensor parallelism, length, address),
and checked by its rules (``core.config.validation``): the face refuses what specconsole knows
vLLM refuses, with the same words. The few flags with physics beyond those (``--enforce-eager``,
``--max-num-batched-tokens``...) are read here; every flag accepted is checked against the
releases' own argument parsers by ``tests/oracle/test_vllm_face.py``; other ``--flags`` are
kept and reported. Pure: no I/O.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Mapping, Sequence
from typing import Any

from specconsole.core.config.concepts import Concept, concept_value
from specconsole.core.config.errors import ConfigError
from specconsole.core.config.model import ServerConfig
from specconsole.core.config.validation import validate
from specconsole.core.engine.registry import get_engine
from specconsole.sim.arguments import ParsedArgs, SimArgError, split_unknown
from specconsole.sim.faults import add_fault_flags
from specconsole.sim.physics.launch import FixedAccept, KvSizing, ResolvedArgs
from specconsole.sim.profile import Profile

__all__ = ["OWN_FLAGS", "VLLM", "help_text", "kv_sizing", "parse_vllm", "resolve_vllm"]

VLLM = "vllm"
"""The registry name of the engine this face imitates."""

SCHEDULE_KEY = "num_speculative_tokens_per_batch_size"
"""``SpeculativeConfig``'s per-batch-size K (0.34.0; 0.11.0 ignores the key)."""

OWN_FLAGS: tuple[str, ...] = (
    "--served-model-name",
    "--max-num-batched-tokens",
    "--enforce-eager",
    "--api-key",
    "--seed",
    "--disable-log-stats",
    "--trust-remote-code",
)
"""vLLM flags the face reads itself (the engine models the rest)."""

_METHODS: dict[str, str] = {
    "eagle": "EAGLE",
    "eagle3": "EAGLE3",
    "mtp": "EAGLE",
    "draft_model": "STANDALONE",
    "ngram": "NGRAM",
}
"""vLLM's method -> the box's algorithm (vLLM's ``mtp`` drafts with the target's own layers,
which the box runs as an EAGLE head)."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        raise SimArgError(f"vllm serve: error: {message}")


def _own_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="vllm serve", add_help=False, allow_abbrev=False)
    a = p.add_argument
    a("--served-model-name", nargs="+", default=None)
    a("--max-num-batched-tokens", type=int, default=None)
    a("--enforce-eager", action="store_true")
    a("--api-key", default=None)
    a("--seed", type=int, default=None)
    a("--disable-log-stats", action="store_true")
    a("--trust-remote-code", action="store_true")
    sim = p.add_argument_group("simulator")
    sim.add_argument("--sim-engine-version", default=None)
    sim.add_argument("--sim-profile", default=None)
    sim.add_argument("--sim-load-seconds", type=float, default=None)
    sim.add_argument("--sim-crash-after-requests", type=int, default=None)
    sim.add_argument("--sim-hang-during-load", action="store_true")
    sim.add_argument("--sim-stall-after-tokens", type=int, default=None)
    sim.add_argument("--sim-slow-start", type=float, default=0.0)
    sim.add_argument("--sim-unthrottled", action="store_true")
    add_fault_flags(sim)
    sim.add_argument("--sim-edge-cliff", type=float, default=1.0)
    sim.add_argument("--sim-edge-cliff-at", type=int, default=0)
    return p


def help_text() -> str:
    """What ``vllm serve --help=all`` prints for the face: every flag it accepts (the
    engine's modelled flags with their aliases, its own, the simulator's) in argparse's
    format, so a check of the box's flags (``core.config.capabilities``) reads it as vLLM's."""
    p = _own_parser()
    p.usage = "vllm serve [model_tag] [options]"
    p.add_argument("model_tag", nargs="?", help="The model tag to serve.")
    by_field: dict[str, list[str]] = {}
    for flag, field in get_engine(VLLM).modelled_flags.items():
        by_field.setdefault(field, []).append(flag)
    for field, names in by_field.items():
        p.add_argument(*names, dest=field, metavar=field.upper())
    return p.format_help()


def _spec_json(words: Sequence[str]) -> tuple[int, dict[str, Any]] | None:
    """Where ``--speculative-config`` is and its JSON object (None without it)."""
    for i, word in enumerate(words):
        name, eq, inline = word.partition("=")
        if name.replace("_", "-") != "--speculative-config":
            continue
        text = inline if eq else (words[i + 1] if i + 1 < len(words) else "")
        try:
            spec = json.loads(text)
        except (ValueError, RecursionError) as exc:
            raise SimArgError(
                f"vllm serve: error: argument --speculative-config: invalid loads value: "
                f"{text!r} ({exc})"
            ) from None
        if not isinstance(spec, dict):
            raise SimArgError("vllm serve: error: argument --speculative-config: not an object")
        return i, spec
    return None


SYNTHETIC_KEYS = ("rejection_sample_method", "synthetic_acceptance_length")
"""``SpeculativeConfig``'s synthetic rejection sampler (0.34.0; 0.11.0 has none)."""

NGRAM_KEYS = ("prompt_lookup_max", "prompt_lookup_min")
"""``SpeculativeConfig``'s n-gram match window (0.11.0, 0.32.0 and 0.34.0 have both): taken and
not modelled (the face runs n-gram without drafting)."""


def _without_extra_keys(
    words: list[str], schedule_known: bool, synthetic_known: bool = False
) -> tuple[list[str], Any, dict[str, Any]]:
    """The words with ``--speculative-config`` cut to the keys the engine models, the
    per-batch-size K as given (None without one), and the keys the release's
    ``SpeculativeConfig`` does not know (0.11's ignores them — the per-batch-size K too, when
    ``schedule_known`` is False; 0.34's refuses them when it is built: :func:`resolve_vllm`).
    The synthetic sampler's keys the release knows are read by :func:`_synthetic`."""
    found = _spec_json(words)
    if found is None:
        return words, None, {}
    i, spec = found
    modelled = {"method", "model", "num_speculative_tokens"}
    known = modelled | set(NGRAM_KEYS) | ({SCHEDULE_KEY} if schedule_known else set())
    known |= set(SYNTHETIC_KEYS) if synthetic_known else set()
    extra = {k: spec[k] for k in sorted(set(spec) - known)}
    clean = json.dumps({k: v for k, v in spec.items() if k in modelled})
    out = list(words)
    if "=" in out[i]:
        out[i] = out[i].partition("=")[0] + "=" + clean
    else:
        out[i + 1] = clean
    return out, spec.get(SCHEDULE_KEY) if schedule_known else None, extra


def _forbidden(extra: Mapping[str, Any]) -> SimArgError:
    """0.34's pydantic refusal of ``SpeculativeConfig`` keys it does not know."""
    rows = "\n".join(
        f"{key}\n  Unexpected keyword argument [type=unexpected_keyword_argument, "
        f"input_value={value!r}, input_type={type(value).__name__}]"
        for key, value in extra.items()
    )
    return SimArgError(
        f"{len(extra)} validation error{'s' if len(extra) > 1 else ''} for "
        f"SpeculativeConfig\n{rows}",
        "pydantic_core._pydantic_core.ValidationError",
    )


def _synthetic(words: Sequence[str]) -> tuple[str | None, Any]:
    """The synthetic sampler's method and length in ``--speculative-config`` (if any)."""
    found = _spec_json(words)
    if found is None:
        return None, None
    spec = found[1]
    return spec.get(SYNTHETIC_KEYS[0]), spec.get(SYNTHETIC_KEYS[1])


def parse_vllm(
    words: Sequence[str], release: str, schedule_known: bool, synthetic_known: bool = False
) -> ParsedArgs:
    """``serve MODEL [flags]`` → the face's parsed values (``config``: the engine's reading as
    a ``ServerConfig``; ``spec_schedule``; its own flags; ``--sim-*``). Raises
    :class:`SimArgError` with vLLM's message for what vLLM refuses."""
    args = list(words)
    if args[:1] != ["serve"]:
        raise SimArgError(
            "vllm: error: the simulator's vLLM face runs `serve MODEL [flags]` (vllm serve)"
        )
    method, length = _synthetic(args[1:]) if synthetic_known else (None, None)
    args, schedule, extra_keys = _without_extra_keys(args[1:], schedule_known, synthetic_known)
    engine = get_engine(VLLM)
    try:
        fields = engine.parse_args(["vllm", "serve"], args)
    except ConfigError as exc:
        raise SimArgError(f"vllm serve: error: argument {exc.key}: {exc.message}") from None
    extra = list(fields.pop("extra_args", ()))
    own, unknown = _own_parser().parse_known_args(extra)
    if "model_path" not in fields:
        raise SimArgError("vllm serve: error: the following arguments are required: model_tag")
    if schedule is not None:
        fields["options"] = ((SCHEDULE_KEY, json.dumps(schedule)),)
    try:
        config = ServerConfig(engine=VLLM, engine_version=release, **fields)
    except (TypeError, ValueError) as exc:
        raise SimArgError(str(exc)) from None
    rows = sorted((int(a), int(b), int(k)) for a, b, k in schedule) if schedule else []
    given = _spec_json(list(words[1:]))
    values: dict[str, Any] = {
        **vars(own),
        "config": config,
        "spec_given": given[1] if given is not None else None,
        "spec_schedule": tuple(rows),
        "spec_forbidden": extra_keys if schedule_known else {},
        "synthetic": (method, length),
    }
    return ParsedArgs(values=values, unknown=split_unknown(unknown))


def _defaults(profile: Profile) -> tuple[int, int]:
    """vLLM's ``(max_num_seqs, max_num_batched_tokens)`` for its API server on this GPU."""
    large = profile.gpu.memory_gb >= 70 and "a100" not in profile.gpu.name.lower()
    return (1024, 8192) if large else (256, 2048)


def _capture(max_num_seqs: int, k: int, release: str, eager: bool) -> tuple[int, ...]:
    """The batch sizes decode steps run as CUDA graphs (``()`` with ``--enforce-eager``)."""
    if eager:
        return ()
    width = k + 1
    ceiling = min(2 * max_num_seqs * (width if release != "0.11.0" else 1), 512)
    top = max(min(ceiling // width, max_num_seqs), 1)
    counts = [n for n in (1, 2, 4) if n <= top] + list(range(8, min(top + 1, 256), 8))
    counts += list(range(256, top + 1, 16))
    return tuple(sorted({*counts, top}))


def _tier_capture(
    schedule: Sequence[tuple[int, int, int]], k_max: int, max_num_seqs: int, eager: bool
) -> tuple[tuple[int, tuple[int, ...]], ...]:
    """0.34's CUDA graphs under a per-batch-size K: a tier per K of the dense schedule, each
    over the request counts up to the largest batch drafting that K whose K + 1 tokens per
    request stay under the capture ceiling (``VllmConfig.get_decode_cudagraph_query_lens``
    and the default capture sizes of ``vllm/config/vllm.py``); ``()`` with ``--enforce-eager``."""
    if eager or not schedule:
        return ()
    ceiling = min(2 * max_num_seqs * (k_max + 1), 512)
    widest: dict[int, int] = {}
    chosen, rows = k_max, sorted(schedule)
    for batch in range(1, max_num_seqs + 1):
        for start, _end, k in rows:  # a gap takes the range before it; past the last, its K
            if start > batch:
                break
            chosen = k
        widest[min(chosen, k_max)] = batch
    tiers = []
    for k, most in sorted(widest.items()):
        most = min(most, 512)
        counts = [n for n in (1, 2, 4) if n <= most] + list(range(8, min(most + 1, 256), 8))
        counts += [*range(256, most + 1, 16), most]
        tiers.append((k, tuple(sorted({n for n in counts if n * (k + 1) <= ceiling}))))
    return tuple(tiers)


def kv_sizing(release: str) -> KvSizing:
    """Where the release's KV cache gets its memory: 0.34's extensible cache is sized after
    the CUDA graphs (on CUDA, by default), 0.11's inside a static budget."""
    return KvSizing.STATIC_BUDGET if release == "0.11.0" else KvSizing.AFTER_GRAPHS


def resolve_vllm(parsed: ParsedArgs, profile: Profile, release: str) -> ResolvedArgs:
    """The effective arguments vLLM runs (:func:`parse_vllm`'s values)."""
    v: Mapping[str, Any] = parsed.values
    config: ServerConfig = v["config"]
    if v.get("spec_forbidden"):
        raise _forbidden(v["spec_forbidden"])
    for issue in validate(config):
        # what specconsole knows vLLM refuses, in the words it checks it with (a port of 0,
        # the OS's choice, is the simulator's convenience)
        if issue.severity.value == "error" and not (issue.field == "port" and config.port == 0):
            raise SimArgError(f"{issue.field}: {issue.message}", "ValueError")
    tp = concept_value(config, Concept.PARALLEL_SIZE) or 1
    if tp > profile.gpu.count:
        raise SimArgError(
            f"Tensor parallel size ({tp}) cannot be larger than the number of available "
            f"GPUs ({profile.gpu.count}).",
            "ValueError",
        )
    mem = concept_value(config, Concept.MEMORY_FRACTION)
    mem = mem if mem is not None else 0.9
    if mem > 1.0:
        raise SimArgError(f"GPU memory utilization must be less than 1.0. Got {mem}.")
    seqs_default, batched_default = _defaults(profile)
    max_num_seqs = concept_value(config, Concept.MAX_CONCURRENCY) or seqs_default
    batched = v.get("max_num_batched_tokens") or batched_default
    method = concept_value(config, Concept.METHOD)
    algorithm = _METHODS.get(str(method)) if method is not None else None
    k = int(concept_value(config, Concept.DRAFT_LENGTH) or 0) if algorithm else 0
    speculative = algorithm is not None and algorithm != "NGRAM" and k > 0
    context = concept_value(config, Concept.CONTEXT_LENGTH) or profile.model.context_length
    names = v.get("served_model_name") or [config.model_path]
    draft = concept_value(config, Concept.DRAFT_MODEL)
    if draft is None and speculative:
        draft = profile.model.draft_name
    fixed = _fixed_accept(v.get("synthetic") or (None, None), k) if speculative else None
    capture = _capture(max_num_seqs, k if speculative else 0, release, bool(v.get("enforce_eager")))
    schedule = tuple(v.get("spec_schedule") or ()) if speculative else ()
    server_args: dict[str, Any] = {
        "model": config.model_path,
        "served_model_name": names[0],
        # echoed as given, as vLLM's "non-default args" record does (its own method words)
        "speculative_config": v.get("spec_given") if algorithm else None,
        "gpu_memory_utilization": mem,
        "max_num_seqs": max_num_seqs,
        "max_num_batched_tokens": batched,
        "max_model_len": context,
        "tensor_parallel_size": tp,
        "enforce_eager": bool(v.get("enforce_eager")),
        "host": config.host,
        "port": config.port,
        "seed": v.get("seed"),
    }
    return ResolvedArgs(
        model_path=config.model_path,
        served_model_name=names[0],
        draft_model_path=draft,
        algorithm=algorithm,
        num_steps=k if speculative else 0,
        topk=1 if speculative else 0,
        num_draft_tokens=k + 1 if speculative else 1,
        memory_fraction=float(mem),
        capture_bs=capture,
        max_running=int(max_num_seqs),
        max_total_tokens=None,
        tp_size=int(tp),
        context_length=int(context),
        chunked_prefill_size=int(batched),
        max_prefill_tokens=int(batched),
        host=config.host,
        port=int(config.port),
        seed=v.get("seed"),
        kv_sizing=kv_sizing(release),
        kv_holds_context=True,
        server_args=server_args,
        unknown_args=dict(parsed.unknown),
        steps_by_batch=schedule,
        capture_by_steps=(
            _tier_capture(schedule, k, int(max_num_seqs), bool(v.get("enforce_eager")))
            if release != "0.11.0"
            else ()
        ),
        edge_cliff=max(1.0, float(v.get("sim_edge_cliff") or 1.0)),
        edge_cliff_at=max(0, int(v.get("sim_edge_cliff_at") or 0)),
        fixed_accept=fixed,
    )


def _fixed_accept(synthetic: tuple[str | None, Any], k: int) -> FixedAccept | None:
    """vLLM's synthetic rejection sampler (``rejection_sample_method = "synthetic"``): the
    length resolved to its minimum-variance unconditional rates at the configured K
    (``_acceptance_length_to_rates``); its refusals in its words."""
    method, length = synthetic
    if method != "synthetic":
        if length is not None:
            raise SimArgError(
                "synthetic_acceptance_rates / synthetic_acceptance_length are only valid with "
                "rejection_sample_method='synthetic'."
            )
        return None
    if length is None or isinstance(length, bool) or not isinstance(length, int | float):
        raise SimArgError(
            "rejection_sample_method='synthetic' requires exactly one of "
            "synthetic_acceptance_rates or synthetic_acceptance_length."
        )
    if not 1.0 <= float(length) <= float(k + 1):
        raise SimArgError(f"synthetic_acceptance_length must be in [1, {k + 1}], got {length}.")
    drafts = float(length) - 1.0
    full = int(drafts)
    rates = ([1.0] * full + [drafts - full] + [0.0] * (k - full - 1))[:k]
    return FixedAccept(float(length), "synthetic", tuple(rates))
