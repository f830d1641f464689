"""``specconsole sweep PLAN --dry-run``: every change the sweep would make, changing nothing.

Why: on a production box the user wants to read what a sweep will do to their unit before
it does anything. The dry run connects (so a host key, login or sudo problem shows now),
renders each planned configuration the way a deploy would (the systemd backend edits the
unit on the box, so the text is exactly what a deploy writes) and prints, per trial, the
unified diff against what the box would have at that point: the first against the unit on
the box now, each next one against the previous trial's. Nothing is uploaded, restarted or
recorded; no session folder is created. Environment values are redacted as everywhere.

An ``optimize`` plan's trials are chosen as results arrive, so only its first proposals
(the grid of its axes is not walked) can be shown: the dry run says so.
"""

from __future__ import annotations

from typing import TextIO

from specconsole.core.machine.results import deploy_previewed
from specconsole.core.plans.plan import StrategyKind, SweepPlan
from specconsole.present.labels import config_label

DRY_RUN_LIMIT = 200
"""At most this many planned trials are shown (a plan's max_trials is usually smaller)."""


async def dry_run(plan: SweepPlan, out: TextIO) -> int:
    """Print the planned diffs of ``plan``; returns the exit code (raises TransportError when
    the box cannot be reached, for the caller to report)."""
    from specconsole.remote import make_backend, make_transport
    from specconsole.remote.artifact import unified_diff

    configs = list(plan.grid())
    limit = min(DRY_RUN_LIMIT, plan.max_trials or DRY_RUN_LIMIT)
    if plan.strategy is StrategyKind.OPTIMIZE:
        print(
            "dry run: an optimize sweep picks its trials from the results; the diffs below "
            "are the configurations of its space in order, not necessarily the ones it tries",
            file=out,
        )
    transport = make_transport(plan.profile)
    try:
        backend = make_backend(plan.profile, transport)
        previous: str | None = None
        print(f"dry run against {transport.description} ({backend.description}):", file=out)
        for number, config in enumerate(configs[:limit], start=1):
            preview = await backend.preview(config)
            diff = (
                preview.diff
                if previous is None
                else unified_diff(previous, preview.artifact, _location(preview.diff))
            )
            previous = preview.artifact
            shown = deploy_previewed(config, diff).diff
            print(f"trial {number}/{len(configs)} {config_label(config, plan.base)}:", file=out)
            if not shown:
                print("    (no change)", file=out)
            for line in shown.rstrip("\n").splitlines():
                print(f"    {line}", file=out)
        if len(configs) > limit:
            print(f"... and {len(configs) - limit} more configurations not shown", file=out)
        print(f"then finally = {plan.finally_action!r}; nothing was changed on the box", file=out)
    finally:
        await transport.close()
    return 0


def _location(diff: str) -> str:
    """The path a diff names in its ``+++`` header (the artifact's place on the box)."""
    for line in diff.splitlines():
        if line.startswith("+++ "):
            return line[4:].strip().removesuffix(" (new)")
    return "artifact"
