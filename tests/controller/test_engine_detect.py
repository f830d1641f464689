"""Detecting the box's SGLang release through the launcher's own interpreter (real local
transport, a real interpreter with a stand-in ``sglang`` package on its path), and sweeps over
the real process backend and simulator that deploy in the detected release's flag names."""

from __future__ import annotations

import asyncio
import io
import sys
import time
import tomllib
from dataclasses import replace
from pathlib import Path

import pytest

from specconsole.controller.localplan import resolve_local_placeholders
from specconsole.controller.probe.engine_detect import (
    EngineVersionInfo,
    EngineVersionKeeper,
    detect_engine_version,
    launcher_python,
    version_from_server_info,
)
from specconsole.controller.wiring import wire_controller
from specconsole.core.config.model import ServerConfig
from specconsole.core.machine import events as ev
from specconsole.core.machine.state import ControllerState, TrialRecord
from specconsole.core.plans.parse import loads_plan
from specconsole.core.plans.profile import ServiceProfile
from specconsole.core.ports import Transport
from specconsole.headless.sweep import run_headless
from specconsole.remote.process import ProcessBackend
from specconsole.remote.transport.local import LocalTransport
from specconsole.session.store import Session
from tests.fixtures.plans import sim_plan_text
from tests.fixtures.transports import transport  # noqa: F401  (the fixture)


def test_launcher_python() -> None:
    venv = ServerConfig(
        model_path="m", launcher="/opt/sg/.venv/bin/python3 -m sglang.launch_server"
    )
    assert launcher_python(venv) == "/opt/sg/.venv/bin/python3"
    assert launcher_python(ServerConfig(model_path="m", launcher="sglang serve")) == "python3"
    # a console script in an environment's bin folder runs on that environment's python3
    script = ServerConfig(model_path="m", engine="vllm", launcher="/opt/v/.venv/bin/vllm serve")
    assert launcher_python(script) == "/opt/v/.venv/bin/python3"
    system = ServerConfig(model_path="m", engine="vllm", launcher="/usr/local/bin/vllm serve")
    assert launcher_python(system) == "python3"


@pytest.mark.asyncio
async def test_detects_the_installed_release(tmp_path: Path) -> None:
    pkg = tmp_path / "sglang"
    pkg.mkdir()
    (pkg / "__init__.py").write_text('__version__ = "0.5.23"\n')
    config = ServerConfig(
        model_path="m",
        launcher=f"{sys.executable} -m sglang.launch_server",
        working_directory=str(tmp_path),
    )
    local = LocalTransport()
    assert await detect_engine_version(local, config) == "0.5.23"
    # no sglang importable there: unknown, not an error
    elsewhere = ServerConfig(model_path="m", launcher=config.launcher, working_directory="/")
    assert await detect_engine_version(local, elsewhere) is None
    vllm = ServerConfig(model_path="m", engine="vllm")
    assert await detect_engine_version(local, vllm) is None


@pytest.mark.asyncio
async def test_vllms_release_is_read_from_its_version_file_without_importing_it(
    tmp_path: Path,
    transport: Transport,  # noqa: F811
) -> None:
    """``vllm/_version.py`` (setuptools-scm's) is read, never ``import vllm`` (which brings
    torch in: 20 s on a busy box); a package without that file is imported. Locally and over
    the real sshd (the script is several lines)."""
    package = tmp_path / "box" / "vllm"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text('raise SystemExit("imported")\n')
    (package / "_version.py").write_text(
        "__version__ = version = '0.32.0'\n__version_tuple__ = version_tuple = (0, 32, 0)\n"
    )
    launcher = f"{tmp_path}/venv/bin/vllm serve"
    config = ServerConfig(
        model_path="m", engine="vllm", launcher=launcher, working_directory=str(package.parent)
    )
    python = tmp_path / "venv" / "bin" / "python3"
    python.parent.mkdir(parents=True)
    python.symlink_to(sys.executable)
    assert await detect_engine_version(transport, config) == "0.32.0"
    (package / "_version.py").unlink()
    (package / "__init__.py").write_text('__version__ = "0.11.0"\n')
    assert await detect_engine_version(transport, config) == "0.11.0"


def test_server_info_fallback() -> None:
    assert version_from_server_info({"version": "0.5.14"}) == "0.5.14"
    assert version_from_server_info({"version": "unknown"}) is None
    assert version_from_server_info([]) is None


def _stand_in(folder: Path, body: str) -> Path:
    """A working directory whose ``import sglang`` runs ``body``."""
    (folder / "sglang").mkdir(parents=True)
    (folder / "sglang" / "__init__.py").write_text(body)
    return folder


