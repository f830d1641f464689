"""``best --as plan`` hands the winner's launch on to ``validate`` and ``render`` unchanged, for
every registered engine on every backend (#39: "no view assumes SGLang").

Why: the plan form once wrote ``unit = "sglang.service"`` and ``scope = "system"`` for a
llama.cpp process-backend session and dropped its ``[host]`` and ``run_dir``, and ``validate``
accepted it. Here each engine's configuration (built from its own declarations) runs on each
backend, the plan form is read back, and the box it names, the ``[server]`` table and every
text ``render`` prints must be what ``best`` prints for the trial itself.
"""

from __future__ import annotations

import dataclasses
import tomllib
from pathlib import Path

import pytest
import tomli_w
from hypothesis import HealthCheck, given, settings

from specconsole.cli import main
from specconsole.core.config.model import ServerConfig, config_from_table, config_to_table
from specconsole.core.config.secrets import redact_config
from specconsole.core.engine.registry import engine_names
from specconsole.core.measure.trials import LevelSummary, TrialRecord, TrialStatus
from specconsole.core.plans.launch import RENDER_FORMS, launch_text
from specconsole.core.plans.parse import loads_plan
from specconsole.core.plans.plan import SweepPlan
from specconsole.core.plans.profile import parse_profile, profile_for_engine
from specconsole.core.search.bestlaunch import best_launch
from tests.engines.described import configs, speculative

BACKENDS: dict[str, str] = {
    "systemd": """
[host]
transport = "ssh"
alias = "gpu-box"
user = "ops"
[service]
kind = "systemd"
scope = "user"
backup_dir = "/srv/backups"
secret_env = ["MY_TOKEN"]
""",
    "process": """
[host]
transport = "local"
[service]
kind = "process"
run_dir = "/srv/run/bench-{engine}"
stop_timeout = 7
""",
    "docker": """
[host]
transport = "ssh"
alias = "docker-box"
[service]
kind = "docker"
container = "bench-{engine}"
docker_args = ["--gpus", "device=0", "--ipc=host"]
""",
    "slurm": """
[host]
transport = "ssh"
alias = "login-node"
port = 2222
[service]
kind = "slurm"
partition = "gpu"
account = "team"
time_limit = "01:00:00"
sbatch = ["--qos=high"]
gpus = 2
run_dir = "/scratch/bench"
""",
}
"""Each backend with settings of its own, some left to their defaults (the unit, the image,
the job's name: the engine derives them)."""


def _plan(engine: str, backend: str, config: ServerConfig) -> SweepPlan:
    server = tomli_w.dumps({"server": config_to_table(config)})
    text = (
        f'name = "best of {engine} on {backend}"\n'
        + BACKENDS[backend].format(engine=engine)
        + server
        + '\n[sweep]\nstrategy = "grid"\n[bench]\nladder = [1, 4]\n'
    )
    return loads_plan(text)


def _winner(config: ServerConfig) -> TrialRecord:
    levels = (LevelSummary(1, 40.0, 40.0, 4), LevelSummary(4, 120.0, 30.0, 8))
    return TrialRecord(index=0, config=config, status=TrialStatus.OK, levels=levels)


def _config(engine: str) -> ServerConfig:
    return speculative(
        engine,
        env=(("HF_HOME", "/srv/hf"), ("MY_TOKEN", "s3cret-value")),
        extra_args=("--served-model-name", "bench"),
    )


@pytest.mark.parametrize("backend", sorted(BACKENDS))
@pytest.mark.parametrize("engine", engine_names())
def test_best_as_plan_validates_and_renders_to_the_same_launch(
    engine: str, backend: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    plan = _plan(engine, backend, _config(engine))
    trial = _winner(plan.base)
    exported = best_launch([trial], plan, "plan")
    assert exported is not None
    assert "s3cret-value" not in exported.text  # a secret stays a marker
    file = tmp_path / "best.toml"
    file.write_text(exported.text)

    document = tomllib.loads(exported.text)
    service = document["service"]
    assert service["kind"] == backend
    # nothing the engine derives, and nothing another backend would read
    assert not {"unit", "image", "job_name"} & set(service), service
    if backend != "systemd":
        assert "scope" not in service, service
    assert parse_profile(document) == parse_profile(tomllib.loads(BACKENDS[backend].format(
        engine=engine
    )))  # fmt: skip
    assert profile_for_engine(parse_profile(document), engine) == plan.profile

    # validate says of the exported plan exactly what it says of the trial's own [server]
    own = tmp_path / "own.toml"
    own.write_text(tomli_w.dumps({"server": config_to_table(plan.base)}))
    assert main(["validate", str(own)]) == 0
    expected = capsys.readouterr().out.replace(str(own), "FILE")
    assert main(["validate", str(file)]) == 0
    assert capsys.readouterr().out.replace(str(file), "FILE") == expected
    assert "configuration OK (0 errors" in expected, expected
    for form in RENDER_FORMS:
        assert main(["render", str(file), "--as", form]) == 0
        rendered = capsys.readouterr().out
        best = best_launch([trial], plan, form)
        assert best is not None and rendered == best.text, form


@pytest.mark.parametrize("backend", sorted(BACKENDS))
@pytest.mark.parametrize("engine", engine_names())
def test_any_configuration_of_the_engine_reads_back_from_its_plan_form(
    engine: str, backend: str
) -> None:
    profile = _plan(engine, backend, _config(engine)).profile

    @settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(configs(engine))
    def round_trip(config: ServerConfig) -> None:
        config = dataclasses.replace(config, env=())  # the secret marker is covered above
        text = launch_text(config, "plan", profile.service, host=profile.host)
        document = tomllib.loads(text)
        # everything but a secret flag's value (``--secret=x`` drawn among the extra
        # arguments), which the plan form writes as the marker
        assert config_from_table(document["server"]) == redact_config(
            config, profile.service.secret_env
        )
        assert profile_for_engine(parse_profile(document), engine) == profile_for_engine(
            profile, engine
        )

    round_trip()
