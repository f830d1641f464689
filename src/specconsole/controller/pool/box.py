"""The console's operations on a pool's boxes outside the trials (``ui.bridge.BoxOps``).

Why: quitting the console after a finished pool sweep must leave the boxes as the headless
pool sweep leaves them — ``[sweep] finally`` on every box still in the pool, side by side,
``best`` meaning the best of the *pool's* trials, deployed on each box's own port and in its
engine release's flag names (``controller.pool.finish.finish_pool``, what the headless pool
sweep does). The outcome is one line per box, each naming its box. ``preview`` (the diff
pane's "what would change") is the focused box's.
"""

from __future__ import annotations

from collections.abc import Callable

from specconsole.controller.pool.console import PoolConsole
from specconsole.controller.pool.finish import finish_pool, pool_final_status
from specconsole.controller.pool.run import Pool
from specconsole.controller.wiring import preview_deploy
from specconsole.core.config.model import ServerConfig
from specconsole.core.search.pool import as_port
from specconsole.present.leaving import deploying_line, rollback_command


class PoolBox:
    """``BoxOps`` for the pool behind ``console`` (its focused box for ``preview``)."""

    def __init__(self, pool: Pool, console: PoolConsole) -> None:
        self.pool = pool
        self.console = console

    @property
    def finally_action(self) -> str:
        return self.pool.plan.finally_action

    @property
    def rollback_command(self) -> str:
        return rollback_command(self.pool.session.path, self.console.focus)

    async def preview(self, config: ServerConfig) -> str | None:
        run = self.pool.runs[self.console.focus]
        return await preview_deploy(run.controller, run.ports.backend, as_port(config, run.port))

    async def finish(self, progress: Callable[[str], None]) -> tuple[str, bool]:
        """``finally`` on every box once every box still in the pool finished; otherwise
        nothing is changed and the message says which boxes had not."""
        pool = self.pool
        if pool_final_status(pool)[0] != "done":
            unfinished = [r.name for r in pool.alive() if not r.state.finished_reason]
            return (
                f"finally = {self.finally_action} not carried out: not every box finished "
                f"({', '.join(unfinished) or 'none left'}); the boxes are left as they are",
                False,
            )
        finished = await finish_pool(
            pool, lambda box, diff: progress(f"[{box}] {deploying_line(diff)}")
        )
        lines = [f"[{box}] {outcome.message}" for box, outcome in finished]
        for line in lines:
            progress(line)
        return "\n".join(lines), any(outcome.failed for _, outcome in finished)
