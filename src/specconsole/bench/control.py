"""A level's control requests: the model name, the c connections, ``/flush_cache`` and the
accept length from ``/server_info``.

Why apart from the ladder engine (:mod:`.engine`): these are the requests around the load, not
the load, each bounded by the client's control timeout
(:data:`~specconsole.bench.api.CONTROL_TIMEOUT_S`) and, for the flush, in count. Standard
library only: the remote runner ships it.
"""

from __future__ import annotations

import asyncio

from specconsole.bench.api import RequestFailed, accept_length_from_server_info
from specconsole.bench.ladder import StreamClient

__all__ = ["FLUSH_ATTEMPTS", "accept_length", "flush_cache", "open_connections", "resolve_model"]

FLUSH_ATTEMPTS = 10
"""``/flush_cache`` refuses while requests are still draining; retry this many times."""


async def resolve_model(client: StreamClient) -> str:
    """The served model's name from ``/v1/models`` (the OpenAI APIs need one)."""
    try:
        models = await client.get_json("/v1/models")
        return str(models["data"][0]["id"])
    except (RequestFailed, KeyError, IndexError, TypeError) as exc:
        raise RequestFailed(
            "no_model", f"cannot read the model name from /v1/models ({exc}); pass a model"
        ) from exc


async def open_connections(client: StreamClient, concurrency: int) -> None:
    """Open the level's c connections before its ramp-up is timed (a steady window
    projects one ramp onto every request, so connection setup must not be in it)."""
    results = await asyncio.gather(
        *(client.get_json("/v1/models") for _ in range(concurrency)), return_exceptions=True
    )
    for outcome in results:
        if isinstance(outcome, BaseException) and not isinstance(outcome, RequestFailed):
            raise outcome


async def flush_cache(client: StreamClient) -> None:
    """POST ``/flush_cache`` until it is accepted (SGLang answers 400 while requests drain)."""
    for _ in range(FLUSH_ATTEMPTS):
        try:
            status = await client.post("/flush_cache")
        except RequestFailed:
            return
        if status != 400:
            return  # flushed, or a server without the endpoint (e.g. vLLM: 404)
        await asyncio.sleep(0.2)


async def accept_length(client: StreamClient) -> float | None:
    """``avg_spec_accept_length`` from ``/server_info`` (None when it cannot be read)."""
    try:
        return accept_length_from_server_info(await client.get_json("/server_info"))
    except RequestFailed:
        return None
