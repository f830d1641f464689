"""Know the box before the first trial (issue 19): the probe over the local transport with
the simulator as a real HTTP process, and an alias that does not resolve.

A headless sweep prints what the probe found before its first trial and records it in the
session's ``box.toml``; a probe of a box whose server runs shows the service's state, the
configuration it runs (parsed from what is deployed, environment values redacted) and that
it serves; a box whose name does not resolve stops the sweep at once with the resolver's
error, status ``error``, a non-zero exit and no trial.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import sys
import time
import tomllib
from dataclasses import replace
from pathlib import Path

import httpx

from specconsole.cli import main as cli_main
from specconsole.controller.probe.boxprobe import probe_box
from specconsole.core.config.secrets import REDACTED
from specconsole.core.plans.parse import loads_plan
from specconsole.core.plans.placeholders import resolve_placeholders
from specconsole.headless.pool import sweep_headless
from specconsole.remote.process import ProcessBackend
from specconsole.remote.transport.local import LocalTransport
from specconsole.session.store import Session
from tests.fixtures.plans import LOCAL_HOST
from tests.fixtures.sshd import free_port
from tests.session.sim_sessions import finally_plan_text

SECRET = "hf_planted_probe_5c1d"


def _plan_text(tmp_path: Path, port: int, *, host: str = LOCAL_HOST) -> str:
    text = finally_plan_text(tmp_path / "run", port, "last", name="probe", host=host)
    return text.replace('launcher = "', f'env = {{ HF_TOKEN = "{SECRET}" }}\nlauncher = "', 1)


async def _health(port: int) -> str | None:
    async with httpx.AsyncClient(timeout=5.0) as client:
        try:
            response = await client.get(f"http://127.0.0.1:{port}/health")
        except httpx.HTTPError as exc:
            return str(exc)
    return None if response.status_code == 200 else f"health answered {response.status_code}"


async def test_headless_prints_and_records_the_probe_before_trial_one_then_sees_it_serve(
    tmp_path: Path,
) -> None:
    port = free_port()
    text = _plan_text(tmp_path, port)
    plan = replace(resolve_placeholders(loads_plan(text), {"python": sys.executable}), source=text)
    session = Session.create(tmp_path / "sessions", plan)
    transport = LocalTransport()
    backend = ProcessBackend(transport, plan.profile.service)
    out = io.StringIO()
    try:
        code = await asyncio.wait_for(sweep_headless(plan, session, out=out), 120)
        printed = out.getvalue()
        assert code == 0, printed[-3000:]
        lines = printed.splitlines()
        first_trial = next(i for i, line in enumerate(lines) if "trial 1/" in line)
        probe_at = next(i for i, line in enumerate(lines) if "box local: reachable" in line)
        assert probe_at < first_trial, printed[:2000]
        before = "\n".join(lines[probe_at:first_trial])
        assert "engine: sglang" in before
        assert "no nvidia-smi on the box" in before or "gpu 0:" in before, before
        assert "runs now: nothing known (nothing is deployed" in before, before
        assert "not serving: not asked: the service is inactive" in before, before
        recorded = tomllib.loads((session.path / "box.toml").read_text())
        assert recorded["reachable"] is True and recorded["service_state"] == "inactive"
        assert recorded["serving"] is False and "running_config" not in recorded

        # finally = "last" left trial 2 serving: a probe now sees it run and serve.
        probe = await asyncio.wait_for(
            probe_box(
                transport,
                backend,
                plan.base,
                lambda cfg: _health(cfg.port),
                None,
                time.time,
            ),
            60,
        )
        assert probe.reachable and probe.service_state == "running", probe
        assert probe.serving is True and probe.serving_detail == f"/health 200 on port {port}"
        running = probe.running_config
        assert running is not None, probe.running_config_detail
        assert running.port == port and running.speculative_num_steps == 2
        assert running.env == (("HF_TOKEN", REDACTED),)
        assert "parsed from process in" in probe.running_config_detail
        assert SECRET not in printed and SECRET not in repr(probe)
        for path in session.path.rglob("*"):
            if path.is_file():
                assert SECRET.encode() not in path.read_bytes(), path
    finally:
        await backend.stop()


def test_an_alias_that_does_not_resolve_stops_the_sweep_at_once(tmp_path: Path) -> None:
    host = (
        '[host]\ntransport = "ssh"\nalias = "no-such-host.invalid"\n'
        f'known_hosts = "{tmp_path / "known_hosts"}"\nconnect_timeout = 5\n'
    )
    plan = tmp_path / "plan.toml"
    plan.write_text(_plan_text(tmp_path, free_port(), host=host))
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        code = cli_main(["sweep", str(plan), "--headless", "--session", str(tmp_path / "s")])
    printed = out.getvalue()
    assert code == 1, printed
    assert "UNREACHABLE (unreachable)" in printed, printed
    assert "no-such-host.invalid" in printed and "not known" in printed.lower(), printed
    assert "trial 1/" not in printed and "deploy" not in printed.split("UNREACHABLE")[1], printed
    (session,) = (tmp_path / "s").iterdir()
    assert not (session / "trials.jsonl").exists() or not (session / "trials.jsonl").read_text()
    meta = tomllib.loads((session / "session.toml").read_text())["session"]
    assert meta["status"] == "error" and meta["trials"] == 0, meta
    assert meta["sweep_active"] is False, meta
    recorded = tomllib.loads((session / "box.toml").read_text())
    assert recorded["reachable"] is False and recorded["error_kind"] == "unreachable"
    assert "no-such-host.invalid" in recorded["error"]
