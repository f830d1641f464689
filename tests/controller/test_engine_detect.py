"""Detecting the box's SGLang release through the launcher's own interpreter (real local
transport, a real interpreter with a stand-in ``sglang`` package on its path)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from specconsole.controller.engine_detect import (
    detect_engine_version,
    launcher_python,
    version_from_server_info,
)
from specconsole.core.config import Engine, ServerConfig
from specconsole.remote.local import LocalTransport


def test_launcher_python() -> None:
    venv = ServerConfig(
        model_path="m", launcher="/opt/sg/.venv/bin/python3 -m sglang.launch_server"
    )
    assert launcher_python(venv) == "/opt/sg/.venv/bin/python3"
    assert launcher_python(ServerConfig(model_path="m", launcher="sglang serve")) == "python3"


@pytest.mark.asyncio
async def test_detects_the_installed_release(tmp_path: Path) -> None:
    pkg = tmp_path / "sglang"
    pkg.mkdir()
    (pkg / "__init__.py").write_text('__version__ = "0.5.23"\n')
    config = ServerConfig(
        model_path="m",
        launcher=f"{sys.executable} -m sglang.launch_server",
        working_directory=str(tmp_path),
    )
    transport = LocalTransport()
    assert await detect_engine_version(transport, config) == "0.5.23"
    # no sglang importable there: unknown, not an error
    elsewhere = ServerConfig(model_path="m", launcher=config.launcher, working_directory="/")
    assert await detect_engine_version(transport, elsewhere) is None
    vllm = ServerConfig(model_path="m", engine=Engine.VLLM)
    assert await detect_engine_version(transport, vllm) is None


def test_server_info_fallback() -> None:
    assert version_from_server_info({"version": "0.5.14"}) == "0.5.14"
    assert version_from_server_info({"version": "unknown"}) is None
    assert version_from_server_info([]) is None
