"""The deployed server as the controller reaches it: its URL and its own HTTP endpoints.

Why a module of its own: the runtime performs the machine's effects; *how* the server is
reached is a separate concern with state of its own — one HTTP client for the run, one local
URL per (host, port) (an SSH forward when the box is remote, made once and reused), and the
node of a batch job, which is known only once the job runs. What the answers mean stays in
the pure ``core.machine.results``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from specconsole.core.boxjson import MAX_JSON_CHARS, read_box_json
from specconsole.core.config.model import ServerConfig
from specconsole.core.engine.registry import engine_for
from specconsole.core.machine import results
from specconsole.core.ports import LocatedService, ServiceBackend, Transport

if TYPE_CHECKING:
    import httpx


class ServerEndpoint:
    """Open with :meth:`open` before the first request, :meth:`close` at the end of the run."""

    def __init__(
        self, transport: Transport, backend: ServiceBackend, *, timeout_s: float = 10.0
    ) -> None:
        self.transport = transport
        self.backend = backend
        self.timeout_s = timeout_s
        self._http: httpx.AsyncClient | None = None
        self._urls: dict[tuple[str, int], str] = {}

    def open(self) -> None:
        import httpx  # here, not at the top: 60 ms that the console's start need not pay

        self._http = httpx.AsyncClient(timeout=httpx.Timeout(self.timeout_s))

    async def close(self) -> None:
        if self._http is not None:
            await self._http.aclose()
            self._http = None

    @property
    def http(self) -> httpx.AsyncClient:
        """The run's HTTP client (the watcher's health polls share it)."""
        if self._http is None:
            raise RuntimeError("the server endpoint is not open")
        return self._http

    async def host(self, cfg: ServerConfig) -> str:
        """Where the server listens as the box sees it: ``[server] host``, or the node of a
        batch job (a :class:`LocatedService` backend knows it once the job runs)."""
        if isinstance(self.backend, LocatedService):
            host = await self.backend.server_host(cfg)
            if host is None:
                raise RuntimeError("the server's node is not known yet (the job is queued)")
            return host
        return results.box_host(cfg)

    async def url(self, cfg: ServerConfig) -> str:
        """A locally reachable URL of the server (an SSH forward when remote, made once)."""
        host = await self.host(cfg)
        key = (host, cfg.port)
        url = self._urls.get(key)
        if url is None:
            forward = await self.transport.forward_local_port(cfg.port, host)
            url = forward.url
            self._urls[key] = url
        return url

    async def health_problem(self, cfg: ServerConfig) -> str | None:
        """None when ``/health`` answers 200, else what went wrong."""
        import httpx

        try:
            response = await self.http.get(f"{await self.url(cfg)}/health", timeout=5.0)
        except httpx.HTTPError as exc:
            return f"health check failed: {exc}"
        if response.status_code != 200:
            return f"health answered {response.status_code}"
        return None

    async def server_info(self, cfg: ServerConfig) -> Any:
        """The engine's server-info document (SGLang's ``/server_info``) as JSON; ``None``
        when the engine serves none (``Endpoints.server_info``). An answer that is not JSON
        (a proxy's HTML page) raises ``ValueError`` naming the path and what came instead."""
        path = engine_for(cfg).endpoints.server_info
        if path is None:
            return None
        response = await self.http.get(f"{await self.url(cfg)}{path}")
        response.raise_for_status()
        body, problem = read_box_json(response.content[: MAX_JSON_CHARS + 1])
        if problem:  # a proxy's HTML, NaN, a cut-off body: said, never read as an answer
            raise ValueError(f"{path} answered {problem}")
        return body

    async def flush_cache(self, cfg: ServerConfig) -> None:
        """Empty the engine's prefix cache (a no-op when it has no such endpoint)."""
        path = engine_for(cfg).endpoints.flush_cache
        if path is None:
            return
        response = await self.http.post(f"{await self.url(cfg)}{path}")
        if response.status_code >= 400:
            raise RuntimeError(f"{path} answered {response.status_code}: {response.text[:200]}")
