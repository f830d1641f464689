"""One secret rule, end to end (issue 27 #1 #4): a real headless sweep on the simulated box
with planted secrets — a server ``--api-key`` in ``[server] extra_args``, ``HF_TOKEN`` and a
credential-looking value under a name that does not look secret — writes none of them to the
session (plan copy, records with argv, config and deploy diff, logs, box probe, reports) nor
prints them, while the server gets its key and the benchmark is authorised; ``resume`` names
what to export; world-readable files hold nothing."""

from __future__ import annotations

import json
import os
import re
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from tests.bench.servers import ROOT
from tests.fixtures.plans import SEED_SERVER, sim_plan_text

API_KEY = "sk-planted-key-0123456789abcdef"
HF_TOKEN = "hf_plantedTokenValue0123456789abcd"
HIDDEN = "hf_credentialUnderAPlainName01234567"

SWEEP = """[sweep]
strategy = "grid"
on_crash = "auto"
load_timeout = 60
finally = "stop"

[sweep.axes]
speculative_num_steps = [1, 2]
"""
BENCH = """[bench]
ladder = [1]
requests_per_level = 2
warmup_requests = 0
input_len = 32
output_len = 8
api_key = "env:SECRETS_TEST_KEY"
"""


def plan_text(run_dir: Path) -> str:
    """The simulated seed box with the planted secrets, its run folder in ``run_dir``."""
    env = (
        f'env = {{ HF_TOKEN = "{HF_TOKEN}", MODEL_CACHE_NOTE = "{HIDDEN}", '
        'HF_HOME = "/tmp/hf-home" }\n'
    )
    return sim_plan_text(
        run_dir,
        extra_args=["--sim-load-seconds", "0.5", "--api-key", API_KEY],
        sweep=SWEEP,
        bench=BENCH,
        name="secrets",
        server=SEED_SERVER + env,
    )


def run(*argv: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "specconsole", *argv],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )


def write_plan(folder: Path) -> Path:
    """The plan in ``folder``, its server's run folder (the box's files) in there too."""
    plan = folder / "plan.toml"
    plan.write_text(plan_text(folder / "run-{port}"))
    return plan


def test_a_headless_sweep_writes_and_prints_no_secret(tmp_path: Path) -> None:
    plan = write_plan(tmp_path)
    env = {**os.environ, "SECRETS_TEST_KEY": API_KEY}
    done = run("sweep", str(plan), "--headless", "--session", str(tmp_path / "s"), env=env)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    for secret in (API_KEY, HF_TOKEN, HIDDEN):
        assert secret not in done.stdout and secret not in done.stderr
    sessions = list((tmp_path / "s").iterdir())
    assert len(sessions) == 1
    records = [json.loads(line) for line in (sessions[0] / "trials.jsonl").read_text().splitlines()]
    # the key reached the server, and the benchmark was authorised
    assert [(r["status"], r["levels"][0]["completed"]) for r in records] == [("ok", 2)] * 2
    assert records[0]["argv"][-2:] == ["--api-key", "<redacted>"]
    files = [p for p in sessions[0].rglob("*") if p.is_file()]
    assert any(p.name == "trials.jsonl" for p in files)
    for path in files:
        text = path.read_text(errors="replace")
        for secret in (API_KEY, HF_TOKEN, HIDDEN):
            assert secret not in text, (path, secret)
    copy = (sessions[0] / "plan.toml").read_text()
    assert re.search(r"--api-key['\"],\s*\"<redacted>\"", copy), copy
    assert 'HF_HOME = "/tmp/hf-home"' in copy
    # what holds the key on the box (the launch script) is readable by its owner only
    holders = [
        path
        for path in tmp_path.rglob("*")
        if path.is_file() and path != plan and API_KEY in path.read_text(errors="replace")
    ]
    assert holders  # the server got its key from somewhere: the 0600 launch script
    for path in holders:
        assert not path.stat().st_mode & (stat.S_IRGRP | stat.S_IROTH), path

    # resume without the secrets: it names what to export (and runs nothing)
    clean = {k: v for k, v in os.environ.items() if k not in ("HF_TOKEN", "SECRETS_TEST_KEY")}
    again = run("resume", str(sessions[0]), env=clean)
    assert again.returncode == 1
    assert "HF_TOKEN" in again.stderr and "export" in again.stderr
    for report in ("md", "json", "html"):
        shown = run("report", str(sessions[0]), "--format", report, env=clean)
        for secret in (API_KEY, HF_TOKEN, HIDDEN):
            assert secret not in shown.stdout, (report, secret)


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--api-key", API_KEY], ["--api-key", "<redacted>"]),
        ([f"--admin-api-key={API_KEY}"], ["--admin-api-key=<redacted>"]),
        (["--hf-token", "x" * 12], ["--hf-token", "<redacted>"]),
        (["--speculative-token-map", "/maps/a.pt"], ["--speculative-token-map", "/maps/a.pt"]),
        (["--served-model-name", HIDDEN], ["--served-model-name", "<redacted>"]),
    ],
)
def test_the_secret_flag_rule(args: list[str], expected: list[str]) -> None:
    from specconsole.core.config.secrets import redact_args

    assert list(redact_args(args)) == expected


@pytest.mark.parametrize("form", ["unit", "command", "argv"])
def test_render_prints_what_a_deploy_writes_and_no_secret(form: str, tmp_path: Path) -> None:
    """#3: ``render --as unit`` put ``Environment=HF_TOKEN=…`` inline while a deploy puts it
    in the 0600 file; every form now names the file or the marker, never a value."""
    plan = write_plan(tmp_path)
    done = run("render", str(plan), "--as", form, env=dict(os.environ))
    assert done.returncode in (0, 1), done.stderr
    for secret in (API_KEY, HF_TOKEN, HIDDEN):
        assert secret not in done.stdout + done.stderr, (form, secret)
    if form == "unit":
        assert "EnvironmentFile=" in done.stdout and "--api-key" in done.stdout
        assert "${SPECCONSOLE_API_KEY}" in done.stdout
