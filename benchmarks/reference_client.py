"""The yardstick client: SGLang bench_serving's request loop, re-written on aiohttp.

Why: bench_serving itself needs torch to install, so the benchmarks that compare
``specconsole bench`` with it (fidelity.py: the numbers; loadgen_overhead.py: the CPU per
token) measure against this client instead. It reproduces what bench_serving does per
request, written for this project from its published behaviour:

* a **new** ``aiohttp.ClientSession`` per request (no connection reuse), ``session.post`` with
  ``json=payload``, and ``async for line in response.content`` (one SSE line at a time);
* each non-empty line stripped of ``data: ``, ``[DONE]`` skipped, the rest decoded with
  ``json.loads``, a ``time.perf_counter()`` timestamp per chunk;
* ``/generate`` (backend ``sglang``): cumulative ``text`` and ``meta_info.completion_tokens``;
  the first chunk with text is the TTFT, each later chunk's gap is split evenly over the
  tokens it brought (``adjust_itl = gap / num_new_tokens``, repeated ``num_new_tokens``
  times);
* chat (backend ``sglang-oai-chat``): ``choices[0].delta.content``; with
  ``continuous_usage_stats`` the cumulative ``usage.completion_tokens`` splits a chunk's gap
  the same way; the final usage chunk gives the output length;
* (optionally, :func:`run_level`'s ``session``: one keep-alive session for every request —
  not what bench_serving does, but it separates the per-request connect from the client);
* an ``asyncio.Semaphore(c)`` around every request, all requests created up front
  (``--request-rate inf`` with ``--max-concurrency c``), and bench_serving's metric
  definitions computed from the outputs (:func:`metrics`).

Nothing here imports specconsole's load generator: it is an independent measurement.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import time
from dataclasses import dataclass, field
from typing import Any

import aiohttp

AIOHTTP_TIMEOUT = aiohttp.ClientTimeout(total=6 * 60 * 60)
"""bench_serving's session timeout (six hours)."""


@dataclass
class RequestOutput:
    """One request's outcome, as bench_serving's ``RequestFuncOutput``."""

    success: bool = False
    ttft: float = 0.0
    latency: float = 0.0
    output_len: int = 0
    prompt_len: int = 0
    itl: list[float] = field(default_factory=list)
    chunk_times: int = 0
    error: str = ""


def _payload(api: str, prompt: str, output_len: int) -> tuple[str, dict[str, Any]]:
    if api == "generate":
        return "/generate", {
            "text": prompt,
            "sampling_params": {
                "temperature": 0.0,
                "max_new_tokens": output_len,
                "ignore_eos": True,
            },
            "stream": True,
        }
    if api == "chat":
        return "/v1/chat/completions", {
            "model": "default",
            "messages": [{"role": "user", "content": prompt}],
            "temperature": 0.0,
            "max_completion_tokens": output_len,
            "stream": True,
            "stream_options": {"include_usage": True, "continuous_usage_stats": True},
            "ignore_eos": True,
        }
    raise ValueError(f"api must be 'generate' or 'chat', got {api!r}")


def _session() -> aiohttp.ClientSession:
    return aiohttp.ClientSession(timeout=AIOHTTP_TIMEOUT, read_bufsize=10 * 1024**2)


async def request_one(
    base_url: str,
    api: str,
    prompt: str,
    output_len: int,
    session: aiohttp.ClientSession | None = None,
) -> RequestOutput:
    """One streaming request — on a session of its own, as bench_serving's request function
    does, unless ``session`` is given (then its keep-alive pool is reused)."""
    if session is None:
        async with _session() as own:
            return await request_one(base_url, api, prompt, output_len, own)
    return await _stream(session, base_url, api, prompt, output_len)


