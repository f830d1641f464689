"""Reattaching to a server a session left running: is it exactly this configuration, healthy?

Why its own module: ``resume`` must never redeploy a server that already runs the next
configuration (a ~100 s load wasted) nor reattach to one that merely looks alike; the answer
takes four checks, in order — the deployed artefact, the running process's artefact, the
service's state, ``/health`` — each with the reason it fails, which the controller reports.
"""

from __future__ import annotations

from specconsole.controller.probe.endpoint import ServerEndpoint
from specconsole.core.config.model import ServerConfig
from specconsole.core.machine import events as ev
from specconsole.core.ports import ServiceBackend, ServiceState

__all__ = ["check_reattach"]


async def check_reattach(
    backend: ServiceBackend, endpoint: ServerEndpoint, config: ServerConfig
) -> ev.ReattachChecked:
    """Whether the box runs ``config`` (in the box's release names), healthy, right now."""
    preview = await backend.preview(config)
    deployed = await backend.deployed_hash()
    if deployed != preview.artifact_hash:
        return ev.ReattachChecked(attached=False, detail="a different configuration is deployed")
    if await backend.running_hash() != preview.artifact_hash:
        return ev.ReattachChecked(attached=False, detail="the running server predates the deploy")
    status = await backend.status()
    if status.state is not ServiceState.RUNNING:
        return ev.ReattachChecked(attached=False, detail=f"the service is {status.state.value}")
    problem = await endpoint.health_problem(config)
    if problem is not None:
        return ev.ReattachChecked(attached=False, detail=problem)
    return ev.ReattachChecked(
        attached=True, artifact_hash=preview.artifact_hash, detail="same configuration, healthy"
    )
