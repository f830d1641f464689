"""llama.cpp (``llama-server``): draft-model speculative decoding on a GGUF model, as a
systemd service, a process, a container or a Slurm job. ``ENGINE`` is what the registry loads;
the modules are its own."""

from __future__ import annotations

from specconsole.engines.llamacpp.engine import ENGINE

__all__ = ["ENGINE"]
