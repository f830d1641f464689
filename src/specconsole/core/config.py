"""The typed model of one inference-server launch configuration.

Field names are SGLang's own server-argument names (the flag without ``--``, dashes as
underscores), so the same word appears in TOML files, the editor, reports and records and
users never translate between them. ``None`` means "not set: let the server choose".
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum


class Engine(StrEnum):
    """Which inference server the configuration launches."""

    SGLANG = "sglang"
    VLLM = "vllm"


class SpecAlgorithm(StrEnum):
    """Speculative decoding algorithms SGLang accepts for ``--speculative-algorithm``."""

    EAGLE = "EAGLE"
    EAGLE3 = "EAGLE3"
    NEXTN = "NEXTN"
    STANDALONE = "STANDALONE"
    NGRAM = "NGRAM"


DEFAULT_SGLANG_LAUNCHER = "python3 -m sglang.launch_server"
"""The command prefix that starts SGLang; ``sglang serve`` is the newer alternative."""


@dataclass(frozen=True, slots=True)
class ServerConfig:
    """One server configuration: what a trial deploys and what its record keeps."""

    model_path: str
    """``--model-path``: local directory or hub id of the target model."""
    engine: Engine = Engine.SGLANG
    """Inference server: ``sglang`` (first-class) or ``vllm``."""
    speculative_algorithm: SpecAlgorithm | None = None
    """``--speculative-algorithm``; ``None`` disables speculative decoding."""
    speculative_draft_model_path: str | None = None
    """``--speculative-draft-model-path``: the draft (EAGLE head) model."""
    speculative_num_steps: int | None = None
    """``--speculative-num-steps``: draft depth (tokens drafted per verify step per branch)."""
    speculative_eagle_topk: int | None = None
    """``--speculative-eagle-topk``: branching factor of the draft tree."""
    speculative_num_draft_tokens: int | None = None
    """``--speculative-num-draft-tokens``: verify width (tree nodes plus the root)."""
    mem_fraction_static: float | None = None
    """``--mem-fraction-static``: share of GPU memory for weights plus the KV pool."""
    cuda_graph_max_bs: int | None = None
    """``--cuda-graph-max-bs``: largest decode batch captured as a CUDA graph."""
    max_running_requests: int | None = None
    """``--max-running-requests``: SGLang caps it at 48 with speculative decoding if unset."""
    tp_size: int | None = None
    """``--tp-size``: tensor-parallel GPU count."""
    context_length: int | None = None
    """``--context-length``: maximum sequence length."""
    attention_backend: str | None = None
    """``--attention-backend`` (e.g. ``fa3``, ``flashinfer``, ``trtllm_mha``)."""
    host: str = "127.0.0.1"
    """``--host`` the server binds to."""
    port: int = 30000
    """``--port`` the server listens on."""
    extra_args: tuple[str, ...] = ()
    """Further flags passed verbatim, in order (flags this model does not name)."""
    env: tuple[tuple[str, str], ...] = ()
    """Environment variables for the server process, as ordered (name, value) pairs."""
    launcher: str = DEFAULT_SGLANG_LAUNCHER
    """Command prefix before the flags, e.g. ``python3 -m sglang.launch_server``,
    ``sglang serve`` or ``/opt/venv/bin/python -m specconsole.sim`` for the simulator."""
    working_directory: str | None = None
    """Working directory of the server process (systemd ``WorkingDirectory=``)."""
    user: str | None = None
    """Account the service runs as (systemd ``User=``)."""
    description: str = field(default="", compare=False)
    """Free-text label shown in reports; not part of the configuration's identity."""
