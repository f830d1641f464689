"""The simulated box's physics: a memory model and a speculative-decoding performance model.

Everything the simulator does that a tuner cares about follows from here, by equations over a
:class:`~specconsole.sim.profile.Profile` — never from a table of answers — so configurations
nobody measured (more draft steps, wider trees, other memory fractions) behave plausibly:

* **Memory** (per GPU, GiB): the budget ``gpu_memory x memory_fraction`` holds the CUDA
  context, target and draft weights, speculative buffers sized by
  ``captured batch x draft tokens`` and, in what is left, the KV pool. An empty pool fails the
  load ("Not enough memory"); with a static budget (SGLang, vLLM 0.11) memory outside it must
  hold the CUDA-graph pools plus an activation reserve, else capture fails; with the KV cache
  sized after the graphs (vLLM 0.34) the graphs and the reserve count inside it.
* **Acceptance**: a draft tree of ``num_draft_tokens - 1`` nodes over ``num_steps`` depths
  with at most ``topk`` nodes per depth; the expected tokens per verify step (accept length,
  bonus token included) grows with depth and saturates.
* **Step time**: a target forward over ``batch x num_draft_tokens`` tokens, ``num_steps``
  draft forwards over ``batch x topk`` tokens, attention over the context and per-request
  scheduling overhead; slower without CUDA graphs.
* :func:`predict` combines them for a closed-loop benchmark at one concurrency.

The launch is a face's :class:`~specconsole.sim.physics.launch.ResolvedArgs`: nothing here
knows which engine resolved it (a deployed configuration is resolved through its face by
:mod:`specconsole.sim.forecast`). Pure and deterministic: no I/O, no clocks, no global random
state.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from enum import StrEnum
from functools import lru_cache

from specconsole.sim.physics.acceptance import accept_rate, args_accept_distribution
from specconsole.sim.physics.adaptive import AdaptiveSpec, graph_states, steady_steps
from specconsole.sim.physics.launch import KvSizing, ResolvedArgs
from specconsole.sim.physics.textkind import TextKind, perf_for
from specconsole.sim.profile import PerfSection, Profile, default_profile_path, load_profile_cached

GIB = float(1 << 30)
MIB = float(1 << 20)

DEFAULT_INPUT_LEN = 1024
"""Prompt tokens per request of the calibration benchmark (bench_serving ``random``)."""
DEFAULT_OUTPUT_LEN = 512
"""Output tokens per request of the calibration benchmark (``ignore_eos``; as
``bench_speculative.py``)."""
CALIBRATION_LADDER: tuple[int, ...] = (1, 4, 16, 32, 64)
"""Concurrency levels of the calibration sweep; its peak is the best level."""


class LoadFailure(StrEnum):
    """How a load can fail in the memory model."""

    NOT_ENOUGH_MEMORY = "not_enough_memory"
    """The KV pool would be empty: ``RuntimeError: Not enough memory ...``."""
    CUDA_GRAPH_CAPTURE = "cuda_graph_capture"
    """CUDA-graph capture ran out of memory: ``Capture cuda graph failed: ...``."""
    WEIGHTS_OOM = "weights_oom"
    """The weights alone do not fit on the GPUs (too small ``--tp-size``): a torch OOM
    while loading."""


@dataclass(frozen=True, slots=True)
class MemoryPlan:
    """Per-GPU memory after each load phase (GiB) and the resulting KV capacity."""

    total_gb: float
    avail_start_gb: float
    """Free memory before weights load (after the CUDA context)."""
    target_weights_gb: float
    avail_after_target_gb: float
    draft_weights_gb: float
    avail_after_draft_gb: float
    spec_workspace_gb: float
    static_budget_gb: float
    target_kv_bytes_per_token: int
    draft_kv_bytes_per_token: int
    max_total_num_tokens: int
    """KV pool size in tokens (``<= 0`` means the load fails)."""
    avail_after_kv_gb: float
    graph_target_gb: float
    graph_draft_gb: float
    activation_reserve_gb: float
    avail_after_target_graph_gb: float
    avail_after_graph_gb: float
    failure: LoadFailure | None = None
    failed_graph: str | None = None
    """``"target"`` or ``"draft"``: which model's weights or graphs failed;
    :data:`SHORT_OF_CONTEXT` when the KV pool loads but cannot hold one request of the
    context length (an engine that refuses that: ``ResolvedArgs.kv_holds_context``)."""

    @property
    def target_kv_gb(self) -> float:
        return max(self.max_total_num_tokens, 0) * self.target_kv_bytes_per_token / GIB

    @property
    def draft_kv_gb(self) -> float:
        return max(self.max_total_num_tokens, 0) * self.draft_kv_bytes_per_token / GIB


SHORT_OF_CONTEXT = "context"
"""``MemoryPlan.failed_graph`` when the KV pool holds less than one request of the context
length and the engine refuses to start for it."""


def plan_memory(args: ResolvedArgs, profile: Profile) -> MemoryPlan:
    """Walk the load phases of one GPU and size the KV pool, in the order the engine sizes
    it (``args.kv_sizing``)."""
    plan = _static_budget_plan(args, profile)
    if args.kv_sizing is KvSizing.AFTER_GRAPHS and plan.failure is not LoadFailure.WEIGHTS_OOM:
        plan = _kv_after_graphs(plan, args, profile)
    if (
        args.kv_holds_context
        and plan.failure is None
        and 0 < plan.max_total_num_tokens < args.context_length
    ):
        plan = replace(plan, failure=LoadFailure.NOT_ENOUGH_MEMORY, failed_graph=SHORT_OF_CONTEXT)
    return plan


def _kv_after_graphs(plan: MemoryPlan, args: ResolvedArgs, profile: Profile) -> MemoryPlan:
    """The KV pool sized last: what the weights, the speculative workspace, the CUDA graphs
    and the activation reserve leave within the memory fraction (graphs inside it)."""
    total = plan.total_gb
    graphs = plan.graph_target_gb + plan.graph_draft_gb
    budget = total * args.memory_fraction
    used = (
        profile.memory.cuda_context_gb
        + plan.target_weights_gb
        + plan.draft_weights_gb
        + plan.spec_workspace_gb
        + graphs
        + plan.activation_reserve_gb
    )
    per_token = plan.target_kv_bytes_per_token + plan.draft_kv_bytes_per_token
    rest = budget - used
    tokens = math.floor(rest * GIB / per_token) if rest > 0 else 0
    failure: LoadFailure | None = None
    failed: str | None = None
    if used > total:
        failure, failed = LoadFailure.CUDA_GRAPH_CAPTURE, "target"
    elif tokens <= 0:
        failure = LoadFailure.NOT_ENOUGH_MEMORY
    kv = max(tokens, 0) * per_token / GIB
    after_graphs = plan.avail_after_draft_gb - plan.spec_workspace_gb - graphs
    return replace(
        plan,
        static_budget_gb=budget,
        max_total_num_tokens=tokens,
        avail_after_target_graph_gb=after_graphs + plan.graph_draft_gb,
        avail_after_graph_gb=after_graphs,
        avail_after_kv_gb=after_graphs - kv,
        failure=failure,
        failed_graph=failed,
    )


def _static_budget_plan(args: ResolvedArgs, profile: Profile) -> MemoryPlan:
    """The KV pool inside a static budget, the CUDA graphs outside it."""
    mem = profile.memory
    shard = mem.reference_tp / args.tp_size
    total = profile.gpu.memory_gb
    avail_start = total - mem.cuda_context_gb
    w_target = mem.target_weights_gb * shard
    w_draft = mem.draft_weights_gb * shard if args.speculative else 0.0
    kv_target = max(1, round(mem.target_kv_bytes_per_token * shard))
    kv_draft = round(mem.draft_kv_bytes_per_token * shard) if args.speculative else 0
    slots = args.max_capture_bs * args.max_draft_tokens  # sized for the longest draft
    workspace = mem.spec_workspace_mb_per_slot * slots * MIB / GIB if args.speculative else 0.0
    static_budget = total * args.memory_fraction
    avail_after_target = avail_start - w_target
    avail_after_draft = avail_after_target - w_draft
    rest_gb = avail_after_draft - workspace - total * (1.0 - args.memory_fraction)
    tokens = math.floor(rest_gb * GIB / (kv_target + kv_draft)) if rest_gb > 0 else 0
    if args.max_total_tokens is not None and tokens > 0:
        tokens = min(tokens, int(args.max_total_tokens))
    kv_gb = max(tokens, 0) * (kv_target + kv_draft) / GIB
    avail_after_kv = avail_after_draft - workspace - kv_gb
    graph_total = 0.0
    if args.capture_bs:
        graph_total = mem.graph_base_gb + mem.graph_mb_per_slot * graph_slots(args) * MIB / GIB
    draft_share = 0.3 if args.speculative else 0.0
    graph_target = graph_total * (1.0 - draft_share)
    graph_draft = graph_total * draft_share
    failure: LoadFailure | None = None
    failed_graph: str | None = None
    if avail_after_target < 0:
        failure, failed_graph = LoadFailure.WEIGHTS_OOM, "target"
    elif avail_after_draft < 0:
        failure, failed_graph = LoadFailure.WEIGHTS_OOM, "draft"
    elif tokens <= 0:
        failure = LoadFailure.NOT_ENOUGH_MEMORY
    elif avail_after_kv - mem.activation_reserve_gb < graph_target:
        failure, failed_graph = LoadFailure.CUDA_GRAPH_CAPTURE, "target"
    elif avail_after_kv - mem.activation_reserve_gb < graph_target + graph_draft:
        failure, failed_graph = LoadFailure.CUDA_GRAPH_CAPTURE, "draft"
    return MemoryPlan(
        total_gb=total,
        avail_start_gb=avail_start,
        target_weights_gb=w_target,
        avail_after_target_gb=avail_after_target,
        draft_weights_gb=w_draft,
        avail_after_draft_gb=avail_after_draft,
        spec_workspace_gb=workspace,
        static_budget_gb=static_budget,
        target_kv_bytes_per_token=kv_target,
        draft_kv_bytes_per_token=kv_draft,
        max_total_num_tokens=tokens,
        avail_after_kv_gb=avail_after_kv,
        graph_target_gb=graph_target,
        graph_draft_gb=graph_draft,
        activation_reserve_gb=mem.activation_reserve_gb,
        avail_after_target_graph_gb=avail_after_kv - graph_target,
        avail_after_graph_gb=avail_after_kv - graph_target - graph_draft,
        failure=failure,
        failed_graph=failed_graph,
    )


def graph_slots(args: ResolvedArgs) -> int:
    """Captured batch x verify tokens the CUDA graphs hold: one state per adaptive candidate,
    each over the captured sizes that route to a bucket holding it (``sim.physics.adaptive``);
    one tier per draft length where the engine captures per length."""
    if args.capture_by_steps:  # a tier of graphs per draft length (vLLM 0.34's dynamic K)
        return sum(max(sizes, default=0) * (k + 1) for k, sizes in args.capture_by_steps)
    if args.adaptive is None:
        return args.max_capture_bs * args.num_draft_tokens
    return sum(bs * (step + 1) for step, bs in graph_states(args.adaptive, args.capture_bs))


# ---------------------------------------------------------------------------------------------
# Time
# ---------------------------------------------------------------------------------------------


def step_mix(
    args: ResolvedArgs, batch: int, perf: PerfSection
) -> tuple[tuple[ResolvedArgs, float], ...]:
    """The arguments a steady stream of decode steps of ``batch`` requests runs, with their
    shares: one entry, except when an adaptive bucket's EMA keeps moving between
    candidates (:func:`specconsole.sim.physics.adaptive.steady_steps`); a per-batch-size K drafts
    the batch's."""
    if args.adaptive is None:
        return ((args.at_batch(batch), 1.0),)
    bucket = args.adaptive.bucket_for(batch, args.capture_bs)
    candidates = args.adaptive.buckets[bucket].candidates
    if len(candidates) == 1:
        return ((args.with_steps(candidates[0]), 1.0),)
    accepted = tuple((s, _mean_length(args.with_steps(s), perf) - 1.0) for s in candidates)
    mix = _settled(args.adaptive, bucket, args.num_steps, accepted)
    return tuple((args.with_steps(s), share) for s, share in mix)


