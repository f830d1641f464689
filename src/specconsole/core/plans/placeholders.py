"""Placeholders in a plan, resolved at run time: ``{python}``, ``{port}`` and ``port = "auto"``.

Why its own module: the front ends resolve placeholders after parsing (the session chooses
the port once and a resumed session reuses it), and the session store re-resolves a stored
plan text into exactly what ran; neither needs the TOML parser for that.

``{python}`` in ``launcher``, ``extra_args``, ``env`` values and ``working_directory`` stands
for "the Python interpreter running specconsole"; ``[server] port = "auto"`` for "a free
loopback port" (local transport only); ``{port}`` in ``[service] run_dir`` is the server's
port, so two such sweeps never share a run folder. ``{plan_dir}`` in ``[bench] dataset`` is
the folder holding the plan file (so a plan names the prompt file beside it); like
``{python}``, the value used is recorded in the session and reused by ``resume``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from specconsole.core.config.model import ServerConfig
from specconsole.core.plans.plan import SweepPlan
from specconsole.core.plans.profile import Profile


def port_in_run_dir(profile: Profile, port: int) -> Profile:
    """``{port}`` in ``[service] run_dir`` is the server's port, so servers of plans on
    different ports (two demos at once) keep their runs, PID files and logs apart."""
    run_dir = profile.service.run_dir
    if "{port}" not in run_dir:
        return profile
    return replace(
        profile, service=replace(profile.service, run_dir=run_dir.replace("{port}", str(port)))
    )


def _subst(text: str, values: Mapping[str, str]) -> str:
    for key, value in values.items():
        text = text.replace("{" + key + "}", value)
    return text


def resolve_config_placeholders(config: ServerConfig, values: Mapping[str, str]) -> ServerConfig:
    """Substitute ``{python}``-style placeholders in the fields that may hold paths."""
    return replace(
        config,
        launcher=_subst(config.launcher, values),
        extra_args=tuple(_subst(a, values) for a in config.extra_args),
        env=tuple((k, _subst(v, values)) for k, v in config.env),
        working_directory=(
            None if config.working_directory is None else _subst(config.working_directory, values)
        ),
    )


def resolve_placeholders(plan: SweepPlan, values: Mapping[str, str]) -> SweepPlan:
    """The plan with placeholders resolved in its base configuration and string axes, and an
    ``"auto"`` port set to ``values["port"]`` (a port already chosen is kept)."""
    port = values.get("port")
    values = {k: v for k, v in values.items() if k != "port"}  # not a {name} in strings
    axes = tuple(
        (
            name,
            tuple(_subst(v, values) if isinstance(v, str) else v for v in vals),
        )
        for name, vals in plan.axes
    )
    base = resolve_config_placeholders(plan.base, values)
    if "{" in plan.bench.prompts:
        plan = replace(plan, bench=replace(plan.bench, prompts=_subst(plan.bench.prompts, values)))
    used = dict(plan.placeholders)
    used.update(values)
    placeholders = tuple(sorted(used.items()))
    if not plan.auto_port or port is None:
        return replace(plan, base=base, axes=axes, placeholders=placeholders)
    base = replace(base, port=int(port))
    profile = port_in_run_dir(plan.profile, base.port)
    return replace(
        plan, base=base, axes=axes, profile=profile, auto_port=False, placeholders=placeholders
    )
