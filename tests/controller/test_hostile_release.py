"""A release and a ``--help`` the box cannot be trusted for (issue 44), through the real
readers the controller holds: a proxy's HTML where the running server's ``/server_info`` or
``/version`` should be, and the box's binary printing a hard-wrapped ``--help``. Each ends in
"unknown" with the reason, said in the pre-flight — never a guessed release, never a
configuration refused for a flag the help only seemed to lack."""

from __future__ import annotations

import stat
import sys
from pathlib import Path

import pytest

from specconsole.controller.probe.endpoint import ServerEndpoint
from specconsole.controller.probe.engine_detect import EngineVersionKeeper
from specconsole.controller.probe.flagcheck import FlagSetKeeper, read_box_flags, unread_reason
from specconsole.core.config.model import config_from_table
from specconsole.core.machine.handlers.preflight import PreflightFacts, check_flags
from specconsole.core.plans.parse import loads_plan
from specconsole.remote.transport.local import LocalTransport
from tests.bench.servers import hostile_server
from tests.controller.helpers import PLAN_TEXT


@pytest.mark.parametrize("engine", ["sglang", "vllm"])
async def test_an_html_server_info_leaves_the_release_unknown_with_the_reason(
    engine: str,
) -> None:
    with hostile_server("html") as url:
        port = int(url.rsplit(":", 1)[1])
        config = config_from_table(
            {
                "engine": engine,
                "model_path": "/m",
                "port": port,
                "launcher": "/nonexistent/python -m server",  # the box cannot say
            }
        )
        endpoint = ServerEndpoint(LocalTransport(), object())  # type: ignore[arg-type]
        endpoint.open()
        try:
            with pytest.raises(ValueError, match="answered an HTML page, not JSON"):
                await endpoint.server_info(config)
            keeper = EngineVersionKeeper(LocalTransport(), budget_s=10.0)
            info = await keeper.ensure(config, running=config, server_info=endpoint.server_info)
        finally:
            await endpoint.close()
    assert info is not None and info.version is None and info.source == "unknown"
    assert "answered an HTML page, not JSON (a proxy or another server answered)" in info.detail
    assert keeper.unknown  # trials get the flags every release accepts until one is known


async def test_a_hard_wrapped_help_is_not_trusted_and_the_preflight_says_so(
    tmp_path: Path,
) -> None:
    """The simulator's own argparse help, folded at 40 columns by the box (a terminal, a
    wrapper): its flags cut in two. Read as is, ``--speculative-num-steps`` would be "not
    accepted" and a good configuration refused; not trusted, the rules alone check it."""
    wrapper = tmp_path / "folded-sglang"
    wrapper.write_text(f'#!/bin/sh\n{sys.executable} -m specconsole.sim "$@" 2>&1 | fold -w 40\n')
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IEXEC)
    config = config_from_table(
        {
            "model_path": "/models/target",
            "launcher": str(wrapper),
            "speculative_algorithm": "EAGLE3",
            "speculative_draft_model_path": "/models/draft",
            "speculative_num_steps": 3,
            "speculative_eagle_topk": 1,
            "speculative_num_draft_tokens": 4,
        }
    )
    found = await read_box_flags(LocalTransport(), config, timeout=60.0)
    assert found.flags is None
    assert "printed a help in another layout (hard-wrapped at 40 columns" in found.detail
    keeper = FlagSetKeeper(LocalTransport())
    keeper.found[keeper._key(config)] = found
    reason = unread_reason(keeper, config)
    assert reason.startswith("--help not trusted: the engine's rules only")
    facts = PreflightFacts(plan=loads_plan(PLAN_TEXT), extra={"flags": reason})
    (finding,) = check_flags(facts)
    assert not finding.blocking and "hard-wrapped at 40 columns" in finding.message
