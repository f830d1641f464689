"""Ask the box which SGLang release it runs, before the first deploy.

Why: flag names change between releases (:mod:`specconsole.core.engine_versions`); a
configuration without ``[server] engine_version`` is rendered in the names of the release the
box actually has. The launcher's own interpreter is asked (``python -c "import sglang;
print(sglang.__version__)"``, in the configuration's working directory), so a virtualenv
launcher answers for its own install; when that fails (a container image, ``sglang serve``
without a Python path) the version is unknown and the default names are used until the
server's ``/server_info`` reports its ``version`` (:func:`version_from_server_info`).
"""

from __future__ import annotations

import shlex
from typing import Any

from specconsole.core.config import Engine, ServerConfig, effective_launcher
from specconsole.core.engine_versions import detect_command, parse_detected
from specconsole.core.ports import Transport, TransportError

__all__ = ["detect_engine_version", "launcher_python", "version_from_server_info"]


def launcher_python(config: ServerConfig) -> str:
    """The interpreter that runs the launcher (``/opt/sglang/.venv/bin/python``), else
    ``python3``."""
    words = shlex.split(effective_launcher(config))
    for word in words:
        if word.rsplit("/", 1)[-1].startswith("python"):
            return word
    return "python3"


async def detect_engine_version(transport: Transport, config: ServerConfig) -> str | None:
    """The SGLang release on the box through ``transport``; ``None`` when it cannot be told."""
    if config.engine is not Engine.SGLANG:
        return None
    command = shlex.join(detect_command(launcher_python(config)))
    if config.working_directory:
        command = f"cd {shlex.quote(config.working_directory)} && {command}"
    try:
        result = await transport.run(command, timeout=60.0)
    except TransportError:
        return None
    if not result.ok:
        return None
    return parse_detected(result.stdout)


def version_from_server_info(body: Any) -> str | None:
    """``/server_info``'s ``version`` when it is a release number."""
    if isinstance(body, dict) and isinstance(body.get("version"), str):
        return parse_detected(body["version"])
    return None
