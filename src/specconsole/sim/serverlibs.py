"""Whether the simulator can serve here: its HTTP server's libraries are an optional extra.

Why: the simulated box is a real HTTP server (starlette on uvicorn), but only ``specconsole
demo`` and ``specconsole sim`` run it; a user tuning a real GPU box never does, so a plain
``pip install specconsole`` leaves them out and ``pip install 'specconsole[sim]'`` brings them
(``make demo`` and ``make test`` install the extra). What needs a server asks here first and,
without the extra, says what is missing and the command that fixes it instead of a traceback.
The model (``sim predict``, :mod:`specconsole.sim.forecast`) needs neither.
"""

from __future__ import annotations

from importlib.util import find_spec

__all__ = ["INSTALL_HINT", "SERVER_LIBRARIES", "missing_server_libraries", "server_unavailable"]

SERVER_LIBRARIES: tuple[str, ...] = ("starlette", "uvicorn")
"""What the simulated box serves with (the ``sim`` extra in pyproject.toml)."""

INSTALL_HINT = "pip install 'specconsole[sim]'"


def missing_server_libraries() -> tuple[str, ...]:
    """The server libraries this Python cannot import."""
    return tuple(name for name in SERVER_LIBRARIES if find_spec(name) is None)


def server_unavailable(what: str) -> str | None:
    """Why ``what`` (``specconsole demo``...) cannot run the simulated box here, naming the
    missing libraries and the fix; None when it can."""
    missing = missing_server_libraries()
    if not missing:
        return None
    return (
        f"{what} runs the simulated GPU box, an HTTP server that needs {' and '.join(missing)} "
        f"(the optional 'sim' extra, not installed): {INSTALL_HINT}"
    )
