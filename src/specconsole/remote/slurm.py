"""The Slurm service backend: the server as a batch job submitted through the login node.

``[service] kind = "slurm"``. The transport reaches the cluster's login node (SSH, or this
machine when it is one); every Slurm command runs there. Why it is built this way:

* The deployed artifact is the batch script ``RUN_DIR/job.sh``, rendered in the core
  (:func:`specconsole.core.launch.jobscript.job_script`: partition, ``--gres=gpu:N`` from
  ``tp_size``, time limit, account, the per-job output file, the user's own ``#SBATCH`` lines).
  Its sha256 is the deployed identity, as for every backend; each submission keeps a copy
  (``jobs/ID.sh``) so "is what runs the configuration I deployed?" survives a console restart.
* ``start`` submits a new job (``sbatch --parsable``) and remembers its ID in ``current``; a
  request the cluster can never satisfy (``sbatch`` refuses it: "Requested node configuration
  is not available") is remembered as ``rejected`` and reported by ``status`` as a failure
  with cause ``unschedulable`` at once — nothing waits on a job that will never run. So is a
  job pending for a reason that never clears (``PartitionConfig``, ``PartitionTimeLimit``...).
* ``status`` reads ``squeue -t all`` (state, reason, node) and, once the job has ended,
  ``scontrol show job`` (``ExitCode``). ``PENDING`` is *starting* with the detail
  "queued: Resources"; ``FAILED``, ``TIMEOUT``, ``OUT_OF_MEMORY``, ``CANCELLED``,
  ``NODE_FAIL``... are failures carrying the state as the crash cause and the exit code.
* ``logs`` follow the job's output file from byte 0 with ``tail -c +N -F`` (the file exists
  only once the job starts); a watcher on the login node polls ``squeue`` and ends the tail
  (``--pid``) a second after the job left the queue, so the stream drains and ends with the
  job. The cursor is ``JOB_ID:OFFSET``: a resume after a dropped connection continues at the
  exact byte.
* ``stop`` is ``scancel`` (marked ``jobs/ID.stopped`` so the end reads "stopped", not
  "cancelled"), waiting until the job has left the queue; ``scancel --signal=KILL`` after
  ``stop_timeout``.
* The server's host is the job's node (``BatchHost`` = the first of ``SLURM_JOB_NODELIST``):
  :meth:`SlurmBackend.server_host` (the :class:`specconsole.core.ports.LocatedService` port)
  tells the controller, which forwards to it through the login node or runs the benchmark
  there. The run folder must be on a file system the nodes share with the login node (home
  usually is): the job writes its output file there and the login node reads it.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import AsyncIterator
from contextlib import aclosing
from dataclasses import dataclass

from specconsole.core.config.model import ServerConfig
from specconsole.core.launch.jobscript import SlurmJob, job_script
from specconsole.core.plans.profile import for_engine
from specconsole.core.ports import (
    LogRecord,
    ServiceState,
    ServiceStatus,
    TransportError,
)
from specconsole.remote.scripted import ScriptedBackend, parse_cursor

REJECTED = "rejected"
"""``current`` holds this when sbatch refused the last submission."""

UNSCHEDULABLE_SUBMIT = (
    "Requested node configuration is not available",
    "Invalid generic resource",
    "Requested partition configuration not available",
    "More processors requested than permitted",
    "Node count specification invalid",
    "Invalid account",
    "Invalid qos",
    "Job violates accounting/QOS policy",
    "Invalid partition name specified",
    "Requested time limit is invalid",
)
"""sbatch refusals that mean the request can never run as written (anything else — the
controller unreachable, say — is an operation failure, not a result)."""

UNSCHEDULABLE_PENDING = frozenset(
    {
        "PartitionConfig",
        "PartitionNodeLimit",
        "PartitionTimeLimit",
        "BadConstraints",
        "InvalidAccount",
        "InvalidQOS",
    }
)
"""Pending reasons that never clear by waiting."""

ACTIVE = frozenset({"PENDING", "CONFIGURING", "RUNNING", "SUSPENDED", "RESIZING", "REQUEUED"})

CAUSES = {
    "TIMEOUT": "timeout",
    "OUT_OF_MEMORY": "out_of_memory",
    "NODE_FAIL": "node_fail",
    "CANCELLED": "cancelled",
    "PREEMPTED": "preempted",
    "BOOT_FAIL": "boot_fail",
    "DEADLINE": "deadline",
}
"""Job end states whose name is the crash cause (FAILED and COMPLETED are classified by the
log and the exit code, like any process)."""


@dataclass(frozen=True, slots=True)
class JobInfo:
    """What the login node says about the current job."""

    job_id: str | None
    state: str = ""
    reason: str = ""
    node: str = ""
    exit_code: str = ""
    stopped: bool = False
    rejected: str = ""
    missing: str = ""
    """Why Slurm no longer knows the job (its record expired), when it does not."""


def _field(text: str, key: str) -> str:
    match = re.search(rf"(?:^|\s){key}=(\S*)", text)
    return match.group(1) if match else ""


def parse_exit_code(text: str) -> tuple[int | None, int | None]:
    """Slurm's ``ExitCode=STATUS:SIGNAL`` → (exit status, signal or None)."""
    status, _, sig = text.partition(":")
    try:
        code, signal = int(status), int(sig or 0)
    except ValueError:
        return None, None
    if signal:
        return None, signal
    if code > 128:  # a child of the job's shell killed by a signal
        return None, code - 128
    return code, None