@pytest.mark.asyncio
async def test_detection_is_bounded_and_never_raises(tmp_path: Path) -> None:
    hangs = _stand_in(tmp_path / "hangs", "import time\ntime.sleep(60)\n")
    config = ServerConfig(
        model_path="m",
        launcher=f"{sys.executable} -m sglang.launch_server",
        working_directory=str(hangs),
    )
    keeper = EngineVersionKeeper(LocalTransport(), budget_s=1.0)
    started = time.monotonic()
    info = await keeper.ensure(config)
    assert time.monotonic() - started < 10.0
    assert info is not None and info.version is None and info.source == "unknown"
    assert "timed out" in info.detail
    assert keeper.apply(config) is config  # the default names, the sweep goes on
    keeper.from_server_info({"version": "0.5.14"})  # the running server tells it later
    assert keeper.info == EngineVersionInfo("0.5.14", "server_info", "/server_info version")
    assert keeper.apply(config).engine_version == "0.5.14"
    declared = ServerConfig(model_path="m", engine_version="0.5.9")
    assert keeper.apply(declared) is declared  # [server] engine_version wins


def _sweep_text(run_dir: Path, work: Path, *, sim_version: str, declared: str = "") -> str:
    text = sim_plan_text(
        run_dir,
        extra_args=["--sim-load-seconds", "0.3", "--sim-engine-version", sim_version],
        sweep='[sweep]\nstrategy = "grid"\nload_timeout = 60\n\n'
        "[sweep.axes]\nspeculative_num_steps = [3]\n",
        bench="[bench]\nladder = [1]\nrequests_per_level = 2\ninput_len = 32\n"
        "output_len = 8\nwarmup_requests = 0\n",
    )
    extra = f'working_directory = "{work}"\n'
    if declared:
        extra += f'engine_version = "{declared}"\n'
    return text.replace("[server]\n", f"[server]\n{extra}", 1)


async def _sweep(tmp_path: Path, text: str) -> tuple[int, str, dict[str, object], list[str]]:
    plan = resolve_local_placeholders(loads_plan(text))
    session = Session.create(tmp_path / "sessions", plan)
    out = io.StringIO()
    run_dir = tmp_path / "run"
    try:
        code = await asyncio.wait_for(run_headless(plan, session, out=out), 120)
    finally:
        backend = ProcessBackend(
            LocalTransport(), ServiceProfile(run_dir=str(run_dir), stop_timeout=5)
        )
        await backend.stop()
    meta = tomllib.loads((session.path / "session.toml").read_text())["session"]
    (trial,) = session.load_trials()
    return code, out.getvalue(), meta, list(trial.argv)


@pytest.mark.asyncio
async def test_a_sweep_deploys_in_the_detected_releases_names(tmp_path: Path) -> None:
    """The simulator playing 0.5.23 refuses ``--cuda-graph-max-bs``: the sweep only passes if
    the release detected on the box chose ``--cuda-graph-max-bs-decode``."""
    work = _stand_in(tmp_path / "box", '__version__ = "0.5.23"\n')
    text = _sweep_text(tmp_path / "run", work, sim_version="0.5.23")
    code, out, meta, argv = await _sweep(tmp_path, text)
    assert code == 0, out
    assert meta["engine_version"] == "0.5.23" and meta["engine_version_source"] == "detected"
    assert "--cuda-graph-max-bs-decode" in argv and "--cuda-graph-max-bs" not in argv


