"""vLLM (``vllm serve MODEL``): its OpenAI-compatible server with ``--speculative-config``.
``ENGINE`` is what the registry loads; the modules are its own."""

from __future__ import annotations

from specconsole.engines.vllm.engine import ENGINE

__all__ = ["ENGINE"]