async def _stream(
    s: aiohttp.ClientSession, base_url: str, api: str, prompt: str, output_len: int
) -> RequestOutput:
    path, payload = _payload(api, prompt, output_len)
    out = RequestOutput()
    st = time.perf_counter()
    most_recent = st
    last_len = 0
    try:
        async with s.post(url=base_url + path, json=payload) as response:
            if response.status != 200:
                out.error = f"HTTP {response.status}: {(await response.text())[:200]}"
                return out
            async for chunk_bytes in response.content:
                chunk_bytes = chunk_bytes.strip()
                if not chunk_bytes:
                    continue
                chunk = chunk_bytes.decode("utf-8").removeprefix("data: ")
                if chunk == "[DONE]":
                    continue
                data = json.loads(chunk)
                now = time.perf_counter()
                if api == "generate":
                    if not data.get("text"):
                        continue
                    new_len = data["meta_info"]["completion_tokens"]
                    out.prompt_len = data["meta_info"].get("prompt_tokens", 0)
                else:
                    usage = data.get("usage") or {}
                    if usage:
                        out.prompt_len = usage.get("prompt_tokens", 0)
                    choices = data.get("choices") or []
                    if not choices or not choices[0]["delta"].get("content"):
                        if usage.get("completion_tokens"):
                            last_len = usage["completion_tokens"]
                        continue
                    new_len = usage.get("completion_tokens", last_len + 1)
                out.chunk_times += 1
                if out.ttft == 0.0:
                    out.ttft = now - st
                else:
                    n_new = new_len - last_len
                    if n_new <= 0:
                        continue
                    out.itl.extend([(now - most_recent) / n_new] * n_new)
                most_recent = now
                last_len = new_len
        out.latency = time.perf_counter() - st
        out.output_len = last_len
        out.success = out.output_len > 0
    except (aiohttp.ClientError, ValueError, KeyError) as exc:
        out.error = f"{type(exc).__name__}: {exc}"
    return out


async def run_level(
    base_url: str,
    api: str,
    prompts: list[tuple[str, int]],
    concurrency: int,
    *,
    warmup: bool = True,
    session: aiohttp.ClientSession | None = None,
) -> tuple[list[RequestOutput], float]:
    """Every ``(prompt, output_len)`` with at most ``concurrency`` in flight; returns the
    outputs and the benchmark duration (warm-up excluded: ``concurrency`` requests first,
    then ``POST /flush_cache`` as bench_serving does before it starts the clock).

    ``session`` (not bench_serving's way) sends every request on that one session's
    keep-alive pool: the same loop without a TCP connect per request, so a comparison can
    tell the connection's cost from the client's."""
    gate = asyncio.Semaphore(concurrency)

    async def limited(prompt: str, output_len: int) -> RequestOutput:
        async with gate:
            return await request_one(base_url, api, prompt, output_len, session)

    if warmup:
        await asyncio.gather(*(limited(p, n) for p, n in prompts[:concurrency]))
    async with aiohttp.ClientSession() as s, s.post(base_url + "/flush_cache") as r:
        await r.read()
    t0 = time.perf_counter()
    outputs = await asyncio.gather(*(limited(p, n) for p, n in prompts))
    return list(outputs), time.perf_counter() - t0


def _percentile(values: list[float], q: float) -> float:
    """Linear interpolation between closest ranks (numpy's default, as bench_serving)."""
    ordered = sorted(values)
    if not ordered:
        return 0.0
    pos = (len(ordered) - 1) * q / 100.0
    lo = int(pos)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


def metrics(outputs: list[RequestOutput], duration: float) -> dict[str, float]:
    """bench_serving's ``calculate_metrics`` on the outputs, with its keys.

    TTFT per request; TPOT = (latency − ttft) / (output_len − 1) for output_len > 1; ITL the
    flattened per-token gaps; throughput = Σ output_len / duration; concurrency =
    Σ latency / duration.
    """
    ok = [o for o in outputs if o.success]
    ttfts = [o.ttft * 1000 for o in ok]
    tpots = [(o.latency - o.ttft) / (o.output_len - 1) * 1000 for o in ok if o.output_len > 1]
    itls = [gap * 1000 for o in ok for gap in o.itl]
    e2es = [o.latency * 1000 for o in ok]
    out_tokens = sum(o.output_len for o in ok)
    result: dict[str, float] = {
        "completed": len(ok),
        "failed": len(outputs) - len(ok),
        "duration": duration,
        "total_input_tokens": sum(o.prompt_len for o in ok),
        "total_output_tokens": out_tokens,
        "request_throughput": len(ok) / duration,
        "output_throughput": out_tokens / duration,
        "concurrency": sum(o.latency for o in ok) / duration,
    }
    for name, values in (("ttft", ttfts), ("tpot", tpots), ("itl", itls), ("e2e_latency", e2es)):
        result[f"mean_{name}_ms"] = statistics.fmean(values) if values else 0.0
        result[f"median_{name}_ms"] = statistics.median(values) if values else 0.0
        result[f"p99_{name}_ms"] = _percentile(values, 99)
    return result
