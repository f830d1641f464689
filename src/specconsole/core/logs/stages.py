"""The stages a server's start goes through, the one vocabulary of them.

Why apart from the log events (:mod:`.events`, which re-exports both names): the stages are
what the log events report (``LogEvent.phase``), the controller's LOADING sub-phase
(``ControllerState.load_stage``), what a crash record keeps and what the console's header
says; a view that names a stage needs none of the events. Importing this module loads
nothing else.
"""

from __future__ import annotations

from enum import StrEnum


class LoadStage(StrEnum):
    """Sub-phases of a server start, in the order they normally happen: the one vocabulary
    of the log events (``LogEvent.phase``), the controller's LOADING sub-phase
    (``ControllerState.load_stage``), crash records and the console."""

    QUEUED = "queued"
    """Submitted to a batch scheduler, waiting for a node (Slurm ``PENDING``); never logged
    by the server itself."""
    STARTING = "starting"
    """The process is up; no weight loading seen yet (argument checks, distributed init)."""
    WEIGHTS = "weights"
    """Model weights (target, then draft) are loading."""
    KV_CACHE = "kv_cache"
    """The KV cache pool is being sized and allocated."""
    CUDA_GRAPH = "cuda_graph"
    """CUDA graphs are being captured."""
    WARMUP = "warmup"
    """The capacity line is out: warmup, waiting for the ready line."""
    READY = "ready"
    """The server answers requests."""


STAGE_ORDER: tuple[LoadStage, ...] = tuple(LoadStage)
"""Load stages in start-up order."""
