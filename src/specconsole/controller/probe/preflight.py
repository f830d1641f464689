"""The pre-flight's I/O: gathering, before the first deploy, the facts its checks decide on.

Why here (the decisions are :mod:`specconsole.core.machine.handlers.preflight`'s): each fact costs a
file read or a command on the box, each bounded in time, and each is gathered once, after the
box probe and before the first trial is deployed (issue 27 #16) — in a headless sweep, a
resume and every box of a pool. ``sweep`` also runs the part that needs no box
(:func:`local_report`) before it creates the session folder, so a missing dataset leaves no
empty session behind.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import shlex
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from specconsole.controller.probe.flagcheck import unread_reason
from specconsole.core.boxfacts import foreign_memory
from specconsole.core.config.errors import ConfigError
from specconsole.core.config.render import launcher_argv
from specconsole.core.machine import events as ev
from specconsole.core.machine.handlers.preflight import (
    CHECKS,
    Finding,
    PreflightFacts,
    PreflightReport,
    planned_configs,
    run_checks,
)
from specconsole.core.plans.plan import SweepPlan
from specconsole.core.plans.profile import TransportKind, default_unit
from specconsole.core.ports import ServiceBackend, Transport, TransportError

if TYPE_CHECKING:
    from specconsole.controller.runtime import Controller

__all__ = ["MAX_CHECKED_CONFIGS", "box_target", "local_report", "preflight_hook", "run_preflight"]

log = logging.getLogger(__name__)

STEP_S = 20.0
"""Longest any one fact may take to gather (a command on the box, reading a dataset)."""

MAX_CHECKED_CONFIGS = 256
"""Configurations of the grid validated and rendered up front (the rest as they come)."""


def _dataset_problem(plan: SweepPlan) -> str:
    """Why the benchmark cannot be prepared ('' when it can): the dataset file, its entries,
    the request headers' ``env:VAR`` values — what every trial's benchmark would fail on."""
    from specconsole.bench.loadgen import plan_for
    from specconsole.bench.workload.prompts import PromptError

    try:
        plan_for(plan.bench)
    except (PromptError, ValueError, OSError) as exc:
        return f"{exc}; fix: point [bench] dataset at a readable file (or set the variable)"
    return ""


def _file_problems(plan: SweepPlan) -> tuple[tuple[str, str], ...]:
    """Files on this machine the plan names for reaching the box that cannot be read."""
    host = plan.profile.host
    named: list[tuple[str, str]] = [(f"[host] identity_files {f}", f) for f in host.identity_files]
    # (a missing known_hosts trusts no host: the probe says so, with the key's fingerprint)
    if host.ssh_config:
        named.append(("[host] ssh_config", host.ssh_config))
    out: list[tuple[str, str]] = []
    for what, raw in named:
        path = Path(raw).expanduser()
        if not path.is_file():
            out.append((what, f"{path} is not a file; fix: give the right path"))
        elif not os.access(path, os.R_OK):
            out.append((what, f"{path} cannot be read (permission denied)"))
    return tuple(out)


LOCAL_CHECKS = tuple((name, check) for name, check in CHECKS if name in ("dataset", "files"))
"""The checks that need no box (``sweep`` validates the configurations itself)."""


def local_report(plan: SweepPlan) -> PreflightReport:
    """The dataset and the local files, checked before a session folder is created."""
    facts = PreflightFacts(plan=plan, dataset=_dataset_problem(plan), files=_file_problems(plan))
    return run_checks(facts, LOCAL_CHECKS)


async def _bounded(step: Any, default: Any) -> Any:
    try:
        async with asyncio.timeout(STEP_S):
            return await step
    except (TimeoutError, TransportError, OSError, ConfigError):
        return default


async def _launcher_problem(transport: Transport, plan: SweepPlan) -> tuple[tuple[str, str], ...]:
    """The launcher's program cannot be found on the box (every trial would fail to start)."""
    try:
        words = launcher_argv(plan.base)
    except ConfigError:
        return ()  # the configuration check says why
    program = words[1] if words[0].endswith("/env") and len(words) > 1 else words[0]
    check = f"command -v -- {shlex.quote(program)} >/dev/null 2>&1 && echo found"
    result = await _bounded(transport.run(check, timeout=STEP_S), None)
    if result is None or "found" in result.stdout:
        return ()
    where = "this machine" if plan.profile.host.transport is TransportKind.LOCAL else "the box"
    return (
        (
            "[server] launcher",
            f"{program} is not found on {where}; fix: give the launcher's full path",
        ),
    )


