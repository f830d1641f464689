"""SGLang's launch arguments resolved by SGLang's rules onto the box: what the simulated
server runs, as the physics' :class:`~specconsole.sim.physics.launch.ResolvedArgs`.

Why apart from parsing (:mod:`.args`): resolution is where SGLang's own decisions live — the
memory fraction and CUDA-graph batch size it picks for the GPU, the batch sizes it captures,
the speculative tree it fills in, the running-request cap it resets — each logging SGLang's
own warning text. Pure: no I/O, so the performance model and the tests resolve a
configuration without a process.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from specconsole.core.config.releases import has_feature
from specconsole.sim.arguments import ParsedArgs, SimArgError
from specconsole.sim.faces.sglang.adaptive import load_spec
from specconsole.sim.faces.sglang.args import imitated_engine, server_limits
from specconsole.sim.physics.adaptive import AdaptiveSpec
from specconsole.sim.physics.launch import FixedAccept, ResolvedArgs
from specconsole.sim.profile import Profile

SERVER_LIMITS = server_limits()
"""The bounds of SGLang's integer keys, as its engine declares them."""

EAGLE_FAMILY = frozenset({"EAGLE", "EAGLE3", "STANDALONE"})
"""Algorithms the simulator models with a draft tree (NEXTN is rewritten to EAGLE)."""

KNOWN_ALGORITHMS = frozenset({"EAGLE", "EAGLE3", "NEXTN", "STANDALONE", "NGRAM"})

# SGLang's own texts for what it changes silently, as its launcher logs them. The SGLang engine
# (engines/sglang) knows them too but does not expose them through the registry, so the two
# are held identical by tests/sim/test_engine_knowledge.py.
MSG_MAX_RUNNING_48 = (
    "Max running requests is reset to 48 for speculative decoding. You can override this by "
    "explicitly setting --max-running-requests."
)
MSG_MIXED_CHUNK = "Mixed chunked prefill is disabled because of using eagle speculative decoding."
MSG_TOPK1_DRAFT = (
    "speculative_num_draft_tokens is adjusted to speculative_num_steps + 1 when "
    "speculative_eagle_topk == 1"
)
AUTO_SPEC_PARAMS: tuple[int, int, int] = (3, 1, 4)
"""SGLang's auto (steps, topk, draft tokens) for STANDALONE and most model families; a
profile's ``[model] auto_*`` keys give its architecture's values."""


def auto_gpu_settings(gpu_memory_gb: float, tp_size: int) -> tuple[int, int]:
    """SGLang's auto ``(chunked_prefill_size, cuda_graph_max_bs)`` for a GPU size."""
    if gpu_memory_gb < 20:
        return 2048, 8
    if gpu_memory_gb < 35:
        return 2048, 24 if tp_size < 4 else 80
    if gpu_memory_gb < 60:
        return 4096, 32 if tp_size < 4 else 160
    if gpu_memory_gb < 160:
        return 8192, 256 if tp_size < 4 else 512
    return 16384, 512


def auto_mem_fraction_static(
    gpu_memory_gb: float, chunked_prefill_size: int, max_bs: int, tp_size: int, eagle: bool
) -> float:
    """SGLang's (v0.5.9) auto ``mem_fraction_static``."""
    gpu_mem_mb = gpu_memory_gb * 1024
    reserved = 512 + max(chunked_prefill_size, 2048) * 1.5 + max_bs * 2 + tp_size / 8 * 1024
    if eagle:
        reserved += 2 * 1024
    if gpu_memory_gb > 60:
        reserved = max(reserved, 10 * 1024)
    return round((gpu_mem_mb - reserved) / gpu_mem_mb, 3)


def capture_batch_sizes(max_bs: int, speculative: bool) -> tuple[int, ...]:
    """SGLang's CUDA-graph capture ladder up to ``max_bs``."""
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


