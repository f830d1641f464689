"""``specconsole rollback SESSION [--original]``: put a unit back, start it, and say which
configuration now runs and where it came from.

Why its own module: a rollback restores a *file* (the newest backup, or with ``--original``
the first one — the box's own unit from before specconsole's first deploy), but the user
thinks in configurations. Printing the backup's path (or, for ``--original``, the path of the
backup it had just made of the replaced unit) left them to guess whether the box now ran
their own steps=3 or the previous trial's steps=4. The restored unit is read back, parsed and
matched against the session's trial records (by the hash each deploy recorded), so the
message names it: ``it runs EAGLE3 steps=4 … — trial 2's configuration (steps=4 draft=5,
ok)``. Waiting for ``/health`` is bounded and ends at once when the service fails.
"""

from __future__ import annotations

from collections.abc import Sequence

from specconsole.controller.probe.serving import deployed_origin, unit_port, wait_serving
from specconsole.core.machine.state import TrialRecord
from specconsole.core.plans.plan import SweepPlan

__all__ = ["RollbackFailed", "rollback_box"]


class RollbackFailed(RuntimeError):
    """The rollback could not be done, or the restored server does not serve; the message
    says what was restored and what the box runs now."""


async def rollback_box(
    plan: SweepPlan, trials: Sequence[TrialRecord], *, original: bool, wait: float
) -> str:
    """Restore the newest backup (``original``: the first one) on ``plan``'s box, start it,
    wait up to ``wait`` seconds for ``/health``; returns the message naming what now runs.
    Raises :class:`RollbackFailed` (and ``TransportError`` when the box cannot be reached)."""
    from specconsole.remote import make_backend, make_transport

    transport = make_transport(plan.profile)
    try:
        backend = make_backend(plan.profile, transport)
        if original:
            restore = getattr(backend, "restore_original", None)
            if restore is None:
                raise RollbackFailed(f"--original is for systemd units ({backend.description})")
            restored = await restore()
            what = "the box's own unit from before this session's first deploy"
        else:
            restored = await backend.rollback()
            what = "the unit from before the last deploy"
        if restored is None:
            raise RollbackFailed("there is no backup to restore on the box; nothing was changed")
        source = f" (from {restored.restored_from})" if restored.restored_from else ""
        kept = (
            f"; the unit it replaced is kept in {restored.backup_path}"
            if original and restored.backup_path
            else ""
        )
        await backend.start()
        _config, runs = await deployed_origin(backend, plan.base, trials)
        port = await unit_port(backend, plan.base.port)
        done = f"restored {what}{source}{kept}: it runs {runs}"
        if await wait_serving(transport, port, wait, backend=backend):
            return f"{done}; the server serves again"
        status = await backend.status()
        raise RollbackFailed(
            f"{done}; but /health on port {port} did not answer 200 (the service is "
            f"{status.detail or status.state.value})"
        )
    finally:
        await transport.close()