async def _unit_text(backend: ServiceBackend) -> str | None:
    read_unit = getattr(backend, "read_unit", None)
    if read_unit is None:
        return None
    source = await _bounded(read_unit(), None)
    return None if source is None else source.cat.main


async def run_preflight(
    controller: Controller,
    plan: SweepPlan,
    *,
    target: str = "",
    configs: Callable[[SweepPlan], list[Any]] | None = None,
) -> PreflightReport:
    """Gather the facts for ``plan`` through ``controller``'s ports and run every check.
    The configurations are checked as the box's release renders them
    (``controller.versioned``); ``target`` is how the user names the box."""
    probe = controller.state.box
    reach = probe.error if probe is not None and not probe.reachable else None
    grid = (configs or planned_configs)(plan)[:MAX_CHECKED_CONFIGS]
    versioned = []
    for config in grid:
        with contextlib.suppress(Exception):  # an unusable config: validation says why
            config = controller.versioned(config)
        versioned.append(config)
    files = _file_problems(plan)
    unit_text = None
    if not reach:
        files += await _launcher_problem(controller.transport, plan)
        unit_text = await _unit_text(controller.backend)
    facts = PreflightFacts(
        plan=plan,
        configs=tuple(versioned),
        reach=reach,
        dataset=await asyncio.to_thread(_dataset_problem, plan),
        files=files,
        unit_text=unit_text,
        unit_name=plan.profile.service.unit,
        target=target,
        release=_release_unknown(controller, grid[0] if grid else plan.base),
        extra={
            "flags": _flags_unread(controller, grid[0] if grid else plan.base),
            "gpus": foreign_memory(probe),
        },
    )
    return run_checks(replace(facts))


def _release_unknown(controller: Controller, first: Any) -> str:
    """Why the box's release is not known, and what the first trial leaves out ('' when
    it is known: the probe asked the launcher, then the server running now)."""
    keeper = controller.engine_versions
    if keeper is None or not keeper.unknown or keeper.info is None:
        return ""
    left_out = keeper.portable_note(first)
    what = left_out.split(": ", 1)[1] if left_out else "nothing release-dependent is rendered"
    return (
        f"release unknown: portable flags — the engine release on the box is not known "
        f"({keeper.info.detail}); trial 1 is "
        f"deployed only with flags every release accepts: {what}"
    )


def _flags_unread(controller: Controller, first: Any) -> str:
    """Why the box's binary could not say which flags it accepts ('' when it did): the
    configurations above were validated with its own ``--help`` when it could."""
    keeper = controller.engine_versions
    return unread_reason(keeper.flags if keeper is not None else None, first)


def box_target(plan: SweepPlan) -> str:
    """How a command names the plan's box (``move-secrets gpu-box --unit x.service``)."""
    host = plan.profile.host
    target = host.alias or host.hostname or "PLAN.toml"
    unit = plan.profile.service.unit
    return target if unit == default_unit() else f"{target} --unit {unit}"


def preflight_hook(plan: SweepPlan, target: str = "") -> Callable[[Controller], Any]:
    """The controller's pre-flight for ``plan`` (``Controller.preflight``): run it, tell the
    findings once (``PreflightChecked``: a notice), and return why a headless run must stop
    ('' when it goes on)."""

    async def hook(controller: Controller) -> str:
        try:
            report = await run_preflight(controller, plan, target=target)
        except Exception as exc:  # a bug in a check must not stop a plan that can run
            log.exception("pre-flight: not run")
            report = PreflightReport((Finding("pre-flight", f"not run: {exc}", False),))
        findings = tuple(f"{f.check}: {f.message}" for f in report.findings)
        controller.apply(ev.PreflightChecked(findings=findings, blocking=bool(report.blocking)))
        return report.reason() if report.blocking and controller.stop_if_unreachable else ""

    return hook
