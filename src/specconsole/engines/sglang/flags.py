"""SGLang's command line: its flags for a configuration (read back by ``EngineBase``'s
reader from :data:`MODELLED_FLAGS`).

Why one module: the renderer and the reader must agree word for word (render → parse →
render is the identity, tested with properties), and the validator and the unit editor must
know which flags set a key (:data:`MODELLED_FLAGS`, aliases included) so none is written
twice.
"""

from __future__ import annotations

from specconsole.core.config import releases
from specconsole.core.config.flags import flag_words
from specconsole.core.config.model import ServerConfig
from specconsole.engines.sglang.adaptive import (
    ADAPTIVE,
    ADAPTIVE_CONFIG,
    adaptive_on,
    config_path,
)
from specconsole.engines.sglang.releases import TABLE

__all__ = ["MODELLED_FLAGS", "render_flags"]

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
    "--speculative-adaptive": ADAPTIVE,
    "--speculative-adaptive-config": ADAPTIVE_CONFIG,
}
"""SGLang flags (with aliases) that map to ``ServerConfig`` fields or its own keys
(:mod:`.adaptive`)."""


def _adaptive_words(config: ServerConfig) -> list[str]:
    """``--speculative-adaptive`` and its file, when the configuration asks for the mode."""
    if not adaptive_on(config):
        return []
    words = ["--speculative-adaptive"] if dict(config.options).get(ADAPTIVE) is not False else []
    path = config_path(config)
    return words + (["--speculative-adaptive-config", path] if path else [])


def render_flags(config: ServerConfig) -> list[str]:
    """SGLang's flags for ``config`` (no launcher): the modelled fields in field order, then
    ``extra_args`` verbatim, each field in the spelling of ``config.engine_version``. The
    simulator parses these very words."""

    def flag(key: str, default: str) -> str:
        return releases.flag_for(TABLE, key, default, config.engine_version)

    pairs = (
        ("--speculative-algorithm", config.speculative_algorithm),  # a StrEnum: its value
        ("--speculative-draft-model-path", config.speculative_draft_model_path),
        ("--speculative-num-steps", config.speculative_num_steps),
        ("--speculative-eagle-topk", config.speculative_eagle_topk),
        ("--speculative-num-draft-tokens", config.speculative_num_draft_tokens),
        ("--mem-fraction-static", config.mem_fraction_static),
        (flag("cuda_graph_max_bs", "--cuda-graph-max-bs"), config.cuda_graph_max_bs),
        ("--max-running-requests", config.max_running_requests),
        ("--tp-size", config.tp_size),
        ("--context-length", config.context_length),
        ("--attention-backend", config.attention_backend),
        ("--host", config.host),
        ("--port", config.port),
    )
    return [
        "--model-path",
        config.model_path,
        *flag_words(pairs),
        *_adaptive_words(config),
        *config.extra_args,
    ]