@lru_cache(maxsize=1024)
def _settled(
    spec: AdaptiveSpec, bucket: int, initial: int, accepted: tuple[tuple[int, float], ...]
) -> tuple[tuple[int, float], ...]:
    return steady_steps(spec, bucket, initial, dict(accepted))


def _mean_length(args: ResolvedArgs, perf: PerfSection) -> float:
    return sum((i + 1) * p for i, p in enumerate(args_accept_distribution(args, perf)))


def step_time(args: ResolvedArgs, profile: Profile, batch: int, context: float) -> float:
    """Seconds of one decode iteration (draft + verify with speculation) for ``batch``
    running requests whose sequences average ``context`` tokens."""
    perf = profile.perf
    if batch <= 0:
        return 0.0
    tokens = batch * args.num_draft_tokens
    sharp = perf.verify_knee_sharpness
    # Smooth roofline: memory-bound floor until the forward's tokens make it compute-bound.
    roofline = (perf.verify_base_ms**sharp + (perf.verify_ms_per_token * tokens) ** sharp) ** (
        1.0 / sharp
    )
    ms = (
        roofline
        + perf.verify_ms_per_token_sq * tokens * tokens
        + perf.attention_ms_per_token_per_kctx * tokens * context / 1000.0
        + perf.scheduler_ms_per_req * batch
        + perf.tree_ms_per_req * perf.tree_growth ** (args.num_draft_tokens - 1) * batch
    )
    if args.speculative:
        ms += args.num_steps * (
            perf.draft_step_base_ms + perf.draft_step_ms_per_token * batch * args.topk
        )
    if batch > args.max_capture_bs:
        ms *= perf.no_cuda_graph_factor
    if args.edge_cliff > 1.0 and args.at_edge(batch):  # a planted fault (--sim-edge-cliff)
        ms *= args.edge_cliff
    return ms / 1000.0


