"""Trial records as JSON: the one encoding of ``TrialRecord`` on disk.

Why a hand-written codec: ``trials.jsonl`` is the durable truth a resumed session and every
report are rebuilt from, so the round trip must be exact (the sweep strategy recognises
tried configurations by equality) and the lines must stay readable by people and by other
tools (plain JSON objects, SGLang's argument names, enum values as strings). Derived
headline numbers are written for readers but never read back.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from specconsole.core.config.secrets import redact_config, scrub, secret_values
from specconsole.core.logs.stages import LoadStage
from specconsole.core.machine.state import (
    CapacityPrediction,
    CrashInfo,
    LevelSummary,
    Phase,
    PhaseStamp,
    TrialKind,
    TrialRecord,
    TrialStatus,
)
from specconsole.core.measure.acceptance import CounterAcceptance
from specconsole.core.measure.forecast import Forecast
from specconsole.core.measure.gpu import GpuSample, GpuSpan, TrialGpu
from specconsole.core.measure.trials import PruneInfo, RateProbe, Remeasure
from specconsole.core.plans.tables import server_config_from_table, server_config_to_table
from specconsole.present.labels import config_label

RECORD_VERSION = 1


class RecordError(ValueError):
    """A trials.jsonl line cannot be read; the message says which and why."""


def _level_to_dict(level: LevelSummary) -> dict[str, Any]:
    return {
        "concurrency": level.concurrency,
        "output_tok_s": level.output_tok_s,
        "per_request_tok_s": level.per_request_tok_s,
        "completed": level.completed,
        "failed": level.failed,
        "ttft_p50_ms": level.ttft_p50_ms,
        "itl_p50_ms": level.itl_p50_ms,
        "accept_length": level.accept_length,
        "duration_s": level.duration_s,
        "ttft_p99_ms": level.ttft_p99_ms,
        "itl_p99_ms": level.itl_p99_ms,
        "tpot_p50_ms": level.tpot_p50_ms,
        "tpot_p99_ms": level.tpot_p99_ms,
        "request_goodput": level.request_goodput,
        "repeats": level.repeats,
        "output_tok_s_ci": None if level.output_tok_s_ci is None else list(level.output_tok_s_ci),
        "per_request_tok_s_ci": (
            None if level.per_request_tok_s_ci is None else list(level.per_request_tok_s_ci)
        ),
        "measurement": level.measurement,
        "spec_counters": None if level.counters is None else level.counters.to_dict(),
        "gpu": None if level.gpu is None else level.gpu.to_dict(),
        "tokens_per_joule": level.tokens_per_joule,
        "client_accept_length": level.client_accept_length,
    }


def _level_from_dict(data: Mapping[str, Any]) -> LevelSummary:
    return LevelSummary(
        concurrency=int(data["concurrency"]),
        output_tok_s=float(data["output_tok_s"]),
        per_request_tok_s=float(data["per_request_tok_s"]),
        completed=int(data.get("completed", 0)),
        failed=int(data.get("failed", 0)),
        ttft_p50_ms=_opt_float(data.get("ttft_p50_ms")),
        itl_p50_ms=_opt_float(data.get("itl_p50_ms")),
        accept_length=_opt_float(data.get("accept_length")),
        duration_s=_opt_float(data.get("duration_s")),
        ttft_p99_ms=_opt_float(data.get("ttft_p99_ms")),
        itl_p99_ms=_opt_float(data.get("itl_p99_ms")),
        tpot_p50_ms=_opt_float(data.get("tpot_p50_ms")),
        tpot_p99_ms=_opt_float(data.get("tpot_p99_ms")),
        request_goodput=_opt_float(data.get("request_goodput")),
        repeats=int(data.get("repeats", 1)),
        output_tok_s_ci=_opt_pair(data.get("output_tok_s_ci")),
        per_request_tok_s_ci=_opt_pair(data.get("per_request_tok_s_ci")),
        measurement=str(data.get("measurement") or "completed"),
        counters=(
            CounterAcceptance.from_dict(data["spec_counters"])
            if isinstance(data.get("spec_counters"), Mapping)
            else None
        ),
        gpu=GpuSpan.from_dict(data["gpu"]) if isinstance(data.get("gpu"), Mapping) else None,
        client_accept_length=_opt_float(data.get("client_accept_length")),
    )


def _opt_pair(value: Any) -> tuple[float, float] | None:
    if value is None:
        return None
    low, high = value
    return (float(low), float(high))


def _opt_float(value: Any) -> float | None:
    return None if value is None else float(value)


def _opt_int(value: Any) -> int | None:
    return None if value is None else int(value)


def _crash_to_dict(crash: CrashInfo) -> dict[str, Any]:
    return {
        "cause": crash.cause,
        "message": crash.message,
        "phase": crash.phase.value,
        "load_stage": None if crash.load_stage is None else crash.load_stage.value,
        "excerpt": list(crash.excerpt),
        "fixes": list(crash.fixes),
        "exit_status": crash.exit_status,
        "signal": crash.signal,
        "capacity": crash.capacity,
        "detected_at": crash.detected_at,
        "source_time": crash.source_time,
        "gpu_memory": [s.to_dict() for s in crash.gpu_memory],
    }


def _crash_from_dict(data: Mapping[str, Any]) -> CrashInfo:
    stage = data.get("load_stage")
    return CrashInfo(
        cause=str(data["cause"]),
        message=str(data.get("message", "")),
        phase=Phase(data["phase"]),
        load_stage=None if stage is None else LoadStage(stage),
        excerpt=tuple(data.get("excerpt", ())),
        fixes=tuple(data.get("fixes", ())),
        exit_status=_opt_int(data.get("exit_status")),
        signal=_opt_int(data.get("signal")),
        capacity=_opt_int(data.get("capacity")),
        detected_at=_opt_float(data.get("detected_at")),
        source_time=_opt_float(data.get("source_time")),
        gpu_memory=tuple(GpuSample.from_dict(s) for s in data.get("gpu_memory") or ()),
    )


def _prediction_to_dict(p: CapacityPrediction) -> dict[str, Any]:
    return {
        "predicted_tokens": p.predicted_tokens,
        "feasible": p.feasible,
        "minimum_tokens": p.minimum_tokens,
        "basis": [list(b) for b in p.basis],
        "slope": p.slope,
        "intercept": p.intercept,
        "draft_tokens": p.draft_tokens,
        "reason": p.reason,
    }


def _prediction_from_dict(data: Mapping[str, Any]) -> CapacityPrediction:
    return CapacityPrediction(
        predicted_tokens=_opt_int(data.get("predicted_tokens")),
        feasible=bool(data.get("feasible", True)),
        minimum_tokens=int(data.get("minimum_tokens", 1)),
        basis=tuple((int(a), int(b)) for a, b in data.get("basis", ())),
        slope=_opt_float(data.get("slope")),
        intercept=_opt_float(data.get("intercept")),
        draft_tokens=_opt_int(data.get("draft_tokens")),
        reason=str(data.get("reason", "")),
    )


def _prune_to_dict(info: PruneInfo) -> dict[str, Any]:
    return {
        "metric": info.metric,
        "value": info.value,
        "incumbent": info.incumbent,
        "incumbent_value": info.incumbent_value,
        "threshold": info.threshold,
        "concurrency": info.concurrency,
    }


def _prune_from_dict(data: Mapping[str, Any]) -> PruneInfo:
    return PruneInfo(
        metric=str(data["metric"]),
        value=float(data["value"]),
        incumbent=int(data["incumbent"]),
        incumbent_value=float(data["incumbent_value"]),
        threshold=float(data["threshold"]),
        concurrency=_opt_int(data.get("concurrency")),
    )


def _probe_to_dict(probe: RateProbe) -> dict[str, Any]:
    return {
        "rate": probe.rate,
        "met": probe.met,
        "missed": probe.missed,
        "level": _level_to_dict(probe.level),
    }


def _probe_from_dict(data: Mapping[str, Any]) -> RateProbe:
    return RateProbe(
        rate=float(data["rate"]),
        level=_level_from_dict(data["level"]),
        met=bool(data["met"]),
        missed=str(data.get("missed", "")),
    )


def _forecast_to_dict(f: Forecast) -> dict[str, Any]:
    return {
        "loads": f.loads,
        "load_reason": f.load_reason,
        "capacity": f.capacity,
        "capacity_band": f.capacity_band,
        "levels": [list(lv) for lv in f.levels],
        "throughput_band": f.throughput_band,
        "source": f.source,
    }


def _forecast_from_dict(data: Mapping[str, Any]) -> Forecast:
    loads = data.get("loads")
    return Forecast(
        loads=loads if isinstance(loads, bool) else None,
        load_reason=str(data.get("load_reason", "")),
        capacity=_opt_int(data.get("capacity")),
        capacity_band=float(data.get("capacity_band", 0.05)),
        levels=tuple((int(c), float(v)) for c, v in data.get("levels", ())),
        throughput_band=float(data.get("throughput_band", 0.10)),
        source=str(data.get("source", "")),
    )


def record_to_dict(
    record: TrialRecord, *, label: str | None = None, bench: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """The JSON object written as one line of ``trials.jsonl``."""
    out: dict[str, Any] = {
        "version": RECORD_VERSION,
        "index": record.index,
        "label": label if label is not None else config_label(record.effective),
        "kind": record.kind.value,
        "status": record.status.value,
        "started_at": record.started_at,
        "finished_at": record.finished_at,
        "config": server_config_to_table(redact_config(record.config)),
        "normalized": None
        if record.normalized is None
        else server_config_to_table(redact_config(record.normalized)),
        "argv": list(record.argv),
        "artifact_hash": record.artifact_hash,
        "warnings": list(record.warnings),
        "errors": list(record.errors),
        "capacity": record.capacity,
        "max_running_requests": record.max_running_requests,
        "predicted": None if record.predicted is None else _prediction_to_dict(record.predicted),
        "server_info": [list(p) for p in record.server_info],
        "phases": [
            {
                "phase": p.phase.value,
                "started_at": p.started_at,
                "ended_at": p.ended_at,
                "detail": p.detail,
            }
            for p in record.phases
        ],
        "levels": [_level_to_dict(lv) for lv in record.levels],
        "accept_length": record.accept_length,
        "single_request_tok_s": record.single_request_tok_s,
        "peak_aggregate_tok_s": record.peak_aggregate_tok_s,
        "peak_concurrency": record.peak_concurrency,
        "crash": None if record.crash is None else _crash_to_dict(record.crash),
        "log_file": record.log_file,
        "note": record.note,
        "deploy_diff": record.deploy_diff,
    }
    if record.box:
        out["box"] = record.box
    if record.speculation_off:
        out["speculation_off"] = record.speculation_off
    if record.prune is not None:
        out["prune"] = _prune_to_dict(record.prune)
    if record.rate_probes:
        out["rate_probes"] = [_probe_to_dict(p) for p in record.rate_probes]
        out["slo_rate"] = record.slo_rate
    if record.gpu is not None:
        out["gpu"] = record.gpu.to_dict()
    if record.forecast is not None:
        out["forecast"] = _forecast_to_dict(record.forecast)
    if record.remeasure is not None:
        out["remeasure"] = record.remeasure.to_dict()
    if bench is not None:
        out["bench"] = dict(bench)
    return out


def record_from_dict(data: Mapping[str, Any]) -> TrialRecord:
    """Rebuild a ``TrialRecord`` (derived headline fields are recomputed, not read)."""
    try:
        normalized = data.get("normalized")
        predicted = data.get("predicted")
        crash = data.get("crash")
        return TrialRecord(
            index=int(data["index"]),
            config=server_config_from_table(data["config"], "config"),
            normalized=None
            if normalized is None
            else server_config_from_table(normalized, "normalized"),
            kind=TrialKind(data.get("kind", "sweep")),
            status=TrialStatus(data["status"]),
            started_at=float(data.get("started_at", 0.0)),
            finished_at=_opt_float(data.get("finished_at")),
            phases=tuple(
                PhaseStamp(
                    Phase(p["phase"]),
                    float(p["started_at"]),
                    _opt_float(p.get("ended_at")),
                    str(p.get("detail", "")),
                )
                for p in data.get("phases", ())
            ),
            argv=tuple(data.get("argv", ())),
            artifact_hash=data.get("artifact_hash"),
            warnings=tuple(data.get("warnings", ())),
            errors=tuple(data.get("errors", ())),
            capacity=_opt_int(data.get("capacity")),
            max_running_requests=_opt_int(data.get("max_running_requests")),
            predicted=None if predicted is None else _prediction_from_dict(predicted),
            server_info=tuple((str(k), str(v)) for k, v in data.get("server_info", ())),
            levels=tuple(_level_from_dict(lv) for lv in data.get("levels", ())),
            accept_length=_opt_float(data.get("accept_length")),
            crash=None if crash is None else _crash_from_dict(crash),
            log_file=data.get("log_file"),
            note=str(data.get("note", "")),
            deploy_diff=str(data.get("deploy_diff", "")),
            box=str(data.get("box", "")),
            speculation_off=str(data.get("speculation_off", "")),
            prune=None if data.get("prune") is None else _prune_from_dict(data["prune"]),
            rate_probes=tuple(_probe_from_dict(p) for p in data.get("rate_probes", ())),
            gpu=TrialGpu.from_dict(data["gpu"]) if isinstance(data.get("gpu"), Mapping) else None,
            forecast=_forecast_from_dict(data["forecast"])
            if isinstance(data.get("forecast"), Mapping)
            else None,
            remeasure=Remeasure.from_dict(data["remeasure"])
            if isinstance(data.get("remeasure"), Mapping)
            else None,
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise RecordError(f"trial record is malformed ({type(exc).__name__}: {exc})") from None


def dumps_record(record: TrialRecord, **kw: Any) -> str:
    """One JSON line (no newline), every text in it scrubbed of the trial's secret values
    (a crash excerpt or an error may quote the server's own arguments)."""
    values = secret_values(record.config)
    return json.dumps(_scrubbed(record_to_dict(record, **kw), values), separators=(",", ":"))


def _scrubbed(value: Any, secrets: tuple[str, ...]) -> Any:
    """``value`` (a JSON-able record) with :func:`~specconsole.core.config.secrets.scrub`
    applied to every string in it."""
    if isinstance(value, str):
        return scrub(value, secrets)
    if isinstance(value, dict):
        return {k: _scrubbed(v, secrets) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_scrubbed(v, secrets) for v in value]
    return value