def job_status(info: JobInfo) -> ServiceStatus:
    """The :class:`ServiceStatus` a job's Slurm state means (pure, table-tested)."""
    job = f"job {info.job_id}"
    if info.job_id is None:
        return ServiceStatus(ServiceState.INACTIVE, detail="never submitted")
    if info.rejected:
        return ServiceStatus(
            ServiceState.FAILED,
            result="unschedulable",
            cause="unschedulable",
            detail=f"sbatch refused the job: {info.rejected}",
        )
    if info.missing:
        return ServiceStatus(ServiceState.EXITED, result="unknown", detail=f"{job}: {info.missing}")
    state, reason = info.state, info.reason
    where = f" on {info.node}" if info.node and info.node not in ("(null)", "None") else ""
    if state == "PENDING":
        if reason in UNSCHEDULABLE_PENDING:
            return ServiceStatus(
                ServiceState.FAILED,
                result="unschedulable",
                cause="unschedulable",
                detail=f"{job} can never start as requested: pending with Reason={reason}",
            )
        return ServiceStatus(ServiceState.STARTING, detail=f"queued: {reason or 'None'}")
    if state == "CONFIGURING":
        return ServiceStatus(ServiceState.STARTING, detail=f"{job} configuring{where}")
    if state in ACTIVE:
        return ServiceStatus(ServiceState.RUNNING, detail=f"{job} {state.lower()}{where}")
    exit_status, signal = parse_exit_code(info.exit_code)
    code = f"ExitCode {info.exit_code}" if info.exit_code else "no exit code"
    detail = f"{job} {state} (Reason={reason or 'None'}, {code}){where}"
    if info.stopped and state in ("CANCELLED", "COMPLETED", "FAILED", "COMPLETING"):
        return ServiceStatus(
            ServiceState.INACTIVE,
            exit_status=exit_status,
            signal=signal,
            result="stopped",
            detail=f"{job} stopped with scancel{where}",
        )
    if state == "COMPLETED" or (state == "COMPLETING" and exit_status == 0):
        return ServiceStatus(ServiceState.EXITED, exit_status=0, result="success", detail=detail)
    return ServiceStatus(
        ServiceState.FAILED,
        exit_status=exit_status,
        signal=signal,
        result="signal"
        if signal
        else ("exit-code" if state in ("FAILED", "COMPLETING") else state.lower()),
        oom_killed=state == "OUT_OF_MEMORY",
        cause=CAUSES.get(state),
        detail=detail,
    )