@pytest.mark.asyncio
async def test_an_unknown_release_deploys_portable_flags_until_server_info_fills_it(
    tmp_path: Path,
) -> None:
    """Issue 27 #17: nothing on the box says its release (no importable sglang, nothing
    serving). Trial 1 is deployed only with flags every release accepts — no
    ``--cuda-graph-max-bs`` in either spelling, and it says so — so the simulator playing
    0.5.23 (which refuses the old name) loads it; trial 2 is rendered in the names the server
    reported (``/server_info``)."""
    work = tmp_path / "no-sglang"  # nothing importable: detection fails, the sweep does not
    work.mkdir()
    text = _sweep_text(tmp_path / "run", work, sim_version="0.5.23").replace(
        "speculative_num_steps = [3]", "speculative_num_steps = [2, 3]"
    )
    plan = resolve_local_placeholders(loads_plan(text))
    session = Session.create(tmp_path / "sessions", plan)
    out = io.StringIO()
    try:
        code = await asyncio.wait_for(run_headless(plan, session, out=out), 120)
    finally:
        backend = ProcessBackend(
            LocalTransport(), ServiceProfile(run_dir=str(tmp_path / "run"), stop_timeout=5)
        )
        await backend.stop()
    shown = out.getvalue()
    assert code == 0, shown
    meta = tomllib.loads((session.path / "session.toml").read_text())["session"]
    assert meta["engine_version"] == "0.5.23" and meta["engine_version_source"] == "server_info"
    first, second = session.load_trials()
    assert first.status.value == "ok" and second.status.value == "ok", shown
    assert not any(w.startswith("--cuda-graph-max-bs") for w in first.argv), first.argv
    assert first.effective.cuda_graph_max_bs is None  # what ran, as every view shows it
    assert any("left out cuda_graph_max_bs = 64" in w for w in first.warnings), first.warnings
    # said once, by the pre-flight, before trial 1 is deployed
    assert shown.count("only with flags every release accepts") == 1, shown
    said = shown.index(
        "pre-flight: release: release unknown: portable flags — the engine release on the box"
    )
    assert said < shown.index("trial 1/2 steps=2 draft=3 cg-bs=default: deploying"), shown
    assert "--cuda-graph-max-bs-decode" in second.argv and "--cuda-graph-max-bs" not in second.argv
    assert second.effective.cuda_graph_max_bs == 64


@pytest.mark.asyncio
async def test_the_declared_release_overrides_detection(tmp_path: Path) -> None:
    work = _stand_in(tmp_path / "box", '__version__ = "0.5.23"\n')
    text = _sweep_text(tmp_path / "run", work, sim_version="0.5.9", declared="0.5.9")
    code, out, meta, argv = await _sweep(tmp_path, text)
    assert code == 0, out
    assert meta["engine_version"] == "0.5.9" and meta["engine_version_source"] == "declared"
    assert "--cuda-graph-max-bs" in argv and "--cuda-graph-max-bs-decode" not in argv


def test_a_resume_keeps_the_release_the_session_found() -> None:
    from specconsole.controller.probe.engine_detect import recorded_engine_version

    found = recorded_engine_version(
        {"engine_version": "0.5.23", "engine_version_source": "server_info"}
    )
    assert found is not None and (found.version, found.source) == ("0.5.23", "server_info")
    assert "recorded in the session" in found.detail
    # nothing found, or declared by the plan (the plan says it again): detect as usual
    assert recorded_engine_version({"engine_version": "unknown"}) is None
    assert (
        recorded_engine_version({"engine_version": "0.5.9", "engine_version_source": "declared"})
        is None
    )
    assert recorded_engine_version({}) is None and recorded_engine_version([]) is None


async def _known_release(plan_text: str, session: Session, state: ControllerState) -> str | None:
    """Run the wired controller until its state knows the release (the editor reads it)."""
    plan = resolve_local_placeholders(loads_plan(plan_text))
    wired = wire_controller(plan, session, replace(state, plan=plan))
    controller = wired.controller
    known = asyncio.Event()
    controller.subscribe(lambda s, e: known.set() if isinstance(e, ev.EngineVersionKnown) else None)
    task = asyncio.ensure_future(controller.run())
    try:
        await asyncio.wait_for(known.wait(), 30)
    finally:
        controller.send(ev.Quit())
        await asyncio.wait_for(task, 30)
        wired.recorder.close()
        await wired.ports.transport.close()
    assert controller.state.engine_version_source in ("detected", "server_info")
    return controller.state.engine_version


@pytest.mark.asyncio
async def test_the_state_carries_the_release_detected_or_recorded(tmp_path: Path) -> None:
    """The console's editor follows ``ControllerState.engine_version``: set when the box is
    asked, and on a resume from what the session recorded (without asking again)."""
    work = _stand_in(tmp_path / "box", '__version__ = "0.5.23"\n')
    text = _sweep_text(tmp_path / "run", work, sim_version="0.5.23")
    plan = resolve_local_placeholders(loads_plan(text))
    session = Session.create(tmp_path / "sessions", plan)
    assert await _known_release(text, session, ControllerState()) == "0.5.23"
    # a resume: the session says 0.5.14 was found; the box is not asked again (it says 0.5.23)
    session.write_meta({"engine_version": "0.5.14", "engine_version_source": "server_info"})
    trial = TrialRecord(index=0, config=plan.base, started_at=1.0)
    resumed = ControllerState(trials=(trial,))
    assert await _known_release(text, session, resumed) == "0.5.14"
