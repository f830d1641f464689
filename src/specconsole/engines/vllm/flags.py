"""vLLM's command line for a :class:`~specconsole.core.config.model.ServerConfig`, and back.

Why a separate module: the keys are vLLM's own (:mod:`.options`), but not every key is a flag
of its own: the model is positional (``vllm serve MODEL``), speculative decoding is one JSON
flag (``--speculative-config '{"method": "eagle3", "model": DRAFT, "num_speculative_tokens":
N}'``) that carries ``method``, ``speculative_model`` and ``num_speculative_tokens``. This
module holds that translation in both directions; the vLLM engine (:mod:`.engine`) hands it to
the core's renderer and command reader, so there is one entry point for argv, command lines and
unit files. vLLM's own rules are in :mod:`.rules`."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from specconsole.core.config.errors import ConfigError
from specconsole.core.config.flags import flag_field, flag_value, flag_words
from specconsole.core.config.model import ServerConfig, parse_value
from specconsole.engines.vllm.options import (
    METHODS,
    PER_BATCH_K,
    SYNTHETIC,
    ScheduleError,
    format_schedule,
    parse_schedule,
)

__all__ = [
    "MODELLED_FLAGS",
    "VLLM_DEFAULT_HOST",
    "VLLM_DEFAULT_PORT",
    "launcher_takes_positional_model",
    "parse_vllm_args",
    "speculative_config",
    "vllm_flags",
]

_METHOD_NAMES: dict[str, str] = {m: m for m in METHODS} | {
    "deepseek_mtp": "mtp",
    "eagle-3": "eagle3",
}
"""``--speculative-config``'s method as read back: vLLM's own alternative names as the one
rendered."""
_SPEC_KEYS = frozenset(
    {"method", "model", "num_speculative_tokens", PER_BATCH_K, "rejection_sample_method", SYNTHETIC}
)
SYNTHETIC_METHOD = ("rejection_sample_method", "synthetic")
"""What a fixed acceptance needs besides its length (vLLM refuses the length without it)."""

MODELLED_FLAGS: dict[str, str] = {
    "--model": "model_path",
    "--speculative-config": "method",
    "--gpu-memory-utilization": "gpu_memory_utilization",
    "--max-num-seqs": "max_num_seqs",
    "--tensor-parallel-size": "tensor_parallel_size",
    "-tp": "tensor_parallel_size",
    "--max-model-len": "max_model_len",
    "--host": "host",
    "--port": "port",
}
"""vLLM flags that set a ``[server]`` key (``--speculative-config``: its method and draft)."""

VLLM_DEFAULT_HOST = "0.0.0.0"
"""vLLM binds every interface when ``--host`` is not given."""
VLLM_DEFAULT_PORT = 8000

_FLAGS: dict[str, str] = {
    flag: field for flag, field in MODELLED_FLAGS.items() if flag != "--speculative-config"
}
"""The plain vLLM flags (``--speculative-config``'s JSON is read on its own below)."""


def launcher_takes_positional_model(launcher_argv: Sequence[str]) -> bool:
    """``vllm serve MODEL`` takes the model positionally; the api_server module uses --model."""
    return bool(launcher_argv) and launcher_argv[-1] == "serve"


def speculative_config(config: ServerConfig) -> dict[str, Any] | None:
    """The ``--speculative-config`` object for ``config`` (``None`` without speculation)."""
    method = config.method
    if method is None:
        return None
    spec: dict[str, Any] = {"method": method}
    if config.speculative_model and method != "ngram":
        spec["model"] = config.speculative_model
    if config.num_speculative_tokens is not None:
        spec["num_speculative_tokens"] = config.num_speculative_tokens
    schedule = dict(config.options).get(PER_BATCH_K)
    if isinstance(schedule, str):
        try:
            spec[PER_BATCH_K] = [list(entry) for entry in parse_schedule(schedule)]
        except ScheduleError:
            pass  # validation names it and the deploy is refused; render never raises
    synthetic = dict(config.options).get(SYNTHETIC)
    if isinstance(synthetic, int | float) and not isinstance(synthetic, bool):
        spec[SYNTHETIC_METHOD[0]] = SYNTHETIC_METHOD[1]
        spec[SYNTHETIC] = float(synthetic)
    return spec


def vllm_flags(config: ServerConfig, launcher_argv: Sequence[str]) -> list[str]:
    """vLLM's arguments after the launcher (model, speculative config, sizes, extra args)."""
    out: list[str] = []
    if launcher_takes_positional_model(launcher_argv):
        out.append(config.model_path)
    else:
        out += ["--model", config.model_path]
    spec = speculative_config(config)
    if spec is not None:
        out += ["--speculative-config", json.dumps(spec)]
    out += flag_words(
        (
            ("--gpu-memory-utilization", config.gpu_memory_utilization),
            ("--max-num-seqs", config.max_num_seqs),
            ("--tensor-parallel-size", config.tensor_parallel_size),
            ("--max-model-len", config.max_model_len),
            ("--host", config.host),
            ("--port", config.port),
        )
    )
    out += list(config.extra_args)
    return out


def _read_spec(text: str) -> dict[str, Any]:
    try:
        spec = json.loads(text)
    except (ValueError, RecursionError) as exc:  # a nesting deeper than the parser recurses
        raise ConfigError(
            "--speculative-config",
            f"is not valid JSON ({exc}).",
            'write e.g. \'{"method": "eagle3", "model": "DRAFT", "num_speculative_tokens": 3}\'.',
        ) from None
    if not isinstance(spec, dict):
        raise ConfigError("--speculative-config", "must be a JSON object.", "write {...}.")
    return spec


def _schedule_ok(spec: dict[str, Any]) -> bool:
    """Whether the JSON's per-batch-size K (if any) is one vLLM accepts (else the whole JSON
    stays verbatim in ``extra_args``)."""
    if PER_BATCH_K not in spec:
        return True
    try:
        _schedule_text(spec[PER_BATCH_K])
    except ScheduleError:
        return False
    return True


def _synthetic_ok(spec: dict[str, Any]) -> bool:
    """Whether the JSON's synthetic acceptance (if any) is the form specconsole renders: the
    method with a numeric length, or neither (else the JSON stays verbatim)."""
    method = spec.get(SYNTHETIC_METHOD[0])
    length = spec.get(SYNTHETIC)
    if method is None and length is None:
        return True
    return (
        method == SYNTHETIC_METHOD[1]
        and isinstance(length, int | float)
        and not isinstance(length, bool)
    )


def _schedule_text(value: Any) -> str:
    """The ``[server]`` text of the JSON's schedule (compact form)."""
    return format_schedule(parse_schedule(json.dumps(value)))


def parse_vllm_args(tokens: Sequence[str], positional_model: bool) -> dict[str, Any]:
    """ServerConfig fields (plus ``extra_args``) from vLLM's arguments after the launcher.

    Flags specconsole does not model are kept verbatim, in order, in ``extra_args``; a
    ``--speculative-config`` with keys beyond method/model/num_speculative_tokens is kept
    verbatim too (its extra keys would otherwise be lost).
    """
    fields: dict[str, Any] = {"host": VLLM_DEFAULT_HOST, "port": VLLM_DEFAULT_PORT}
    extra: list[str] = []
    toks = list(tokens)
    i = 0
    if positional_model and toks and not toks[0].startswith("-"):
        fields["model_path"] = toks[0]
        i = 1
    while i < len(toks):
        token = toks[i]
        i += 1
        if not token.startswith("-"):
            extra.append(token)
            continue
        name, eq, inline = token.partition("=")
        if name.startswith("--"):
            name = "--" + name[2:].replace("_", "-")
        if name not in _FLAGS and name != "--speculative-config":
            extra.append(token)
            continue
        value, i = flag_value(name, inline if eq else None, toks, i)
        if name == "--speculative-config":
            spec = _read_spec(value)
            method = _METHOD_NAMES.get(str(spec.get("method", "")).lower())
            if (
                method is None
                or set(spec) - _SPEC_KEYS
                or not _schedule_ok(spec)
                or not _synthetic_ok(spec)
            ):
                extra += [name, value]
                continue
            fields["method"] = method
            if "model" in spec:
                fields["speculative_model"] = parse_value(
                    "vllm", "speculative_model", spec["model"]
                )
            if "num_speculative_tokens" in spec:
                fields["num_speculative_tokens"] = parse_value(
                    "vllm", "num_speculative_tokens", spec["num_speculative_tokens"]
                )
            options = []
            if PER_BATCH_K in spec:
                options.append((PER_BATCH_K, _schedule_text(spec[PER_BATCH_K])))
            if SYNTHETIC in spec:
                options.append((SYNTHETIC, float(spec[SYNTHETIC])))
            if options:
                fields["options"] = tuple(options)
            continue
        fields[_FLAGS[name]] = flag_field(name, _FLAGS[name], value, "vllm")
    fields["extra_args"] = tuple(extra)
    return fields
