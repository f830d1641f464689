"""The box's own binary asked which flags it accepts: the real llama-server's ``--help``
(cached per binary hash in the session folder) and the simulator's argparse help for SGLang,
both over the real local transport and the SSH transport to the real sshd.

Why: a configuration needing a flag the box's build lacks must be refused before anything is
deployed, with the field and the fix — llama.cpp's build here exits 1 on ``--draft-max``.
"""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

import pytest

from specconsole.controller.probe.flagcheck import FlagSetKeeper, check_box_flags, read_box_flags
from specconsole.core.config.model import ServerConfig, config_from_table
from specconsole.core.config.render import to_argv
from specconsole.core.config.validation import errors, validate
from specconsole.core.ports import Transport
from tests.fixtures.llamacpp import LlamaCppBuild
from tests.fixtures.transports import transport  # noqa: F401  (the fixture)

pytestmark = pytest.mark.timeout(120)


def llama_config(build: LlamaCppBuild, **changes: object) -> ServerConfig:
    return config_from_table(
        {
            "engine": "llamacpp",
            "launcher": str(build.server),
            "model_path": str(build.target),
            "speculative_draft_model_path": str(build.draft("req_Q4_0")),
            "spec_type": "draft-simple",
            "spec_draft_n_max": 4,
            "threads": 1,
            "metrics": True,
            **changes,
        }
    )


@pytest.mark.llamacpp
async def test_the_real_binary_tells_its_flags_once_per_hash(
    transport: Transport,  # noqa: F811
    llamacpp_build: LlamaCppBuild,
    tmp_path: Path,
) -> None:
    config = llama_config(llamacpp_build, extra_args=["--draft-max", "8"])
    found, issues = await check_box_flags(transport, config, cache_dir=tmp_path)
    assert found.flags is not None and found.flags.accepts("--spec-draft-n-max")
    assert not found.flags.accepts("--draft-max") and len(found.fingerprint.split()[0]) == 64
    (issue,) = issues
    assert issue.field == "extra_args" and "removed --draft-max" in issue.message
    assert "set spec_draft_n_max instead (rendered as --spec-draft-n-max)" in issue.fix
    assert len(list(tmp_path.glob("llamacpp-*.json"))) == 1  # noqa: ASYNC240
    again = await read_box_flags(transport, config, cache_dir=tmp_path)
    assert again.flags == found.flags and "(cached for this binary)" in again.detail

    keeper = FlagSetKeeper(transport, tmp_path)
    await keeper.ensure(config)
    on_box = keeper.apply(dataclasses.replace(config, extra_args=()))
    assert on_box.box_flags == found.flags
    assert errors(validate(on_box)) == []
    refused = errors(validate(keeper.apply(config)))
    assert any("--spec-draft-n-max" in i.fix for i in refused)
    assert all(found.flags.accepts(w) for w in to_argv(on_box) if w.startswith("--"))


async def test_sglangs_argparse_help_is_read_from_the_simulator(
    transport: Transport,  # noqa: F811
) -> None:
    config = config_from_table(
        {
            "model_path": "/models/target",
            "launcher": f"{sys.executable} -m specconsole.sim",
            "speculative_algorithm": "EAGLE3",
            "speculative_draft_model_path": "/models/draft",
            "speculative_num_steps": 3,
            "speculative_eagle_topk": 1,
            "speculative_num_draft_tokens": 4,
            "max_running_requests": 8,
        }
    )
    found, issues = await check_box_flags(transport, config)
    assert found.flags is not None and found.flags.accepts("--speculative-num-steps")
    assert issues == []
    unknown = dataclasses.replace(config, extra_args=("--no-such-flag",))
    _, issues = await check_box_flags(transport, unknown)
    assert [(i.field, i.fix) for i in issues] == [
        (
            "extra_args",
            "remove --no-such-flag from extra_args: the binary on the box does not know it.",
        )
    ]


async def test_a_launcher_that_cannot_be_asked_is_no_failure(
    transport: Transport,  # noqa: F811
) -> None:
    config = config_from_table(
        {"engine": "llamacpp", "launcher": "/nonexistent/llama-server", "model_path": "/m.gguf"}
    )
    found, issues = await check_box_flags(transport, config)
    assert found.flags is None and issues == [] and "printed no flags" in found.detail


async def test_the_preflight_says_once_when_the_binary_could_not_say(
    transport: Transport,  # noqa: F811
) -> None:
    from specconsole.controller.probe.flagcheck import unread_reason
    from specconsole.core.machine.handlers.preflight import PreflightFacts, check_flags
    from specconsole.core.plans.parse import loads_plan
    from tests.controller.helpers import PLAN_TEXT

    config = config_from_table(
        {"engine": "llamacpp", "launcher": "/nonexistent/llama-server", "model_path": "/m.gguf"}
    )
    keeper = FlagSetKeeper(transport)
    assert unread_reason(keeper, config) == ""  # not asked yet: nothing to say
    await keeper.ensure(config)
    reason = unread_reason(keeper, config)
    assert "could not be read" in reason and "printed no flags" in reason
    facts = PreflightFacts(plan=loads_plan(PLAN_TEXT), extra={"flags": reason})
    (finding,) = check_flags(facts)
    assert finding.check == "flags" and not finding.blocking
