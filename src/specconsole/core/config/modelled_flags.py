"""The server flags specconsole models as ``ServerConfig`` fields, and reading ``extra_args``.

Why its own module: the validator refuses a modelled flag repeated in ``extra_args``, the
renderer and the unit writer must not emit it twice, and the engine rules look up the values
of unmodelled flags (``--page-size``, ``--pp-size``...); one table keeps them agreeing.
"""

from __future__ import annotations

from specconsole.core.config.model import ServerConfig

MODELLED_FLAGS: dict[str, str] = {
    "--model-path": "model_path",
    "--model": "model_path",
    "--speculative-algorithm": "speculative_algorithm",
    "--speculative-draft-model-path": "speculative_draft_model_path",
    "--speculative-draft-model": "speculative_draft_model_path",
    "--speculative-num-steps": "speculative_num_steps",
    "--speculative-eagle-topk": "speculative_eagle_topk",
    "--speculative-num-draft-tokens": "speculative_num_draft_tokens",
    "--mem-fraction-static": "mem_fraction_static",
    "--cuda-graph-max-bs": "cuda_graph_max_bs",
    "--cuda-graph-max-bs-decode": "cuda_graph_max_bs",
    "--max-running-requests": "max_running_requests",
    "--tp-size": "tp_size",
    "--tensor-parallel-size": "tp_size",
    "--tp": "tp_size",
    "--context-length": "context_length",
    "--attention-backend": "attention_backend",
    "--host": "host",
    "--port": "port",
}
"""SGLang flags (with aliases) that map to ``ServerConfig`` fields."""

VLLM_MODELLED_FLAGS: dict[str, str] = {
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


def _flag_name(token: str) -> str:
    return token.split("=", 1)[0]


def extra_flags(config: ServerConfig) -> list[str]:
    args = config.extra_args if isinstance(config.extra_args, tuple | list) else ()
    return [_flag_name(t) for t in args if isinstance(t, str) and t.startswith("-")]


def extra_value(config: ServerConfig, flag: str) -> str | None:
    """The value given to ``flag`` in extra_args (``--flag v`` or ``--flag=v``), if any."""
    args = (
        [t for t in config.extra_args if isinstance(t, str)]
        if isinstance(config.extra_args, tuple | list)
        else []
    )
    for i, token in enumerate(args):
        if token == flag:
            return args[i + 1] if i + 1 < len(args) else ""
        if token.startswith(flag + "="):
            return token[len(flag) + 1 :]
    return None
