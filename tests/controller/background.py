"""A headless sweep over SSH run in the background of a test, so the test can act on the box
(cut its SSH sessions, swap its host key) while the sweep runs, and always cleans up: the
sweep is cancelled if it is still running and the server it started on the box is stopped."""

from __future__ import annotations

import asyncio
import contextlib
import io
from collections.abc import AsyncIterator, Callable

from specconsole.core.plans.plan import SweepPlan
from specconsole.headless.sweep import run_headless
from specconsole.remote.process import ProcessBackend
from specconsole.remote.transport.ssh import SshTransport
from specconsole.session.store import Session


@contextlib.asynccontextmanager
async def headless_in_background(
    plan: SweepPlan,
    session: Session,
    out: io.StringIO,
    *,
    before_cleanup: Callable[[], None] | None = None,
) -> AsyncIterator[asyncio.Future[int]]:
    """Yield the running sweep (await it for the exit code); ``before_cleanup`` puts the box
    back (a trusted host key) before the server is stopped over a fresh connection."""
    run = asyncio.ensure_future(run_headless(plan, session, out=out))
    try:
        yield run
    finally:
        if not run.done():
            run.cancel()
            with contextlib.suppress(BaseException):
                await run
        if before_cleanup is not None:
            before_cleanup()
        ssh = SshTransport(plan.profile.host)
        with contextlib.suppress(Exception):
            await ProcessBackend(ssh, plan.profile.service).stop()
        await ssh.close()
