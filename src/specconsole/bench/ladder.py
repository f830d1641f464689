"""The contract between the ladder engine and its callers: :class:`LadderPlan` and the client.

Why its own module: the plan is plain JSON-able data that crosses SSH to the remote runner
and is built by :mod:`specconsole.bench.loadgen` from a ``BenchSpec``, and the
:class:`StreamClient` protocol is what the two HTTP clients (httpx in ``bench.loadgen``, asyncio
Protocol in ``bench.wire.rawhttp``) implement; neither needs the scheduling code in
:mod:`specconsole.bench.ladder_run`. Standard library only (Python 3.10+): it is bundled into the
remote runner script.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from specconsole.bench.api import API_GENERATE, APIS, loads_response
from specconsole.bench.waits import status_failure
from specconsole.bench.workload.prompts import Prompt
from specconsole.core.measure.metrics import DEFAULT_PERCENTILES, default_requests_per_level
from specconsole.core.measure.slo import Slo


class StreamClient(Protocol):
    """The HTTP operations the engine needs; one client per level, pooled for c connections."""

    async def stream_into(
        self, path: str, body: bytes, sink: Callable[[bytes], object], stall_s: float
    ) -> None:
        """POST ``body`` and hand the response body's bytes to ``sink`` as they arrive.

        ``sink`` is called once per received piece (every SSE event in it arrived together,
        so one timestamp per call is exact), returns a true value when the piece carried a
        token (progress: only that re-arms the client's watchdog) and may raise
        :class:`~specconsole.bench.api.RequestFailed`, which fails the request. Raises
        RequestFailed (its detail names the URL) for a non-200 status (kind
        ``http_<status>``), a connection not made (``connect``), no token for ``stall_s``
        (``stall``) or for the request timeout (``timeout``), or a dropped connection
        (``disconnect``).
        """
        ...

    async def get_json(self, path: str) -> Any:
        """GET a JSON document (``/server_info``, ``/v1/models``); raises RequestFailed."""
        ...

    async def get_text(self, path: str) -> str:
        """GET a text document (``/metrics``' Prometheus text); raises RequestFailed."""
        ...

    async def post(self, path: str) -> int:
        """POST with an empty body and return the status (``/flush_cache``)."""
        ...

    async def aclose(self) -> None: ...


class ControlRequests:
    """:class:`StreamClient`'s control requests, written once over a client's own
    ``_status_and_body(method, path)`` (the whole answer, bounded in time and size), so the
    standard-library and the httpx client answer them alike."""

    __slots__ = ()  # the standard-library client keeps its instances slotted

    async def _status_and_body(self, method: str, path: str) -> tuple[int, bytes]:
        raise NotImplementedError

    async def get_json(self, path: str) -> Any:
        status, data = await self._status_and_body("GET", path)
        if status != 200:
            raise status_failure(status, data)
        return loads_response(data, path)

    async def get_text(self, path: str) -> str:
        status, data = await self._status_and_body("GET", path)
        if status != 200:
            raise status_failure(status, data)
        return data.decode("utf-8", "replace")

    async def post(self, path: str) -> int:
        status, _ = await self._status_and_body("POST", path)
        return status


ClientFactory = Callable[[int], StreamClient]
"""Makes a client whose connection pool holds ``concurrency`` connections."""

ProgressSink = Callable[[dict[str, Any]], None]
"""Receives progress events: dicts with :class:`specconsole.core.ports.BenchProgress`'s fields."""


@dataclass(frozen=True, slots=True)
class LadderPlan:
    """Everything the engine needs, as plain JSON-able data (it crosses SSH as JSON)."""

    ladder: tuple[int, ...]
    prompts: tuple[Prompt, ...]
    """A pool of prompts used round-robin across the whole run."""
    requests_per_level: int | None = None
    duration_s: float | None = None
    warmup_requests: int = 1
    input_len: int = 256
    output_len: int = 256
    api: str = API_GENERATE
    temperature: float = 0.0
    request_rate: float | None = None
    flush_cache: bool = True
    seed: int = 42
    model: str | None = None
    request_timeout_s: float = 600.0
    stall_timeout_s: float = 30.0
    """No bytes on a stream for this long: the request is a ``stall`` failure (time lost =
    this); keeps a server that stops streaming from holding a level for the request timeout."""
    settings: dict[str, Any] = field(default_factory=dict)
    """bench_serving-style settings merged into every record (backend, dataset_name...)."""
    repeats: int = 1
    """Runs of the whole ladder (``[bench] repeats``), for mean ± 95 % CI."""
    percentiles: tuple[float, ...] = DEFAULT_PERCENTILES
    slo: dict[str, float] | None = None
    """Goodput objectives (``ttft_ms``, ``tpot_ms``, ``e2e_ms``), if any."""
    details: bool = False
    """Keep per-request lists in the level records (``--output-file``)."""
    headers: tuple[tuple[str, str], ...] = field(default=(), repr=False)
    """Extra request headers, ``Authorization: Bearer <api key>`` included (never recorded:
    records only carry the header names)."""
    extra_body: dict[str, Any] | None = None
    """Merged into every request body (bench_serving's ``--extra-request-body``)."""
    window: str = "completed"
    """``completed`` (bench_serving's metrics over finished requests) or ``steady`` (a
    steady-state window of streamed tokens per level, :mod:`specconsole.bench.steady`)."""
    window_s: float | None = None
    """Steady window: its length in seconds (2 s when neither bound is given)."""
    window_tokens: int | None = None
    """Steady window: end it once this many output tokens streamed (whichever bound first)."""
    spec_counters: dict[str, Any] | None = None
    """The engine's speculative-decoding counters (``SpecCounters.to_dict()``), snapshotted
    around each measured level (:mod:`specconsole.bench.acceptance`); None: not read."""
    lead: int | None = None
    """Run the level at this concurrency first (incumbent pruning decides there), then the
    rest in ladder order; indices and results stay the ladder's."""
    phases: tuple[str, ...] = ()
    """Shifting traffic (``alternating:A,B``): each level's measured requests run in phases,
    one category of prompts (``Prompt.category``) at a time in this order, each phase
    drained before the next; the counters are read at each phase's end."""

    def order(self) -> list[int]:
        """Indices into ``ladder`` in the order the levels run (the lead level first)."""
        first = [i for i, c in enumerate(self.ladder) if c == self.lead][:1]
        return first + [i for i in range(len(self.ladder)) if i not in first]

    def requests_for(self, concurrency: int) -> int | None:
        """Measured requests at a level (None in duration mode)."""
        if self.requests_per_level is not None:
            return self.requests_per_level
        if self.duration_s is not None:
            return None
        return default_requests_per_level(concurrency)

    def check(self) -> None:
        """Raise ValueError naming the field and the fix for unusable values."""
        if not self.ladder or any(c < 1 for c in self.ladder):
            raise ValueError("ladder: give concurrency levels >= 1, e.g. 1,4,16,32,64")
        if self.api not in APIS:
            raise ValueError(f"api: must be one of {', '.join(APIS)}, got {self.api!r}")
        if self.requests_per_level is not None and self.requests_per_level < 1:
            raise ValueError("requests: give at least 1 request per level")
        if self.duration_s is not None and self.duration_s <= 0:
            raise ValueError("duration: give a positive number of seconds")
        if self.output_len < 1:
            raise ValueError("output_len: give at least 1 output token")
        if self.warmup_requests < 0:
            raise ValueError("warmup_requests: give 0 or more")
        if self.request_rate is not None and self.request_rate <= 0:
            raise ValueError("request_rate: give a positive rate in requests/s (or none)")
        if not self.prompts:
            raise ValueError("prompts: the prompt pool is empty")
        if self.repeats < 1:
            raise ValueError("repeats: give at least 1 run of the ladder")
        if not self.percentiles or any(not 0 < q < 100 for q in self.percentiles):
            raise ValueError("percentiles: give percentiles between 0 and 100, e.g. 50,90,99.9")
        if self.slo is not None:
            Slo.from_mapping(self.slo)
        self._check_window()
        self._check_phases()

    def phase_size(self, concurrency: int, count: int) -> int:
        """Requests per phase of shifting traffic: each category at least twice in a level of
        ``count`` requests, never fewer than ``concurrency`` (one wave)."""
        return max(concurrency, count // (2 * max(len(self.phases), 1)), 1)

    def _check_phases(self) -> None:
        if not self.phases:
            return
        missing = [c for c in self.phases if not any(p.category == c for p in self.prompts)]
        if missing:
            raise ValueError(f"phases: no prompt of {', '.join(missing)} in the pool")
        if self.window != "completed" or self.request_rate is not None or self.duration_s:
            raise ValueError(
                "phases: shifting traffic runs each level by its requests, phase after phase: "
                'use window = "completed" without request_rate or duration'
            )

    def _check_window(self) -> None:
        if self.window not in ("completed", "steady"):
            raise ValueError(f'window: must be "completed" or "steady", got {self.window!r}')
        if self.window != "steady":
            if self.window_s is not None or self.window_tokens is not None:
                raise ValueError('window_s / window_tokens: only with window = "steady"')
            return
        if self.request_rate is not None:
            raise ValueError(
                'window = "steady" keeps c streams in flight; drop request_rate (Poisson '
                'arrivals need window = "completed")'
            )
        if self.window_s is not None and self.window_s <= 0:
            raise ValueError("window_s: give a positive number of seconds, e.g. 2")
        if self.window_tokens is not None and self.window_tokens < 1:
            raise ValueError("window_tokens: give at least 1 output token, e.g. 2000")

    def to_dict(self) -> dict[str, Any]:
        return {
            "ladder": list(self.ladder),
            "prompts": [p.to_dict() for p in self.prompts],
            "requests_per_level": self.requests_per_level,
            "duration_s": self.duration_s,
            "warmup_requests": self.warmup_requests,
            "input_len": self.input_len,
            "output_len": self.output_len,
            "api": self.api,
            "temperature": self.temperature,
            "request_rate": self.request_rate,
            "flush_cache": self.flush_cache,
            "seed": self.seed,
            "model": self.model,
            "request_timeout_s": self.request_timeout_s,
            "stall_timeout_s": self.stall_timeout_s,
            "settings": dict(self.settings),
            "repeats": self.repeats,
            "percentiles": list(self.percentiles),
            "slo": None if self.slo is None else dict(self.slo),
            "details": self.details,
            "headers": [list(h) for h in self.headers],
            "extra_body": self.extra_body,
            "window": self.window,
            "window_s": self.window_s,
            "window_tokens": self.window_tokens,
            "spec_counters": None if self.spec_counters is None else dict(self.spec_counters),
            "lead": self.lead,
            "phases": list(self.phases),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> LadderPlan:
        fields = dict(data)
        fields["ladder"] = tuple(int(c) for c in fields["ladder"])
        fields["prompts"] = tuple(Prompt.from_dict(p) for p in fields["prompts"])
        fields["settings"] = dict(fields.get("settings") or {})
        fields["headers"] = tuple((str(k), str(v)) for k, v in fields.get("headers") or ())
        fields["phases"] = tuple(str(c) for c in fields.get("phases") or ())
        fields["percentiles"] = tuple(float(q) for q in fields.get("percentiles", ()) or ())
        if not fields["percentiles"]:
            del fields["percentiles"]
        return cls(**fields)
