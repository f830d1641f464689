"""The simulated box's acceptance model: how many draft tokens a verify step accepts.

Why apart from the rest of the physics (:mod:`.model`): acceptance is the draft's quality and
the tree's shape, independent of memory and step time — a draft tree of ``num_draft_tokens - 1``
nodes over ``num_steps`` depths with at most ``topk`` nodes per depth; the expected tokens per
verify step (accept length, bonus token included) grows with depth and saturates. Pure and
deterministic.
"""

from __future__ import annotations

import math
from functools import lru_cache

from specconsole.sim.physics.launch import FixedAccept, ResolvedArgs
from specconsole.sim.profile import PerfSection


def depth_acceptance(perf: PerfSection, depth: int) -> float:
    """Conditional probability that the draft's token at ``depth`` (1-based) is accepted,
    given every shallower one was (single candidate)."""
    if depth > perf.accept_horizon:
        return perf.accept_beyond_horizon
    decay = perf.accept_decay ** (depth - 1)
    return perf.accept_later + (perf.accept_first - perf.accept_later) * decay


def relaxed_acceptance(
    q: float, threshold_single: float = 1.0, threshold_acc: float = 1.0
) -> float:
    """Acceptance under SGLang's relaxed-verification thresholds (1.0 = strict): the accept
    probability is raised to ``min(1, q / threshold_acc)``, and a share ``1 - threshold_single``
    of the remaining rejections passes the single-token threshold."""
    q = min(1.0, q / threshold_acc)
    return 1.0 - (1.0 - q) * threshold_single


def _covered(
    perf: PerfSection, depth: int, candidates: int, t_single: float = 1.0, t_acc: float = 1.0
) -> float:
    """Acceptance at ``depth`` with ``candidates`` tree nodes there (0 if none)."""
    if candidates <= 0:
        return 0.0
    q = relaxed_acceptance(depth_acceptance(perf, depth), t_single, t_acc)
    return 1.0 - (1.0 - q) ** (1.0 + perf.tree_branch_gain * (candidates - 1))


def _mean_from_nodes(perf: PerfSection, nodes: tuple[int, ...]) -> float:
    mean, reach = 1.0, 1.0
    for depth, m in enumerate(nodes, start=1):
        reach *= _covered(perf, depth, m)
        if reach <= 0.0:
            break
        mean += reach
    return mean


@lru_cache(maxsize=4096)
def tree_nodes(perf: PerfSection, steps: int, topk: int, draft_tokens: int) -> tuple[int, ...]:
    """Nodes per depth of the verify tree: ``draft_tokens - 1`` nodes, at most ``topk`` per
    depth, placed greedily where they raise the expected accept length most (as SGLang keeps
    the highest-scoring ``draft_tokens - 1`` candidates)."""
    nodes = [0] * max(steps, 0)
    budget = min(max(draft_tokens - 1, 0), steps * topk)
    for _ in range(budget):
        best_depth, best_mean = -1, -1.0
        for d in range(steps):
            if nodes[d] >= topk or (d > 0 and nodes[d - 1] == 0):
                continue
            nodes[d] += 1
            mean = _mean_from_nodes(perf, tuple(nodes))
            nodes[d] -= 1
            if mean > best_mean + 1e-12:
                best_depth, best_mean = d, mean
        if best_depth < 0:
            break
        nodes[best_depth] += 1
    return tuple(nodes)


@lru_cache(maxsize=4096)
def accept_distribution(
    perf: PerfSection,
    steps: int,
    topk: int,
    draft_tokens: int,
    threshold_single: float = 1.0,
    threshold_acc: float = 1.0,
) -> tuple[float, ...]:
    """``P(accept length == L)`` for ``L = 1 .. steps + 1`` (index 0 is L=1). The tree's
    shape is chosen under strict verification; thresholds only relax acceptance."""
    nodes = tree_nodes(perf, steps, topk, draft_tokens)
    reach = [1.0]
    for depth, m in enumerate(nodes, start=1):
        reach.append(reach[-1] * _covered(perf, depth, m, threshold_single, threshold_acc))
    reach.append(0.0)
    return tuple(reach[i] - reach[i + 1] for i in range(len(reach) - 1))


def accept_length(
    perf: PerfSection,
    steps: int,
    topk: int,
    draft_tokens: int,
    threshold_single: float = 1.0,
    threshold_acc: float = 1.0,
) -> float:
    """Expected tokens per request per verify step, bonus token included (1 = no gain)."""
    if steps <= 0:
        return 1.0
    dist = accept_distribution(perf, steps, topk, draft_tokens, threshold_single, threshold_acc)
    return sum((i + 1) * p for i, p in enumerate(dist))


def fixed_distribution(fixed: FixedAccept, steps: int) -> tuple[float, ...]:
    """``P(accept length == L)`` for ``L = 1 .. steps + 1`` under an engine's benchmark knob
    (the draft's own quality plays no part): SGLang draws one length per verify step,
    clamped to ``[1, steps + 1]`` — ``match-expected`` its floor or ceiling so the mean holds,
    ``multinomial`` a normal around it (σ 1) rounded; vLLM's synthetic sampler accepts
    position ``i`` with its unconditional rate."""
    top = steps + 1
    if fixed.method == "synthetic":
        reach = [1.0, *(min(1.0, max(0.0, r)) for r in fixed.rates[:steps])]
        reach += [0.0] * (top - len(reach)) + [0.0]
        return tuple(max(reach[i] - reach[i + 1], 0.0) for i in range(top))
    if fixed.method == "multinomial":
        length = fixed.length  # the draw is clamped, not the mean
        # clamped then rounded: k takes the half-open [k - 0.5, k + 0.5), the ends the tails
        edges = [0.0]
        edges += [
            0.5 * (1.0 + math.erf((k + 0.5 - length) / math.sqrt(2.0))) for k in range(1, top)
        ]
        edges.append(1.0)
        return tuple(max(edges[i + 1] - edges[i], 0.0) for i in range(top))
    length = min(max(fixed.length, 1.0), float(top))
    lower = int(length)
    out = [0.0] * top
    out[lower - 1] = 1.0 - (length - lower)
    if lower < top:
        out[lower] = length - lower
    return tuple(out)


def args_accept_distribution(args: ResolvedArgs, perf: PerfSection) -> tuple[float, ...]:
    """The accepted-tokens distribution a resolved configuration runs with (``(1.0,)``
    without speculative decoding; the engine's fixed acceptance when it sets one)."""
    if not args.speculative or args.num_steps <= 0:
        return (1.0,)
    if args.fixed_accept is not None:
        return fixed_distribution(args.fixed_accept, args.num_steps)
    return accept_distribution(
        perf,
        args.num_steps,
        args.topk,
        args.num_draft_tokens,
        args.accept_threshold_single,
        args.accept_threshold_acc,
    )


def accept_rate(args: ResolvedArgs, length: float) -> float:
    """SGLang's (latest) accept rate: accepted drafts over proposed drafts."""
    if not args.speculative or args.num_draft_tokens <= 1:
        return 0.0
    return (length - 1.0) / (args.num_draft_tokens - 1)