class SlurmBackend(ScriptedBackend):
    """:class:`specconsole.core.ports.ServiceBackend` running the server as a Slurm job."""

    ARTIFACT = "job.sh"

    @property
    def description(self) -> str:
        partition = f" partition {self._profile.partition}" if self._profile.partition else ""
        return f"slurm job{partition} via {self._transport.description}"

    def _prelude(self) -> str:
        conf = self._profile.slurm_conf
        return f"export SLURM_CONF={shlex.quote(conf)}\n" if conf else ""

    async def render(self, config: ServerConfig) -> str:
        run_dir, _ = await self._paths()
        p = for_engine(self._profile, config.engine)
        return job_script(
            config,
            SlurmJob(
                output=f"{run_dir}/jobs/%j.out",
                job_name=p.job_name,
                partition=p.partition,
                account=p.account,
                time_limit=p.time_limit,
                sbatch=p.sbatch,
                gpus=p.gpus,
            ),
        )

    async def running_hash(self) -> str | None:
        """sha256 of the script the running job was submitted from (None if none runs)."""
        run_dir, _ = await self._paths()
        info = await self._job_info()
        if info.job_id is None or job_status(info).state is not ServiceState.RUNNING:
            return None
        return await self._script_hash(f"{run_dir}/jobs/{info.job_id}.sh")

    # --------------------------------------------------------------------------- lifecycle

    async def start(self) -> None:
        """Cancel the current job, submit a new one; a refusal is remembered, not raised."""
        await self.stop()
        run_dir, _ = await self._paths()
        script = f"""
set -e
cd {shlex.quote(run_dir)}
[ -f job.sh ] || {{ echo "nothing deployed in {run_dir}: deploy first" >&2; exit 3; }}
mkdir -p jobs
tmp="jobs/.submit.$$"
cp job.sh "$tmp"
if out=$(sbatch --parsable "$tmp" 2>sbatch.err); then
    id=$(printf '%s\\n' "$out" | tail -n 1 | cut -d';' -f1)
    mv "$tmp" "jobs/$id.sh"
    rm -f rejected
    printf '%s\\n' "$id" > current.tmp && mv current.tmp current
    echo "submitted $id"
else
    rm -f "$tmp"
    echo "refused $(tr '\\n' ' ' < sbatch.err)"
fi
"""
        out = (await self._sh(script, timeout=60, what="submitting the job")).strip()
        verdict, _, detail = out.partition(" ")
        if verdict == "submitted":
            return
        reason = detail.strip().removeprefix("sbatch: error: ").strip()
        if not any(text in reason for text in UNSCHEDULABLE_SUBMIT):
            raise TransportError(f"sbatch failed on {self._transport.description}: {reason}")
        await self._sh(
            f"cd {shlex.quote(run_dir)} && printf '%s\\n' {shlex.quote(reason)} > rejected && "
            f"echo {REJECTED} > current.tmp && mv current.tmp current",
            what="recording the refused job",
        )

    async def _job_info(self) -> JobInfo:
        run_dir, _ = await self._paths()
        script = f"""
cd {shlex.quote(run_dir)} 2>/dev/null || exit 0
id=$(cat current 2>/dev/null) || exit 0
echo "$id"
if [ "$id" = {REJECTED} ]; then cat rejected; exit 0; fi
[ -e "jobs/$id.stopped" ] && echo stopped || echo running
line=$(squeue -t all -j "$id" -h -o '%T|%r|%B' 2>&1) || {{ echo "missing|$line"; exit 0; }}
echo "$line"
case "${{line%%|*}}" in
    PENDING|CONFIGURING|RUNNING|SUSPENDED|RESIZING|REQUEUED) ;;
    *) scontrol -o show job "$id" 2>/dev/null | tr ' ' '\\n' | grep '^ExitCode=' ;;
esac
true
"""
        out = (await self._sh(script, what="reading the job's state")).split("\n")
        if not out or not out[0]:
            return JobInfo(None)
        job_id = out[0].strip()
        if job_id == REJECTED:
            return JobInfo(job_id, rejected=" ".join(out[1:]).strip() or "refused")
        fields = [*out[1:], "", "", ""]
        stopped = fields[0] == "stopped"
        line = fields[1]
        if line.startswith("missing|") or not line.strip():
            why = line.partition("|")[2].strip() or "no longer in the queue"
            return JobInfo(job_id, stopped=stopped, missing=f"Slurm no longer knows it ({why})")
        state, reason, node = [*line.split("|"), "", ""][:3]
        exit_code = fields[2].partition("=")[2].strip() if fields[2].startswith("ExitCode=") else ""
        return JobInfo(
            job_id,
            state=state.split()[0].rstrip("+") if state else "",
            reason=reason,
            node=node,
            exit_code=exit_code,
            stopped=stopped,
        )

    async def status(self) -> ServiceStatus:
        return job_status(await self._job_info())

    async def server_host(self, config: ServerConfig) -> str | None:
        """The running job's node as the login node reaches it (None while queued)."""
        info = await self._job_info()
        if info.job_id is None or job_status(info).state is not ServiceState.RUNNING:
            return None
        node = info.node if info.node not in ("", "(null)", "None") else ""
        if not node:
            return None
        if config.host in ("127.0.0.1", "localhost", "::1"):
            if node != "localhost":
                raise TransportError(
                    f'[server] host = "{config.host}" listens on node {node}\'s loopback only, '
                    'which the login node cannot reach; set [server] host = "0.0.0.0"'
                )
            return "127.0.0.1"
        if config.host in ("0.0.0.0", "::", ""):
            return node
        return config.host

    async def stop(self) -> None:
        run_dir, _ = await self._paths()
        ticks = max(1, int(self._profile.stop_timeout * 5))
        script = f"""
cd {shlex.quote(run_dir)} 2>/dev/null || exit 0
id=$(cat current 2>/dev/null) || exit 0
[ "$id" = {REJECTED} ] && exit 0
queued() {{ [ -n "$(squeue -h -j "$id" -o %i 2>/dev/null)" ]; }}
queued || exit 0
: > "jobs/$id.stopped"
scancel "$id"
i=0
while queued && [ $i -lt {ticks} ]; do sleep 0.2; i=$((i+1)); done
if queued; then
    scancel --signal=KILL --full "$id"
    i=0
    while queued && [ $i -lt 50 ]; do sleep 0.2; i=$((i+1)); done
fi
"""
        await self._sh(script, timeout=self._profile.stop_timeout + 30, what="cancelling the job")

    # -------------------------------------------------------------------------------- logs

    async def logs(self, *, after: str | None = None) -> AsyncIterator[LogRecord]:
        run_dir, _ = await self._paths()
        if after:
            job_id, offset = parse_cursor(after, "slurm")
        else:
            info = await self._job_info()
            if info.job_id is None or info.rejected:
                return
            job_id, offset = info.job_id, 0
        out = shlex.quote(f"{run_dir}/jobs/{job_id}.out")
        jid = shlex.quote(job_id)
        # The watcher ends a second after the job left the queue (or after 10 s of squeue
        # errors); tail --pid then drains the file and ends with it.
        watcher = (
            f"( n=0; while [ $n -lt 20 ]; do "
            f'if o=$(squeue -h -j {jid} -o %i 2>/dev/null); then [ -n "$o" ] || break; n=0; '
            f"else n=$((n+1)); fi; sleep 0.5; done; sleep 1 ) & w=$!\n"
        )

        def command(at: int) -> str:
            return watcher + f"tail -c +{at + 1} -F -s 0.2 --pid=$w {out} 2>/dev/null || true"

        async with aclosing(self._follow(job_id, offset, command)) as records:
            async for record in records:
                yield record
