"""vLLM's spelling of a :class:`~specconsole.core.config.model.ServerConfig`.

Why a separate module: the configuration model is SGLang's (its names are the users'
vocabulary), and vLLM says the same things differently: the model is positional
(``vllm serve MODEL``), speculative decoding is one JSON flag
(``--speculative-config '{"method": "eagle3", "model": DRAFT, "num_speculative_tokens": N}'``),
memory is ``--gpu-memory-utilization``, concurrency ``--max-num-seqs``. This module holds that
translation in both directions; the vLLM engine (:mod:`.engine`) hands it to the core's
renderer and command reader, so there is one entry point for argv, command lines and unit
files. vLLM's own rules are in :mod:`.rules`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from specconsole.core.config.errors import ConfigError
from specconsole.core.config.flags import flag_field, flag_value, flag_words
from specconsole.core.config.model import ServerConfig, SpecAlgorithm, parse_field
from specconsole.engines.vllm.options import (
    PER_BATCH_K,
    SYNTHETIC,
    ScheduleError,
    format_schedule,
    parse_schedule,
)

__all__ = [
    "METHODS",
    "MODELLED_FLAGS",
    "VLLM_DEFAULT_HOST",
    "VLLM_DEFAULT_PORT",
    "launcher_takes_positional_model",
    "parse_vllm_args",
    "speculative_config",
    "vllm_flags",
]

METHODS: dict[SpecAlgorithm, str] = {
    SpecAlgorithm.EAGLE: "eagle",
    SpecAlgorithm.EAGLE3: "eagle3",
    SpecAlgorithm.NGRAM: "ngram",
    SpecAlgorithm.STANDALONE: "draft_model",
    SpecAlgorithm.NEXTN: "mtp",
}
"""SGLang algorithm -> vLLM ``speculative_config.method``."""
_METHOD_NAMES: dict[str, SpecAlgorithm] = {v: k for k, v in METHODS.items()} | {
    "deepseek_mtp": SpecAlgorithm.NEXTN,
    "eagle-3": SpecAlgorithm.EAGLE3,
}
_SPEC_KEYS = frozenset(
    {"method", "model", "num_speculative_tokens", PER_BATCH_K, "rejection_sample_method", SYNTHETIC}
)
SYNTHETIC_METHOD = ("rejection_sample_method", "synthetic")
"""What a fixed acceptance needs besides its length (vLLM refuses the length without it)."""

MODELLED_FLAGS: dict[str, str] = {
    "--model": "model_path",
    "--speculative-config": "speculative_algorithm",
    "--gpu-memory-utilization": "mem_fraction_static",
    "--max-num-seqs": "max_running_requests",
    "--tensor-parallel-size": "tp_size",
    "-tp": "tp_size",
    "--max-model-len": "context_length",
    "--host": "host",
    "--port": "port",
}
"""vLLM flags that map to ``ServerConfig`` fields."""

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
    algo = config.speculative_algorithm
    if algo is None:
        return None
    spec: dict[str, Any] = {"method": METHODS.get(algo, str(algo).lower())}
    if config.speculative_draft_model_path and algo is not SpecAlgorithm.NGRAM:
        spec["model"] = config.speculative_draft_model_path
    if config.speculative_num_steps is not None:
        spec["num_speculative_tokens"] = config.speculative_num_steps
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
            ("--gpu-memory-utilization", config.mem_fraction_static),
            ("--max-num-seqs", config.max_running_requests),
            ("--tensor-parallel-size", config.tp_size),
            ("--max-model-len", config.context_length),
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
            method = str(spec.get("method", "")).lower()
            algo = _METHOD_NAMES.get(method)
            if (
                algo is None
                or set(spec) - _SPEC_KEYS
                or not _schedule_ok(spec)
                or not _synthetic_ok(spec)
            ):
                extra += [name, value]
                continue
            fields["speculative_algorithm"] = algo
            if "model" in spec:
                fields["speculative_draft_model_path"] = parse_field(
                    "speculative_draft_model_path", spec["model"]
                )
            if "num_speculative_tokens" in spec:
                fields["speculative_num_steps"] = parse_field(
                    "speculative_num_steps", spec["num_speculative_tokens"]
                )
            options = []
            if PER_BATCH_K in spec:
                options.append((PER_BATCH_K, _schedule_text(spec[PER_BATCH_K])))
            if SYNTHETIC in spec:
                options.append((SYNTHETIC, float(spec[SYNTHETIC])))
            if options:
                fields["options"] = tuple(options)
            continue
        fields[_FLAGS[name]] = flag_field(name, _FLAGS[name], value)
    fields["extra_args"] = tuple(extra)
    return fields
