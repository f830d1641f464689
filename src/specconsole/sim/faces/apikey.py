"""``--api-key`` as both engines check it: a bearer token on every request but the health and
metrics routes.

Why shared: SGLang and vLLM guard their routes alike (``Authorization: Bearer <key>``, else
401 ``{"error": "Unauthorized"}``; ``/health*``, ``/metrics`` and ``OPTIONS`` free), so one
middleware serves every face.
"""

from __future__ import annotations

from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

__all__ = ["RequireApiKey"]


class RequireApiKey:
    """``--api-key``: every request but ``/health*``, ``/metrics`` and ``OPTIONS`` needs
    ``Authorization: Bearer <key>``, else 401 ``{"error": "Unauthorized"}``.

    Pure ASGI (not BaseHTTPMiddleware), so streamed responses pass through untouched.
    """

    def __init__(self, app: ASGIApp, api_key: str) -> None:
        self.app = app
        self.expected = ("Bearer " + api_key).encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] != "OPTIONS":
            path: str = scope["path"]
            if not path.startswith(("/health", "/metrics")):
                headers = dict(scope["headers"])
                if headers.get(b"authorization") != self.expected:
                    response = JSONResponse({"error": "Unauthorized"}, status_code=401)
                    await response(scope, receive, send)
                    return
        await self.app(scope, receive, send)
