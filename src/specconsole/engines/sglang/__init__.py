"""SGLang (``python -m sglang.launch_server`` / ``sglang serve``): the engine the product was
built for. ``ENGINE`` is what the registry loads; the modules are its own."""

from __future__ import annotations

from specconsole.engines.sglang.engine import ENGINE

__all__ = ["ENGINE"]
