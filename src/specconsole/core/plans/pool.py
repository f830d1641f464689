"""A pool of boxes in one plan: several hosts (or Slurm job slots) running one shared sweep.

Why this is its own module: a pool is an orchestration over ordinary single-box machines,
so the plan keeps its single-box meaning (``[host]``/``[service]``) and this module only adds
the list of boxes and the pure rules the orchestrator (``controller.pool.run``) applies:

* **Which boxes.** ``[[hosts]]`` entries, each a ``[host]`` table of its own plus ``name``,
  an optional ``service`` table (merged over the top-level ``[service]``) and an optional
  ``server_port`` for the server; or one template — ``[host]``/``[service]`` with ``[pool] aliases``
  (one box per alias) or ``[pool] max_parallel = N`` (N job slots on the same login node: a
  Slurm pool is N jobs at once). Boxes that share a machine get their own run folder
  (``RUN_DIR/BOX``) and, when they share a transport target, their own server port (the
  plan's port + slot), so two runs never stop each other's server.

The rules the orchestrator applies to the boxes' trials (the shared view, "alike") are in
:mod:`specconsole.core.search.pool`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from specconsole.core.config.inputs import did_you_mean
from specconsole.core.plans.profile import (
    Profile,
    ProfileError,
    TransportKind,
    parse_host,
    parse_service,
)

POOL_KEYS: dict[str, tuple[Any, str]] = {
    "aliases": (list[str], "One box per ssh alias, each like [host]."),
    "max_parallel": (int, "Slots on the one [host] box."),
}
"""``[pool]``'s keys: each one's TOML type and help (``core.plans.schema`` declares them)."""
BOX_KEYS: dict[str, tuple[Any, str]] = {
    "name": (str, "The box's name in the pool."),
    "service": (dict[str, Any], "This box's [service] keys over the shared ones."),
    "server_port": (int, "This box's server port (negative: the plan's port + N)."),
}
"""A ``[[hosts]]`` entry's own keys (the rest are ``[host]`` keys)."""
_POOL_KEYS = set(POOL_KEYS)
_BOX_KEYS = set(BOX_KEYS)


class PoolError(ValueError):
    """A pool table is wrong; the message names the key and the fix."""


@dataclass(frozen=True, slots=True)
class Box:
    """One member of the pool: a name, how to reach it and run the server there."""

    name: str
    profile: Profile
    port: int | None = None
    """The server port on this box (None: the plan's ``[server] port``; negative: the
    plan's port + that many, for boxes sharing one machine)."""


def _target(profile: Profile) -> tuple[str, str]:
    host = profile.host
    if host.transport is TransportKind.LOCAL:
        return ("local", "")
    return ("ssh", f"{host.user or ''}@{host.target()}:{host.port or 22}")


def parse_boxes(document: Mapping[str, Any], profile: Profile) -> tuple[Box, ...]:
    """The pool a plan describes (``()`` for a single-box plan)."""
    hosts = document.get("hosts")
    pool = document.get("pool", {})
    if not isinstance(pool, Mapping):
        raise PoolError("[pool] must be a table, e.g. [pool] followed by max_parallel = 2")
    for key in pool:
        if key not in _POOL_KEYS:
            raise PoolError(
                f"[pool] unknown key {key!r}; {did_you_mean(key, _POOL_KEYS)}"
                "known keys: aliases, max_parallel"
            )
    boxes: list[Box]
    if hosts is not None:
        if pool:
            raise PoolError("give either [[hosts]] entries or a [pool] table, not both")
        if "host" in document:
            raise PoolError("with [[hosts]] entries, put each host's keys there, not in [host]")
        boxes = _from_hosts(hosts, document.get("service", {}))
    elif "aliases" in pool:
        boxes = _from_aliases(pool, document, profile)
    elif "max_parallel" in pool:
        boxes = _from_slots(pool["max_parallel"], profile)
    else:
        return ()
    names = [b.name for b in boxes]
    duplicate = next((n for n in names if names.count(n) > 1), None)
    if duplicate is not None:
        raise PoolError(f"two boxes are named {duplicate!r}; give each [[hosts]] a unique name")
    return _separate(tuple(boxes))


