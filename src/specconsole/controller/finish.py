"""``[sweep] finally``: what the box is left serving once the sweep has finished.

Why its own module: a sweep's last trial is rarely its best one, and a box left on whatever
ran last (or with its service down) is the first thing a user of a production box notices.
After a finished sweep the headless driver (and ``specconsole rollback``) come here:

* ``best`` (the default): deploy the sweep's answer — a proven schedule, else the best trial
  by the plan's objective (:func:`specconsole.core.search.answer.answer`, the rule every
  view names the result by) — exactly the configuration that trial
  ran (``TrialRecord.effective``: normalized, in the box's flag names), never the plan's
  request for it — restart it and wait until ``/health`` answers. A box already running it
  (the best trial was the last, and its server still serves) is left alone: no restart.
* ``original``: put back the unit as it was before specconsole's first deploy (systemd keeps
  that backup forever) and wait until it serves.
* ``last``: leave the box as the last trial left it.
* ``stop``: stop the service.

Every outcome is one sentence naming the configuration the box now serves and where it came
from (or that it does not serve), never a silent change. Waiting is bounded by the plan's load
timeout (and ends at once when the service fails).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from specconsole.controller.probe.serving import (
    HEALTH_POLL_S,
    deployed_origin,
    unit_port,
    wait_serving,
)
from specconsole.core.config.model import ServerConfig
from specconsole.core.config.secrets import missing_values, unredact_config
from specconsole.core.engine.schedule import Role, config_role
from specconsole.core.machine.results import box_host, deploy_previewed
from specconsole.core.machine.state import TrialRecord
from specconsole.core.plans.objective import Goal
from specconsole.core.plans.plan import FINALLY_CHOICES, SweepPlan
from specconsole.core.ports import LocatedService, ServiceBackend, Transport, TransportError
from specconsole.core.search.answer import answer
from specconsole.present.labels import config_summary, record_label

__all__ = [
    "FinalOutcome",
    "apply_finally",
    "best_config",
    "finish_box",
    "unit_port",
    "wait_serving",
]


@dataclass(frozen=True, slots=True)
class FinalOutcome:
    """What ``finally`` did: ``serving`` is True when ``/health`` answered 200 at the end."""

    action: str
    message: str
    serving: bool
    config: ServerConfig | None = None
    """The configuration deployed (``best``), else None."""
    failed: bool = False
    """The box was changed but does not serve at the end (an honest exit code follows)."""


async def _config_serving(
    backend: ServiceBackend, transport: Transport, config: ServerConfig, timeout_s: float
) -> bool:
    """``config``'s server answers ``/health`` within ``timeout_s``; a batch job's node is
    asked for (bounded by the same deadline) while the job is still queued."""
    deadline = time.monotonic() + timeout_s
    host: str | None = box_host(config)
    if isinstance(backend, LocatedService):
        host = await backend.server_host(config)
        while host is None and time.monotonic() + HEALTH_POLL_S < deadline:
            await asyncio.sleep(HEALTH_POLL_S)
            host = await backend.server_host(config)
        if host is None:
            return False
    return await wait_serving(
        transport, config.port, deadline - time.monotonic(), host, backend=backend
    )


def best_config(
    trials: Sequence[TrialRecord],
    goal: Goal,
    env: Sequence[tuple[str, str]],
    noise_pct: float = 1.0,
) -> tuple[TrialRecord | None, ServerConfig | None]:
    """The sweep's answer (``core.search.answer``: a proven schedule, else the best trial by
    ``goal``) and the configuration it ran (``TrialRecord.effective``: what was deployed and
    benchmarked) with the plan's secret values put back (records keep only the names);
    (None, None) without a successful trial."""
    found = answer(trials, goal, noise_pct)
    if found is None:
        return None, None
    top = found.trial
    # the release it was spelt for is the deploying box's to choose (a pool's boxes may
    # differ), unless the plan declared one
    ran = replace(top.effective, engine_version=top.config.engine_version)
    return top, unredact_config(ran, env)


async def apply_finally(
    action: str,
    *,
    trials: Sequence[TrialRecord],
    goal: Goal,
    base: ServerConfig,
    backend: ServiceBackend,
    transport: Transport,
    timeout_s: float,
    on_diff: Callable[[str], None] = lambda diff: None,
    for_box: Callable[[ServerConfig], ServerConfig] = lambda config: config,
    noise_pct: float = 1.0,
) -> FinalOutcome:
    """Carry out ``action`` (one of ``FINALLY_CHOICES``) on the box; raises
    ``TransportError`` when the box cannot be reached (the caller reports it). ``on_diff``
    is given the change ``best`` makes to the box (values redacted) before it is made.
    ``for_box`` turns a recorded configuration into the one deployed, as the trials were
    (the flag names of the box's detected engine release)."""
    if action not in FINALLY_CHOICES:
        raise ValueError(f"finally = {action!r}: use one of {', '.join(FINALLY_CHOICES)}")
    if action == "last":
        return FinalOutcome(action, "finally = last: the box is left on the last trial", False)
    if action == "stop":
        await backend.stop()
        return FinalOutcome(action, "finally = stop: the service is stopped", False)
    if action == "original":
        return await _original(backend, transport, base, timeout_s)
    top, config = best_config(trials, goal, base.env, noise_pct)
    if top is None or config is None:
        return FinalOutcome(
            action, "finally = best: no successful trial; the box is left as it is", False
        )
    config = for_box(config)
    if missing := missing_values(config):
        return FinalOutcome(
            action,
            f"finally = best: the values of {', '.join(missing)} are not known here; "
            "the box is left as it is",
            False,
        )
    why = (
        "the sweep's proven schedule"
        if config_role(top.effective) is Role.SCHEDULE
        else f"best by {goal.objective.describe}"
    )
    what = f"trial {top.index + 1} ({record_label(top, base)}, {why})"
    preview = await backend.preview(config)
    if not preview.diff and await _runs_already(backend, transport, config, preview.artifact_hash):
        return FinalOutcome(
            action,
            f"finally = best: deployed {what}: it already runs there, not restarted; "
            "the box serves",
            True,
            config,
        )
    on_diff(deploy_previewed(config, preview.diff).diff)
    await backend.deploy(config)
    await backend.start()
    serving = await _config_serving(backend, transport, config, timeout_s)
    state = "serves it" if serving else "did not answer /health within the load timeout"
    return FinalOutcome(
        action,
        f"finally = best: deployed {what}; the box {state}",
        serving,
        config,
        failed=not serving,
    )


async def _runs_already(
    backend: ServiceBackend, transport: Transport, config: ServerConfig, artifact_hash: str
) -> bool:
    """The live server was started from exactly this artifact and answers ``/health``: a
    restart would only cost its load time."""
    if await backend.running_hash() != artifact_hash:
        return False
    return await _config_serving(backend, transport, config, 0.0)


async def finish_box(
    plan: SweepPlan,
    trials: Sequence[TrialRecord],
    backend: ServiceBackend,
    transport: Transport,
    *,
    rollback_command: str,
    on_diff: Callable[[str], None] = lambda diff: None,
    for_box: Callable[[ServerConfig], ServerConfig] = lambda config: config,
) -> FinalOutcome:
    """The plan's ``[sweep] finally`` on one box, as every way out of a finished sweep
    carries it out (the headless driver, the console's quit, each box of a pool): a box that
    cannot be reached is an outcome too — left as it is, ``failed``, with the command that
    puts a configuration that served back."""
    try:
        return await apply_finally(
            plan.finally_action,
            trials=trials,
            goal=plan.goal,
            base=plan.base,
            backend=backend,
            transport=transport,
            timeout_s=plan.load_timeout_s,
            on_diff=on_diff,
            for_box=for_box,
            noise_pct=plan.noise_pct,
        )
    except (TransportError, OSError) as exc:
        return FinalOutcome(
            plan.finally_action,
            f"error: finally = {plan.finally_action}: {exc}; the box is left as the last "
            f"trial left it. To put it back: {rollback_command}",
            serving=False,
            failed=True,
        )


async def _original(
    backend: ServiceBackend, transport: Transport, base: ServerConfig, timeout_s: float
) -> FinalOutcome:
    restore = getattr(backend, "restore_original", None)
    if restore is None:
        return FinalOutcome(
            "original",
            f"finally = original needs a systemd unit ({backend.description} keeps no "
            "original); the box is left on the last trial",
            False,
        )
    restored = await restore()
    if restored is None:
        return FinalOutcome(
            "original", "finally = original: nothing was replaced; the box is left as is", False
        )
    await backend.start()
    port = await unit_port(backend, base.port)
    serving = await wait_serving(transport, port, timeout_s, backend=backend)
    config, _origin = await deployed_origin(backend, base, ())
    runs = "" if config is None else f" (it runs {config_summary(config)})"
    state = "serves" if serving else "did not answer /health within the load timeout"
    return FinalOutcome(
        "original",
        f"finally = original: restored the box's own unit from before the session{runs}; "
        f"it {state}",
        serving,
        failed=not serving,
    )