def prefill_time(args: ResolvedArgs, profile: Profile, tokens: int) -> float:
    """Seconds to prefill ``tokens`` prompt tokens, chunked by ``chunked_prefill_size``."""
    if tokens <= 0:
        return 0.0
    chunk = args.chunked_prefill_size if args.chunked_prefill_size > 0 else tokens
    chunks = -(-tokens // chunk)
    perf = profile.perf
    return (chunks * perf.prefill_base_ms + perf.prefill_ms_per_token * tokens) / 1000.0


def uses_cuda_graph(args: ResolvedArgs, batch: int) -> bool:
    """Whether a decode batch of this size runs on a captured graph."""
    return 0 < batch <= args.max_capture_bs


def running_limit(args: ResolvedArgs, plan: MemoryPlan, input_len: int, output_len: int) -> int:
    """How many requests of this shape can decode at once: the running cap and the KV
    pool (each request reserves its prompt plus its whole output)."""
    per_request = max(input_len + output_len, 1)
    by_kv = max(plan.max_total_num_tokens, 0) // per_request
    return max(0, min(args.max_running, by_kv))


# ---------------------------------------------------------------------------------------------
# Prediction
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Prediction:
    """Expected steady-state behaviour of a closed-loop benchmark at one concurrency."""

    concurrency: int
    input_len: int
    output_len: int
    load_failure: LoadFailure | None
    max_total_num_tokens: int
    running: int
    """Requests decoding at once (the rest queue)."""
    queued: int
    accept_length: float
    accept_rate: float
    step_time_s: float
    cuda_graph: bool
    ttft_s: float
    """Time to first token of a request that does not queue (prefill of its wave)."""
    decode_steps: int
    """Verify steps a request needs after its first token."""
    e2e_latency_s: float
    """Prefill plus decode of one wave (excludes queueing)."""
    per_request_tok_s: float
    """``output_len / e2e_latency`` — bench_serving's output throughput at concurrency 1."""
    aggregate_tok_s: float
    """Output tokens per second over all requests."""
    decode_tok_s_per_request: float
    """``accept_length / step_time``: bench_speculative's ``speed``."""

    @property
    def ok(self) -> bool:
        return self.load_failure is None and self.running > 0


def decode_steps_needed(output_len: int, length: float) -> int:
    """Verify steps to produce ``output_len`` tokens: the prefill gives the first one."""
    return max(0, math.ceil((output_len - 1) / length - 1e-9))


def predict(
    args: ResolvedArgs,
    concurrency: int,
    input_len: int = DEFAULT_INPUT_LEN,
    output_len: int = DEFAULT_OUTPUT_LEN,
    profile: Profile | None = None,
    kind: TextKind = TextKind.CHAT,
) -> Prediction:
    """Expected rates of ``concurrency`` closed-loop clients sending fixed-length requests.

    ``kind`` is the kind of text the requests ask for (:mod:`specconsole.sim.physics.textkind`);
    the default, chat, is the profile's calibrated acceptance.

    Requests run in waves of ``running`` (the running limit): a wave is prefilled, then decodes
    in lockstep on the shared step clock until its requests finish. ``profile`` None: the
    default profile. (A deployed configuration: :func:`specconsole.sim.forecast.predict`.)
    """
    if profile is None:
        profile = load_profile_cached(str(default_profile_path()))
    if concurrency < 1 or input_len < 1 or output_len < 1:
        raise ValueError(
            "predict needs concurrency >= 1, input_len >= 1 and output_len >= 1, got "
            f"{concurrency}, {input_len}, {output_len}"
        )
    plan = plan_memory(args, profile)
    perf = perf_for(profile.perf, kind)
    running = min(concurrency, running_limit(args, plan, input_len, output_len))
    mix = step_mix(args, max(running, 1), perf)  # what the batch drafts (a schedule's choice)
    args = mix[0][0]
    length = sum(share * _mean_length(a, perf) for a, share in mix)
    rate = sum(share * accept_rate(a, _mean_length(a, perf)) for a, share in mix)
    if plan.failure is not None or running <= 0:
        return Prediction(
            concurrency,
            input_len,
            output_len,
            plan.failure,
            plan.max_total_num_tokens,
            0,
            concurrency,
            length,
            rate,
            0.0,
            False,
            math.inf,
            0,
            math.inf,
            0.0,
            0.0,
            0.0,
        )
    context = input_len + output_len / 2.0
    t_step = sum(share * step_time(a, profile, running, context) for a, share in mix)
    ttft = prefill_time(args, profile, running * input_len)
    steps = decode_steps_needed(output_len, length)
    e2e = ttft + steps * t_step
    return Prediction(
        concurrency=concurrency,
        input_len=input_len,
        output_len=output_len,
        load_failure=None,
        max_total_num_tokens=plan.max_total_num_tokens,
        running=running,
        queued=concurrency - running,
        accept_length=length,
        accept_rate=rate,
        step_time_s=t_step,
        cuda_graph=uses_cuda_graph(args, running),
        ttft_s=ttft,
        decode_steps=steps,
        e2e_latency_s=e2e,
        per_request_tok_s=output_len / e2e,
        aggregate_tok_s=running * output_len / e2e,
        decode_tok_s_per_request=length / t_step,
    )
