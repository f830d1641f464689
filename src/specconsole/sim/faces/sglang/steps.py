"""SGLang's statistics lines, printed after the simulated scheduler's steps.

Why apart from the scheduler (:mod:`specconsole.sim.scheduler`): the box runs steps; *what it
says* about them is the face's. SGLang logs a ``Prefill batch`` line per prefill and a ``Decode
batch`` line every ``--decode-log-interval`` decode iterations, with the throughput and the
accept length over that interval (its texts are :mod:`.log`'s).
"""

from __future__ import annotations

import time
from typing import Any

from specconsole.sim.faces.sglang import log as logfmt
from specconsole.sim.physics.model import uses_cuda_graph
from specconsole.sim.scheduler import Scheduler, SpecCounters

__all__ = ["SGLangSteps"]


class SGLangSteps:
    """The scheduler's reporter for the SGLang face (``log``: its ``LogWriter``)."""

    def __init__(self, log: Any, dialect: str, decode_log_interval: int) -> None:
        self.log = log
        self.dialect = dialect
        self.interval = max(decode_log_interval, 1)
        """``--decode-log-interval``: decode iterations per ``Decode batch`` line."""

    def prefill(self, sched: Scheduler, batch: int, tokens: int, seconds: float) -> None:
        self.log.scheduler(
            logfmt.prefill_batch(
                self.dialect,
                new_seq=batch,
                new_token=tokens,
                cached_token=0,
                token_usage=sched.used_tokens / sched.capacity,
                running=len(sched.running),
                queue=len(sched.waiting),
                pending_token=sum(r.input_len for r in sched.waiting),
                cuda_graph=False,
                input_throughput=tokens / seconds if seconds > 0 else 0.0,
            ),
            True,
        )

    def adaptive(self, sched: Scheduler, event: str, *values: float) -> None:
        """The adaptive controller's lines, as SGLang's worker logs them on rank 0."""
        if event == "switch":
            text = logfmt.adaptive_switch(int(values[0]), int(values[1]))
        else:
            text = logfmt.adaptive_updated(int(values[0]), int(values[1]), values[2])
        self.log.scheduler(text, True)

    def decode(self, sched: Scheduler, batch: int) -> None:
        if sched.decode_iters % self.interval != 0:
            return
        now = time.monotonic()
        elapsed = max(now - sched.interval_start, 1e-9)
        sched.last_gen_throughput = sched.interval_tokens / elapsed
        sched.interval_tokens = 0
        sched.interval_start = now
        accept_len = accept_rate = None
        args = sched.args
        if args.speculative:
            accept_len = sched.interval_accept.avg_accept_length
            if self.dialect == logfmt.V059:
                accept_rate = accept_len / args.num_draft_tokens
            else:
                accept_rate = (accept_len - 1.0) / max(args.num_draft_tokens - 1, 1)
            sched.interval_accept = SpecCounters()
        used = sched.used_tokens
        self.log.scheduler(
            logfmt.decode_batch(
                running=batch,
                used_tokens=used,
                token_usage=used / sched.capacity,
                accept_len=accept_len,
                accept_rate=accept_rate,
                cuda_graph=uses_cuda_graph(args, batch),
                gen_throughput=sched.last_gen_throughput,
                queue=len(sched.waiting),
            ),
            True,
        )
