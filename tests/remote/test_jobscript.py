"""The Slurm batch script and the job-state table: pure rendering and mapping."""

from __future__ import annotations

import pytest

from specconsole.core.config.model import ServerConfig
from specconsole.core.launch.jobscript import SlurmJob, gpus_needed, job_script
from specconsole.core.plans.profile import ProfileError, ServiceKind, parse_service
from specconsole.core.ports import ServiceState
from specconsole.remote.process import launch_script
from specconsole.remote.slurm import JobInfo, job_status, parse_exit_code


def config(**kw: object) -> ServerConfig:
    return ServerConfig(model_path="m", tp_size=4, env=(("A", "b c"),), **kw)  # type: ignore[arg-type]


def test_job_script_header_then_the_launch_body() -> None:
    script = job_script(
        config(),
        SlurmJob(
            output="/run/jobs/%j.out",
            partition="gpu",
            account="team",
            time_limit="02:00:00",
            sbatch=("--qos=high", "#SBATCH --constraint=h100"),
        ),
    )
    lines = script.splitlines()
    assert lines[0] == "#!/bin/sh"
    sbatch = [line for line in lines if line.startswith("#SBATCH ")]
    assert sbatch == [
        "#SBATCH --job-name=specconsole",
        "#SBATCH --partition=gpu",
        "#SBATCH --gres=gpu:4",
        "#SBATCH --time=02:00:00",
        "#SBATCH --account=team",
        "#SBATCH --output=/run/jobs/%j.out",
        "#SBATCH --qos=high",
        "#SBATCH --constraint=h100",
    ]
    # The body is exactly the process backend's launch body.
    body = launch_script(config()).splitlines()[2:]
    assert lines[-len(body) :] == body
    assert "export A='b c'" in lines


def test_gpus_follow_tp_size_or_the_override() -> None:
    assert gpus_needed(ServerConfig(model_path="m")) == 1
    assert gpus_needed(config()) == 4
    assert "--gres=gpu:2" in job_script(config(), SlurmJob(output="o", gpus=2))


@pytest.mark.parametrize(
    ("table", "needle"),
    [
        ({"kind": "slurm", "sbatch": ["--output=x"]}, "--output is set by specconsole"),
        ({"kind": "slurm", "sbatch": ["qos=high"]}, "is not an sbatch option"),
        ({"kind": "slurm", "sbatch": ["--qos=a\n#SBATCH --x"]}, "is not an sbatch option"),
        ({"kind": "slurm", "time_limit": "2h"}, "[service] time_limit = '2h' is not a Slurm time"),
        ({"kind": "slurm", "gpus": 0}, "[service] gpus must be 1 or more"),
        ({"kind": "k8s"}, "'slurm'"),
    ],
)
def test_bad_slurm_settings_name_the_key(table: dict[str, object], needle: str) -> None:
    with pytest.raises(ProfileError) as err:
        parse_service(table)
    assert needle in str(err.value)


def test_good_slurm_settings_parse() -> None:
    profile = parse_service(
        {"kind": "slurm", "partition": "gpu", "time_limit": "1-00:00", "sbatch": "--qos=x"}
    )
    assert profile.kind is ServiceKind.SLURM and profile.sbatch == ("--qos=x",)


@pytest.mark.parametrize(
    ("info", "state", "cause", "detail"),
    [
        (JobInfo("7", "PENDING", "Resources"), ServiceState.STARTING, None, "queued: Resources"),
        (JobInfo("7", "PENDING", "Priority"), ServiceState.STARTING, None, "queued: Priority"),
        (JobInfo("7", "PENDING", "PartitionConfig"), ServiceState.FAILED, "unschedulable", "never"),
        (JobInfo("7", "RUNNING", "None", "n1"), ServiceState.RUNNING, None, "job 7 running on n1"),
        (JobInfo("7", "COMPLETED", exit_code="0:0"), ServiceState.EXITED, None, "COMPLETED"),
        (
            JobInfo("7", "FAILED", "NonZeroExitCode", exit_code="1:0"),
            ServiceState.FAILED,
            None,
            "1:0",
        ),
        (
            JobInfo("7", "TIMEOUT", "TimeLimit", exit_code="0:15"),
            ServiceState.FAILED,
            "timeout",
            "TIMEOUT",
        ),
        (
            JobInfo("7", "OUT_OF_MEMORY", exit_code="0:125"),
            ServiceState.FAILED,
            "out_of_memory",
            "OUT_OF",
        ),
        (JobInfo("7", "NODE_FAIL", exit_code="0:0"), ServiceState.FAILED, "node_fail", "NODE_FAIL"),
        (
            JobInfo("7", "CANCELLED", exit_code="0:15"),
            ServiceState.FAILED,
            "cancelled",
            "CANCELLED",
        ),
        (
            JobInfo("7", "CANCELLED", exit_code="0:15", stopped=True),
            ServiceState.INACTIVE,
            None,
            "scancel",
        ),
        (
            JobInfo("rejected", rejected="Requested node configuration is not available"),
            ServiceState.FAILED,
            "unschedulable",
            "sbatch refused",
        ),
        (JobInfo("7", missing="expired"), ServiceState.EXITED, None, "expired"),
        (JobInfo(None), ServiceState.INACTIVE, None, "never submitted"),
    ],
)
def test_job_states_map_to_service_states(
    info: JobInfo, state: ServiceState, cause: str | None, detail: str
) -> None:
    status = job_status(info)
    assert status.state is state and status.cause == cause, status
    assert detail in status.detail


def test_exit_codes() -> None:
    assert parse_exit_code("1:0") == (1, None)
    assert parse_exit_code("0:9") == (None, 9)
    assert parse_exit_code("137:0") == (None, 9)
    assert parse_exit_code("") == (None, None)
    assert job_status(JobInfo("7", "OUT_OF_MEMORY", exit_code="0:125")).oom_killed
