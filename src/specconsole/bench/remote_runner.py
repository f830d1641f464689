"""Run the benchmark on the GPU box: a self-contained script sent over any Transport.

Why: at high concurrency the SSH tunnel or the console host can limit the measured
throughput; generating the load on the box removes both. The box cannot be assumed to have
specconsole, httpx or even pip, so :func:`build_script` bundles the *same* standard-library
modules the console uses (``core.measure.metrics``, ``bench.api``, ``bench.workload.prompts``,
``bench.ladder``, ``bench.phase``, ``bench.steady``, ``bench.ladder_run``,
``bench.wire.rawhttp``, ``bench.remote_main``), and ``prometheus_client``'s text parser,
into one Python file whose tiny import hook serves them from memory. Nothing is re-implemented
for the remote side, so both placements schedule, parse and compute identically.

The script is uploaded (a heredoc through ``sh -c`` would hit Linux's 128 KiB limit on one
argument once the prompt pool is included), run with ``python3 -u``, and reports JSON lines
(see :mod:`specconsole.bench.remote_main`) that :class:`RemoteBenchmarkRunner` turns into
:class:`~specconsole.core.ports.BenchProgress` callbacks and the final
:class:`~specconsole.core.measure.result.BenchResult`.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import importlib
import json
import shlex
from collections.abc import Callable
from contextlib import aclosing
from pathlib import Path

from specconsole.bench.ladder import LadderPlan
from specconsole.bench.loadgen import plan_for
from specconsole.core.measure.metrics import LevelMetrics
from specconsole.core.measure.result import BenchResult
from specconsole.core.ports import BenchProgress, BenchSpec, Transport, TransportError

BUNDLED_MODULES: tuple[str, ...] = (
    "prometheus_client.validation",
    "prometheus_client.samples",
    "prometheus_client.metrics_core",
    "prometheus_client.parser",
    "specconsole.core.measure.prometheus",
    "specconsole.core.measure.stats",
    "specconsole.core.measure.slo",
    "specconsole.core.measure.timeline",
    "specconsole.core.measure.acceptance",
    "specconsole.core.measure.metrics",
    "specconsole.core.measure.result",
    "specconsole.bench.waits",
    "specconsole.bench.api",
    "specconsole.bench.workload.prompts",
    "specconsole.bench.ladder",
    "specconsole.bench.phase",
    "specconsole.bench.steady",
    "specconsole.bench.rerun",
    "specconsole.bench.control",
    "specconsole.bench.acceptance",
    "specconsole.bench.failures",
    "specconsole.bench.ladder_run",
    "specconsole.bench.wire.rawconn",
    "specconsole.bench.wire.rawhttp",
    "specconsole.bench.wire.eventloop",
    "specconsole.bench.remote_main",
)
"""Modules shipped in the script (all standard-library only, Python 3.10+): specconsole's own,
and the four modules of ``prometheus_client``'s text parser (its package's ``__init__`` is not
shipped: it would load the HTTP exposition too), so the box reads ``/metrics`` with the same
strict parser as the console without anything installed."""

BUNDLED_PACKAGES: tuple[str, ...] = (
    "prometheus_client",
    "specconsole",
    "specconsole.core",
    "specconsole.core.measure",
    "specconsole.bench",
    "specconsole.bench.wire",
    "specconsole.bench.workload",
)
"""Packages the script provides as empty shells (their real ``__init__`` is not needed)."""

_BOOTSTRAP = '''\
"""specconsole remote benchmark runner (generated; standard library only)."""
import importlib.abc
import importlib.util
import json
import sys

if sys.version_info < (3, 10):
    print(json.dumps({{"type": "error", "message": "the remote runner needs Python >= 3.10, "
                      "found " + sys.version.split()[0]}}), flush=True)
    sys.exit(2)

_SOURCES = {sources}
_PACKAGES = {packages}


class _Bundle(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, name, path=None, target=None):
        if name in _SOURCES or name in _PACKAGES:
            return importlib.util.spec_from_loader(name, self, is_package=name in _PACKAGES)
        return None

    def create_module(self, spec):
        return None

    def exec_module(self, module):
        source = _SOURCES.get(module.__name__, "")
        exec(compile(source, "<specconsole:" + module.__name__ + ">", "exec"), module.__dict__)


sys.meta_path.insert(0, _Bundle())
from specconsole.bench.remote_main import main  # noqa: E402

sys.exit(main({plan}, {url}))
'''


def _module_source(name: str) -> str:
    module = importlib.import_module(name)
    assert module.__file__ is not None
    return Path(module.__file__).read_text("utf-8")


def build_script(plan: LadderPlan, base_url: str) -> str:
    """The complete runner script for ``plan`` against ``base_url`` (as seen on the box)."""
    sources = {name: _module_source(name) for name in BUNDLED_MODULES}
    return _BOOTSTRAP.format(
        sources=repr(sources),
        packages=repr(set(BUNDLED_PACKAGES)),
        plan=repr(json.dumps(plan.to_dict(), separators=(",", ":"))),
        url=repr(base_url),
    )


class RemoteBenchmarkRunner:
    """:class:`~specconsole.core.ports.BenchmarkRunner` that generates load on the box.

    ``base_url`` is the server's URL as seen on the box (usually ``http://127.0.0.1:PORT``).
    :meth:`stop` interrupts the remote run (SIGINT) and ``run`` returns the partial result;
    cancelling the awaiting task ends the remote process with the stream (no result).
    """

    def __init__(
        self, transport: Transport, *, python: str = "python3", workdir: str = "/tmp"
    ) -> None:
        self._transport = transport
        self._python = python
        self._workdir = workdir.rstrip("/") or "/"
        self._pid: int | None = None
        self._stop_requested = False
        self.last_result: BenchResult | None = None

    def stop(self) -> None:
        """Ask the remote run to stop (schedules one ``kill -INT`` on the box; asking again
        does nothing more)."""
        if self._stop_requested:
            return
        self._stop_requested = True
        if self._pid is not None:
            asyncio.get_running_loop().create_task(self._interrupt(self._pid))

    async def _interrupt(self, pid: int) -> None:
        with contextlib.suppress(TransportError):
            await self._transport.run(f"kill -INT {pid}", timeout=15.0)

    async def run(
        self,
        spec: BenchSpec,
        base_url: str,
        *,
        on_progress: Callable[[BenchProgress], None] | None = None,
    ) -> BenchResult:
        plan = plan_for(spec)
        script = build_script(plan, base_url).encode()
        digest = hashlib.sha256(script).hexdigest()[:16]
        path = f"{self._workdir}/specconsole-bench-{digest}.py"
        await self._transport.upload(script, path, mode=0o600)
        self._pid = None
        self._stop_requested = False
        result: BenchResult | None = None
        problem: str | None = None
        command = f"exec {shlex.quote(self._python)} -u {shlex.quote(path)}"
        try:
            async with aclosing(self._transport.stream(command)) as lines:
                async for line in lines:
                    try:
                        message = json.loads(line)
                    except (ValueError, RecursionError):
                        continue  # not ours (a login banner, a warning, a hostile line)
                    kind = message.pop("type", None) if isinstance(message, dict) else None
                    if kind == "hello":
                        self._pid = int(message["pid"])
                        if self._stop_requested:
                            await self._interrupt(self._pid)
                    elif kind == "progress" and on_progress is not None:
                        record = message.pop("level_result", None)
                        level = None if record is None else LevelMetrics.from_record(record)
                        on_progress(BenchProgress(**message, level_result=level))
                    elif kind == "result":
                        result = BenchResult.from_dict(message["result"])
                    elif kind == "error":
                        problem = str(message.get("message"))
        except TransportError as exc:
            problem = problem or str(exc)
        finally:
            self._pid = None
            with contextlib.suppress(TransportError, OSError):
                await self._transport.run(f"rm -f {shlex.quote(path)}", timeout=15.0)
        if result is None:
            raise TransportError(
                f"the remote benchmark runner produced no result: {problem or 'it exited early'}"
            )
        self.last_result = result
        return result
