"""The server's launch script, and the Slurm batch script around it: pure rendering.

Two backends run the server from a shell script: the plain-process backend (``command.sh``)
and the Slurm backend (``job.sh``, submitted with ``sbatch``). Both scripts end the same way —
change to the working directory, export the environment, ``exec`` the command line that
:mod:`specconsole.core.config.render` renders — so that body is written once here
(:func:`launch_lines`). The batch script adds the ``#SBATCH`` header a configuration implies:
the partition, ``--gres=gpu:N`` with N the GPUs the server uses (``tp_size`` × ``pp_size``),
the time limit and account, the output file of each job (``%j`` is the job ID, so every
submission — every trial — gets its own file, followed from byte 0), then the user's own
``#SBATCH`` lines. Rendering lives in the core, never in the adapter, so ``specconsole
render`` and the tests see exactly what is submitted.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass

from specconsole.core.config.concepts import Concept, concept_value
from specconsole.core.config.model import ServerConfig
from specconsole.core.config.render import to_command

RESERVED_SBATCH = ("--output", "-o", "--error", "-e", "--open-mode", "--parsable")
"""Options the backend relies on (the per-job output file that is followed as the log)."""

_TIME_LIMIT = re.compile(
    r"^(\d+|\d+:\d{2}|\d+:\d{2}:\d{2}|\d+-\d+|\d+-\d+:\d{2}|\d+-\d+:\d{2}:\d{2})$"
)


class JobScriptError(ValueError):
    """A Slurm setting cannot be rendered; the message names the key and the fix."""


@dataclass(frozen=True, slots=True)
class SlurmJob:
    """What the ``#SBATCH`` header says besides the GPUs (from ``[service]``)."""

    output: str
    """The job's output file; ``%j`` is replaced by Slurm with the job ID."""
    job_name: str = "specconsole"
    partition: str | None = None
    account: str | None = None
    time_limit: str | None = None
    """Slurm's time format: ``MM``, ``MM:SS``, ``HH:MM:SS``, ``D-HH``, ``D-HH:MM[:SS]``."""
    sbatch: tuple[str, ...] = ()
    """The user's own lines, e.g. ``--qos=high`` or ``#SBATCH --constraint=h100``."""
    gpus: int | None = None
    """GPUs to request instead of the configuration's ``tp_size`` × ``pp_size``."""


def launch_lines(config: ServerConfig) -> list[str]:
    """``cd``, ``export``\\ s and the ``exec`` of the rendered command line."""
    lines: list[str] = []
    if config.working_directory:
        lines.append(f"cd {shlex.quote(config.working_directory)} || exit 126")
    for name, value in config.env:
        lines.append(f"export {name}={shlex.quote(value)}")
    lines.append(f"exec {to_command(config)}")
    return lines


def gpus_needed(config: ServerConfig) -> int:
    """GPUs the server occupies on its node: tensor × pipeline parallel size (at least 1)."""
    tp = concept_value(config, Concept.PARALLEL_SIZE) or 1
    pp = getattr(config, "pp_size", None) or 1
    return max(1, tp * pp)


def sbatch_option(line: str, where: str = "[service] sbatch") -> str:
    """One user ``#SBATCH`` line as the option it carries (``--qos=high``), checked."""
    text = line.strip()
    if text.startswith("#SBATCH"):
        text = text[len("#SBATCH") :].strip()
    if not text.startswith("-") or any(ch in text for ch in "\n\r\x00"):
        raise JobScriptError(
            f"{where}: {line!r} is not an sbatch option; write one option per entry, "
            'e.g. "--qos=high" or "#SBATCH --constraint=h100"'
        )
    name = re.split(r"[=\s]", text, maxsplit=1)[0]
    if name in RESERVED_SBATCH:
        raise JobScriptError(
            f"{where}: {name} is set by specconsole (each job's output file is its log); remove it"
        )
    return text


def check_time_limit(value: str, where: str = "[service] time_limit") -> str:
    if not _TIME_LIMIT.match(value):
        raise JobScriptError(
            f"{where} = {value!r} is not a Slurm time; use minutes, MM:SS, HH:MM:SS, "
            'D-HH, D-HH:MM or D-HH:MM:SS, e.g. "02:00:00"'
        )
    return value


def job_script(config: ServerConfig, job: SlurmJob) -> str:
    """The batch script ``sbatch`` runs: header, a line naming the job's node, the server."""
    header = [f"--job-name={job.job_name}"]
    if job.partition:
        header.append(f"--partition={job.partition}")
    header.append(f"--gres=gpu:{job.gpus or gpus_needed(config)}")
    if job.time_limit:
        header.append(f"--time={check_time_limit(job.time_limit)}")
    if job.account:
        header.append(f"--account={job.account}")
    header.append(f"--output={job.output}")
    header += [sbatch_option(line) for line in job.sbatch]
    lines = ["#!/bin/sh", *(f"#SBATCH {option}" for option in header)]
    lines += [
        "# Deployed by specconsole (slurm backend). Runs the server in the foreground of the job.",
        'echo "specconsole: job $SLURM_JOB_ID on $(hostname) '
        '(SLURM_JOB_NODELIST=$SLURM_JOB_NODELIST CUDA_VISIBLE_DEVICES=$CUDA_VISIBLE_DEVICES)"',
        *launch_lines(config),
    ]
    return "\n".join(lines) + "\n"