_SIM_LIMITS: dict[str, int] = {
    **SERVER_LIMITS,
    "dp_size": 1024,
    "max_total_tokens": 2**40,
    "chunked_prefill_size": 2**31,
    "max_prefill_tokens": 2**31,
    "decode_log_interval": 1_000_000,
    "cuda_graph_max_bs_prefill": SERVER_LIMITS["cuda_graph_max_bs"],
}
"""The simulator's bounds on integer flags: the configuration's own (``SERVER_LIMITS``) and its
sizes; a tree of 10^8 steps would make the performance model run for hours (issue 27)."""


def _check_bounds(values: Mapping[str, Any]) -> None:
    for name, limit in _SIM_LIMITS.items():
        value = values.get(name)
        if isinstance(value, int) and not isinstance(value, bool) and value > limit:
            flag = "--" + name.replace("_", "-")
            raise SimArgError(
                f"{flag} {value:,} is above the simulator's limit of {limit:,}; "
                "a real box runs far below it"
            )


def resolve(parsed: ParsedArgs | Mapping[str, Any], profile: Profile) -> ResolvedArgs:
    """Apply SGLang's rules to parsed flags; raises :class:`SimArgError` as SGLang would."""
    if isinstance(parsed, ParsedArgs):
        v: Mapping[str, Any] = parsed.values
        unknown: Mapping[str, Any] = parsed.unknown
    else:
        v, unknown = parsed, {}
    warnings: list[str] = []
    _check_bounds(v)
    model_path = v.get("model_path") or profile.model.name
    tp = int(v.get("tp_size") or 1)
    if tp < 1:
        raise SimArgError(f"--tp-size must be at least 1, got {tp}")
    if tp > profile.gpu.count:
        raise SimArgError(
            f"tp_size={tp} needs {tp} GPUs but this box has {profile.gpu.count} "
            f"({profile.gpu.name}); lower --tp-size",
            "RuntimeError",
        )
    algo_raw = v.get("speculative_algorithm")
    algorithm: str | None = None
    if algo_raw:
        algorithm = str(algo_raw).upper()
        if algorithm not in KNOWN_ALGORITHMS:
            raise SimArgError(
                f"argument --speculative-algorithm: invalid choice: '{algo_raw}' "
                f"(choose from {', '.join(sorted(KNOWN_ALGORITHMS))})"
            )
        if algorithm == "NEXTN":
            algorithm = "EAGLE"
    chunked_auto, max_bs_auto = auto_gpu_settings(profile.gpu.memory_gb, tp)
    chunked = v.get("chunked_prefill_size") or chunked_auto
    cuda_graph_max_bs = v.get("cuda_graph_max_bs") or max_bs_auto
    max_running = v.get("max_running_requests")
    steps = v.get("speculative_num_steps")
    topk = v.get("speculative_eagle_topk")
    draft = v.get("speculative_num_draft_tokens")
    draft_path = v.get("speculative_draft_model_path")
    speculative = algorithm is not None and algorithm != "NGRAM"
    adaptive: AdaptiveSpec | None = None
    if speculative:
        if max_running is None:
            max_running = 48
            warnings.append(MSG_MAX_RUNNING_48)
        warnings.append(MSG_MIXED_CHUNK)
        if v.get("speculative_adaptive"):
            adaptive, steps, topk, draft = _adaptive(v, unknown, algorithm, profile, warnings)
        if steps is None:
            if topk is not None or draft is not None:
                raise SimArgError(
                    "speculative_eagle_topk and speculative_num_draft_tokens must be unset "
                    "when speculative_num_steps is unset (auto); set all three or none",
                    "AssertionError",
                )
            if algorithm == "STANDALONE":
                steps, topk, draft = AUTO_SPEC_PARAMS
            else:
                m = profile.model
                steps, topk, draft = m.auto_num_steps, m.auto_eagle_topk, m.auto_num_draft_tokens
        if draft is None and topk == 1:
            draft = 0  # SGLang's topk-1 rule below replaces it with steps + 1 (and warns)
        if topk is None or draft is None:
            raise SimArgError(
                "set --speculative-eagle-topk and --speculative-num-draft-tokens together "
                "with --speculative-num-steps (all three or none)",
                "AssertionError",
            )
        if topk == 1 and draft != steps + 1:
            warnings.append(MSG_TOPK1_DRAFT)
            draft = steps + 1
        for name, value in (
            ("speculative_num_steps", steps),
            ("speculative_eagle_topk", topk),
            ("speculative_num_draft_tokens", draft),
        ):
            if int(value) < 1:
                raise SimArgError(f"{name} must be >= 1 for speculative decoding, got {value}")
        if draft_path is None:
            draft_path = profile.model.draft_name
    else:
        steps, topk, draft = 0, 0, 1
        if max_running is None:
            max_running = 4096
    mem_fraction = v.get("mem_fraction_static")
    if mem_fraction is None:
        mem_fraction = auto_mem_fraction_static(
            profile.gpu.memory_gb,
            int(chunked),
            int(cuda_graph_max_bs),
            tp,
            eagle=algorithm in EAGLE_FAMILY,
        )
    if not 0.0 < float(mem_fraction) < 1.0:
        raise SimArgError(f"--mem-fraction-static must be in (0, 1), got {mem_fraction}")
    thresholds = {}
    for key in ("speculative_accept_threshold_single", "speculative_accept_threshold_acc"):
        value = v.get(key)
        value = 1.0 if value is None else float(value)
        if not 0.0 < value <= 1.0:
            raise SimArgError(f"--{key.replace('_', '-')} must be in (0, 1], got {value}")
        thresholds[key] = value
    if int(max_running) < 1:
        raise SimArgError(f"--max-running-requests must be >= 1, got {max_running}")
    capture: tuple[int, ...] = ()
    if not v.get("disable_cuda_graph"):
        # Capture sizes are limited to the request pool (max_running_requests).
        capture = capture_batch_sizes(min(int(cuda_graph_max_bs), int(max_running)), speculative)
    context = v.get("context_length") or profile.model.context_length
    decode_log_interval = int(v.get("decode_log_interval") or 40)
    resolved_values: dict[str, Any] = {
        "model_path": model_path,
        "tokenizer_path": v.get("tokenizer_path") or model_path,
        "served_model_name": v.get("served_model_name") or model_path,
        "host": v.get("host") or "127.0.0.1",
        "port": int(v["port"]) if v.get("port") is not None else 30000,
        "tp_size": tp,
        "dp_size": int(v.get("dp_size") or 1),
        "pp_size": 1,
        "mem_fraction_static": float(mem_fraction),
        "max_running_requests": int(max_running),
        "max_total_tokens": v.get("max_total_tokens"),
        "chunked_prefill_size": int(chunked),
        "max_prefill_tokens": int(v.get("max_prefill_tokens") or 16384),
        "cuda_graph_max_bs": int(cuda_graph_max_bs),
        "cuda_graph_bs": list(capture),
        "disable_cuda_graph": bool(v.get("disable_cuda_graph")),
        "context_length": int(context),
        "attention_backend": v.get("attention_backend"),
        "speculative_algorithm": algorithm,
        "speculative_draft_model_path": draft_path,
        "speculative_num_steps": steps if speculative else None,
        "speculative_eagle_topk": topk if speculative else None,
        "speculative_num_draft_tokens": draft if speculative else None,
        "speculative_adaptive": adaptive is not None,
        "speculative_adaptive_config": v.get("speculative_adaptive_config"),
        **thresholds,
        "enable_mixed_chunk": False,
        "decode_log_interval": decode_log_interval,
        "enable_metrics": bool(v.get("enable_metrics")),
        "log_level": v.get("log_level") or "info",
        "random_seed": v.get("random_seed"),
        "trust_remote_code": bool(v.get("trust_remote_code")),
    }
    server_args = {**{k: val for k, val in unknown.items()}, **resolved_values}
    return ResolvedArgs(
        model_path=model_path,
        served_model_name=resolved_values["served_model_name"],
        draft_model_path=draft_path,
        algorithm=algorithm,
        num_steps=int(steps),
        topk=int(topk),
        num_draft_tokens=int(draft),
        memory_fraction=float(mem_fraction),
        capture_bs=capture,
        max_running=int(max_running),
        max_total_tokens=v.get("max_total_tokens"),
        tp_size=tp,
        context_length=int(context),
        chunked_prefill_size=int(chunked),
        max_prefill_tokens=resolved_values["max_prefill_tokens"],
        host=resolved_values["host"],
        port=resolved_values["port"],
        seed=v.get("random_seed"),
        accept_threshold_single=thresholds["speculative_accept_threshold_single"],
        accept_threshold_acc=thresholds["speculative_accept_threshold_acc"],
        warnings=tuple(warnings),
        server_args=server_args,
        unknown_args=dict(unknown),
        adaptive=adaptive if speculative else None,
        fixed_accept=_simulated_accept(v, profile) if speculative else None,
    )


