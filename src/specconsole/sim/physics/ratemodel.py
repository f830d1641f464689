"""The simulated box under Poisson arrivals: what a request sees at a given request rate.

Why apart from :mod:`specconsole.sim.physics.model`: ``predict`` answers for a closed loop of c
clients; ``objective = "max_rate_under_slo"`` offers *open* Poisson traffic at a rate, and
its answer (the highest rate at which the SLOs hold) must be checked against the model too.
This is the mean-field picture of the same scheduler the simulator runs
(:mod:`specconsole.sim.scheduler`), with the model's step and prefill times:

* every arrival costs one prefill iteration (``prefill_time`` of its prompt), which takes
  its share ``r · t_prefill`` of the step clock from decoding;
* a request decodes at ``accept_length / step_time(N)`` slowed by that share, where the
  mean number of requests in the box ``N`` follows Little's law, ``N = r · e2e(N)``
  (solved by bisection; ``step_time`` interpolated between whole batches).

Batch-size fluctuations are left out, so it is an estimate: near an SLO boundary it agrees
with the simulator's measured per-request speed within a few percent (the rate search's
end-to-end test holds it to the search's tolerance); the rate it answers saturates (None)
once arrivals outrun what the box can finish. Pure and deterministic, like the model.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from specconsole.sim.physics.launch import ResolvedArgs
from specconsole.sim.physics.model import (
    DEFAULT_INPUT_LEN,
    DEFAULT_OUTPUT_LEN,
    decode_steps_needed,
    plan_memory,
    predict,
    prefill_time,
    running_limit,
    step_time,
)
from specconsole.sim.profile import Profile

BISECTION_ROUNDS = 60
"""Halvings of the bracket (far below a request's resolution)."""


@dataclass(frozen=True, slots=True)
class RatePrediction:
    """Expected steady state of Poisson arrivals at ``rate`` req/s."""

    rate: float
    in_flight: float
    """Mean requests in the box (Little's law)."""
    decode_tok_s_per_request: float
    """A request's decode speed (tokens after the first / decode time): the benchmark's
    ``per_request_tok_s``."""
    ttft_s: float
    e2e_s: float


def predict_rate(
    args: ResolvedArgs,
    profile: Profile,
    rate: float,
    input_len: int = DEFAULT_INPUT_LEN,
    output_len: int = DEFAULT_OUTPUT_LEN,
    cap: int | None = None,
) -> RatePrediction | None:
    """The mean-field steady state of launch ``args`` at ``rate`` (at most ``cap`` in
    flight), or None when the arrivals outrun the box (no steady state: queues grow)."""
    closed = predict(args, 1, input_len, output_len, profile)
    if not closed.ok:
        return None
    length = closed.accept_length
    steps = decode_steps_needed(output_len, length)
    t_prefill = prefill_time(args, profile, input_len)
    busy = rate * t_prefill
    if busy >= 1.0:
        return None
    limit = running_limit(args, plan_memory(args, profile), input_len, output_len)
    top = float(min(limit, cap) if cap else limit)
    context = input_len + output_len / 2.0

    def t_step(n: float) -> float:
        """The step time at a mean batch of ``n``, prefills' share included."""
        lo = max(1, math.floor(n))
        frac = max(0.0, n - lo)
        a, b = step_time(args, profile, lo, context), step_time(args, profile, lo + 1, context)
        return ((1.0 - frac) * a + frac * b) / (1.0 - busy)

    def e2e(n: float) -> float:
        return t_prefill + steps * t_step(n)

    if rate * e2e(top) > top:
        return None  # even a full batch cannot keep up
    lo, hi = 0.0, top
    for _ in range(BISECTION_ROUNDS):
        mid = (lo + hi) / 2.0
        if rate * e2e(mid) > mid:
            lo = mid
        else:
            hi = mid
    n = hi
    return RatePrediction(
        rate=rate,
        in_flight=n,
        decode_tok_s_per_request=length / t_step(n),
        ttft_s=t_prefill,
        e2e_s=e2e(n),
    )


def max_rate(
    args: ResolvedArgs,
    profile: Profile,
    min_decode_tok_s: float,
    input_len: int = DEFAULT_INPUT_LEN,
    output_len: int = DEFAULT_OUTPUT_LEN,
    cap: int | None = None,
    *,
    high: float = 1000.0,
) -> float:
    """The highest rate at which a request still decodes at ``min_decode_tok_s`` (0 when
    not even a lone request does): the model's answer to a per-request speed SLO."""

    def holds(rate: float) -> bool:
        got = predict_rate(args, profile, rate, input_len, output_len, cap)
        return got is not None and got.decode_tok_s_per_request >= min_decode_tok_s

    lo, hi = 0.0, high
    if not holds(1e-6):
        return 0.0
    for _ in range(BISECTION_ROUNDS):
        mid = (lo + hi) / 2.0
        if holds(mid):
            lo = mid
        else:
            hi = mid
    return lo


__all__ = ["RatePrediction", "max_rate", "predict_rate"]