def _from_hosts(hosts: Any, service: Any) -> list[Box]:
    if not isinstance(hosts, list) or not hosts or not all(isinstance(h, Mapping) for h in hosts):
        raise PoolError('[[hosts]] must be one or more tables, e.g. [[hosts]] alias = "gpu-a"')
    if not isinstance(service, Mapping):
        raise PoolError("[service] must be a table")
    boxes = []
    for i, entry in enumerate(hosts):
        where = f"[[hosts]] #{i + 1}"
        table = {k: v for k, v in entry.items() if k not in _BOX_KEYS}
        own_service = entry.get("service", {})
        if not isinstance(own_service, Mapping):
            raise PoolError(f"{where} service must be a table, e.g. service = {{ kind = ... }}")
        try:
            box_profile = Profile(
                host=parse_host(table), service=parse_service({**service, **own_service})
            )
        except ProfileError as exc:
            raise PoolError(f"{where}: {exc}") from None
        name = entry.get("name", box_profile.host.alias or box_profile.host.hostname)
        if not isinstance(name, str) or not name.strip():
            name = f"box-{i + 1}"
        port = _port(entry.get("server_port"), f"{where} server_port")
        boxes.append(Box(name=name.strip(), profile=box_profile, port=port))
    return boxes


def _from_aliases(
    pool: Mapping[str, Any], document: Mapping[str, Any], profile: Profile
) -> list[Box]:
    aliases = pool["aliases"]
    if not isinstance(aliases, list) or not aliases or not all(isinstance(a, str) for a in aliases):
        raise PoolError('[pool] aliases must be a list of host aliases, e.g. ["gpu-a", "gpu-b"]')
    if "max_parallel" in pool:
        raise PoolError("[pool] give aliases (one box each) or max_parallel (job slots), not both")
    if profile.host.transport is not TransportKind.SSH:
        raise PoolError('[pool] aliases need [host] transport = "ssh" (each alias is a box)')
    table = dict(document.get("host", {}))
    table.pop("hostname", None)
    return [
        Box(name=alias, profile=replace(profile, host=parse_host({**table, "alias": alias})))
        for alias in aliases
    ]


def _from_slots(count: Any, profile: Profile) -> list[Box]:
    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        raise PoolError(f"[pool] max_parallel must be a whole number of 1 or more, got {count!r}")
    return [Box(name=f"slot-{i + 1}", profile=profile) for i in range(count)]


def _port(value: Any, where: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 0 < value < 65536:
        raise PoolError(
            f"{where} must be a port number (1-65535), got {value!r}; leave it out to use "
            "the plan's [server] port (boxes on one machine get the next ones)"
        )
    return value


def _separate(boxes: tuple[Box, ...]) -> tuple[Box, ...]:
    """Boxes on one machine get their own run folder; on one target, their own port."""
    out: list[Box] = []
    folders: dict[tuple[tuple[str, str], str], int] = {}
    for box in boxes:
        key = (_target(box.profile), box.profile.service.run_dir)
        folders[key] = folders.get(key, 0) + 1
    slots: dict[tuple[str, str], int] = {}
    for box in boxes:
        target = _target(box.profile)
        service = box.profile.service
        if folders[(target, service.run_dir)] > 1:
            service = replace(service, run_dir=f"{service.run_dir.rstrip('/')}/{box.name}")
        slot = slots.get(target, 0)
        slots[target] = slot + 1
        port = box.port
        if port is None and slot:
            port = -slot  # the plan's port + slot, resolved by box_port()
        out.append(replace(box, profile=replace(box.profile, service=service), port=port))
    return tuple(out)


def box_port(box: Box, plan_port: int) -> int:
    """The server port on ``box`` given the plan's ``[server] port``."""
    if box.port is None:
        return plan_port
    if box.port < 0:
        return plan_port - box.port
    return box.port