ADAPTIVE_OFF: dict[str, str] = {
    "enable_dp_attention": "attention DP is not supported (adaptive tier decisions are not "
    "synchronized across DP ranks)",
    "enable_multi_layer_eagle": "enable_multi_layer_eagle=True is not supported "
    "(MultiLayerEagleWorkerV2 does not implement adaptive)",
    "enable_two_batch_overlap": "enable_two_batch_overlap=True is not supported (adaptive "
    "state swap would discard the TboAttnBackend wrapper)",
    "enable_pdmux": "enable_pdmux=True is not supported (adaptive state swap does not update "
    "decode_attn_backend_group)",
}
"""SGLang's ``adaptive_unsupported_reason`` for the flags the box keeps unmodelled (the
engine's ``UNSUPPORTED_FLAGS``, held equal by tests/sim/test_engine_knowledge.py)."""


def _adaptive(
    v: Mapping[str, Any],
    unknown: Mapping[str, Any],
    algorithm: str | None,
    profile: Profile,
    warnings: list[str],
) -> tuple[AdaptiveSpec | None, Any, Any, Any]:
    """SGLang's adaptive resolution: turned off with its warning when unsupported, else the
    loaded file, topk 1, the initial step (the middle candidate when unset; one of them, or
    SGLang's ValueError) and draft tokens = steps + 1."""
    steps, topk, draft = (
        v.get("speculative_num_steps"),
        v.get("speculative_eagle_topk"),
        v.get("speculative_num_draft_tokens"),
    )
    reason = None
    if algorithm not in ("EAGLE", "EAGLE3"):
        reason = f"speculative_algorithm={algorithm} (only EAGLE/EAGLE3 are supported)"
    elif topk is not None and topk != 1:
        reason = f"speculative_eagle_topk={topk} (only topk=1 is supported)"
    else:
        reason = next((why for flag, why in ADAPTIVE_OFF.items() if unknown.get(flag)), None)
    if reason is not None:
        warnings.append(
            f"speculative_adaptive disabled: {reason}. Falling back to static speculative params."
        )
        return None, steps, topk, draft
    spec = load_spec(v.get("adaptive_config_text"), profile.sim.version)
    candidates = list(spec.candidates)
    if steps is None:
        steps = candidates[len(candidates) // 2]
    if steps not in candidates:
        raise SimArgError(
            f"--speculative-num-steps={steps} is not in the adaptive config candidate_steps "
            f"{candidates}. Pass one of those values."
        )
    return spec, steps, 1 if topk is None else topk, int(steps) + 1


def _simulated_accept(v: Mapping[str, Any], profile: Profile) -> FixedAccept | None:
    """``SGLANG_SIMULATE_ACC_LEN`` (> 0: on) and its method (the release's default)."""
    length = v.get("simulate_acc_len")
    if length is None or float(length) <= 0:
        return None
    matches = has_feature(imitated_engine().releases, "simulated_accept_matches_mean",
                          profile.sim.version)  # fmt: skip
    method = v.get("simulate_acc_method") or (
        "multinomial" if matches is False else "match-expected"
    )
    if method not in ("multinomial", "match-expected"):
        raise SimArgError(f"Invalid simulate_acc_method: {method}")
    return FixedAccept(float(length), method)
