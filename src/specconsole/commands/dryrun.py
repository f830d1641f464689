"""``specconsole sweep PLAN --dry-run``: every change the sweep would make, changing nothing.

Why: on a production box the user wants to read what a sweep will do to their unit before
it does anything. The dry run probes the box as a sweep does before its first trial (reach,
so a host key, login or sudo problem shows now; the engine release, asked of the launcher or
of the server running now; what runs and whether it serves), then renders each planned
configuration exactly the way a deploy would — validated and normalized for that release by
the same function the controller uses (``core.machine.results.validate_config`` over
``EngineVersionKeeper.apply``), so the draft tokens SGLang derives are the ones shown — and
prints, per trial, what changes flag by flag (``present.deploys.flagdiff``), then the unified diff
against what the box would have at that point: the first against the unit on the box now,
each next one against the previous trial's. Nothing is uploaded, restarted or recorded; no
session folder is created. Environment values are redacted as everywhere.

An ``optimize`` plan's trials are chosen as results arrive, so only its first proposals
(the grid of its axes is not walked) can be shown: the dry run says so.
"""

from __future__ import annotations

import time
from typing import TextIO

from specconsole.core.machine import events as ev
from specconsole.core.machine.results import deploy_previewed, validate_config
from specconsole.core.plans.plan import StrategyKind, SweepPlan
from specconsole.present.box import probe_lines
from specconsole.present.deploys.flagdiff import summary_lines
from specconsole.present.labels import config_label

DRY_RUN_LIMIT = 200
"""At most this many planned trials are shown (a plan's max_trials is usually smaller)."""


async def dry_run(plan: SweepPlan, out: TextIO) -> int:
    """Print the planned diffs of ``plan``; returns the exit code (raises TransportError when
    the box cannot be reached, for the caller to report)."""
    from specconsole.controller.probe.boxprobe import probe_box
    from specconsole.controller.probe.endpoint import ServerEndpoint
    from specconsole.controller.probe.engine_detect import EngineVersionKeeper
    from specconsole.remote import make_backend, make_transport
    from specconsole.remote.artifact import unified_diff

    configs = list(plan.grid())
    # the sweep runs at most max_trials of them: "trial i/n" counts what it would run
    runs = min(len(configs), plan.max_trials) if plan.max_trials else len(configs)
    limit = min(DRY_RUN_LIMIT, runs)
    if plan.strategy is StrategyKind.OPTIMIZE:
        print(
            "dry run: an optimize sweep picks its trials from the results; the diffs below "
            "are the configurations of its space in order, not necessarily the ones it tries",
            file=out,
        )
    transport = make_transport(plan.profile)
    backend = make_backend(plan.profile, transport)
    endpoint = ServerEndpoint(transport, backend)
    endpoint.open()
    try:
        keeper = EngineVersionKeeper(transport)
        probe = await probe_box(
            transport, backend, plan.base, endpoint.health_problem, keeper, time.time,
            server_info=endpoint.server_info,
        )  # fmt: skip
        for line in probe_lines(probe):
            print(line, file=out)
        if not probe.reachable:
            print("dry run: the box cannot be reached; nothing was changed", file=out)
            return 1
        previous: str | None = None
        print(f"dry run against {transport.description} ({backend.description}):", file=out)
        for number, config in enumerate(configs[:limit], start=1):
            outcome = validate_config(keeper.apply(config))  # as the controller validates
            if not isinstance(outcome, ev.ConfigValidated):
                print(f"trial {number}/{runs} {config_label(config, plan.base)}:", file=out)
                print(f"    invalid, not deployed: {'; '.join(outcome.errors)}", file=out)
                continue
            effective = outcome.config  # what the deploy writes and the server runs
            if note := keeper.portable_note(config):
                print(f"note: {note}", file=out)
            preview = await backend.preview(effective)
            diff = (
                preview.diff
                if previous is None
                else unified_diff(previous, preview.artifact, _location(preview.diff))
            )
            previous = preview.artifact
            shown = deploy_previewed(effective, diff).diff
            label = config_label(effective, plan.base)
            print(f"trial {number}/{runs} {label}:", file=out)
            if not shown:
                print("    (no change)", file=out)
                continue
            for change in summary_lines(shown):  # what changes, flag by flag, first
                print(f"  {change}", file=out)
            for line in shown.rstrip("\n").splitlines():
                print(f"    {line}", file=out)
        if runs > limit:
            print(f"... and {runs - limit} more trials not shown", file=out)
        if len(configs) > runs:
            print(
                f"... and {len(configs) - runs} more configurations of the plan past "
                f"max_trials = {plan.max_trials}, not run",
                file=out,
            )
        print(f"then finally = {plan.finally_action!r}; nothing was changed on the box", file=out)
    finally:
        await endpoint.close()
        await transport.close()
    return 0


def _location(diff: str) -> str:
    """The path a diff names in its ``+++`` header (the artifact's place on the box)."""
    for line in diff.splitlines():
        if line.startswith("+++ "):
            return line[4:].strip().removesuffix(" (new)")
    return "artifact"
