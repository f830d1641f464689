"""A trial's point of the space: its configuration without where and how the server ran.

Why its own module: the strategies (which configurations not to propose again), the
contender rule (how often one was measured) and the noise band (one configuration measured
by several trials is a measurement of the noise) must agree on when two trials tried the
same thing; a resumed session may run another interpreter path or port, and that is still
the same point.
"""

from __future__ import annotations

from dataclasses import replace

from specconsole.core.config.model import ServerConfig

__all__ = ["identity"]


def identity(config: ServerConfig) -> ServerConfig:
    """What a trial tried, without where and how the server ran."""
    return replace(
        config, description="", launcher="", host="", port=0, user=None, working_directory=None
    )
