"""The one configuration a trial runs: what its engine will really run, for the box's release.

Why one module: a configuration as planned is not always what the server runs — SGLang
replaces the draft-token count with ``steps + 1`` at topk 1, sets ``max_running_requests``
to 48 when it is unset, and the flag names depend on the release on the box. When the dry
run, the deploy, the labels, the console's header, the records, the reports, ``finally =
"best"`` and the editor each derived that on their own, they disagreed (a dry run that left
``--speculative-num-draft-tokens 4`` alone while the deploy wrote 3; a ``finally`` that
deployed a configuration no trial ran). Here it is computed one way — the engine's
``normalize`` (``validation.normalized``) of the configuration in the box's release — and
the controller computes it once per trial (``TrialRecord.normalized``, from
``core.machine.results.validate_config``); every view reads that, and
:func:`effective_config` gives the same for a configuration not yet run.

When the box cannot say which release it runs, :func:`portable` keeps only what every
release the engine vouches for accepts: a key whose flag was renamed and whose old name a
later release refuses (SGLang's ``cuda_graph_max_bs``) has no such spelling, so it is left to
the server's default until the release is known — and the returned note says so.
"""

from __future__ import annotations

from dataclasses import replace

from specconsole.core.config.model import ServerConfig
from specconsole.core.config.releases import unportable_changes
from specconsole.core.config.validation import normalized
from specconsole.core.engine.registry import EngineNotFound, engine_for

__all__ = ["effective_config", "portable"]


def effective_config(config: ServerConfig) -> ServerConfig:
    """What the engine will actually run for ``config`` (``validation.normalized`` without
    its notes; the controller validates ``EngineVersionKeeper.apply(config)``, which adds the
    box's release). Idempotent: an effective configuration is its own."""
    return normalized(config)[0]


def portable(config: ServerConfig) -> tuple[ServerConfig, str]:
    """``config`` with only the flags every release its engine vouches for accepts, and a
    sentence naming what was left out ('' when nothing was): for a box whose release is not
    known yet. A declared ``engine_version`` needs no such care."""
    if config.engine_version:
        return config, ""
    try:
        engine = engine_for(config)
    except EngineNotFound:
        return config, ""
    dropped = [
        change
        for change in unportable_changes(engine.releases)
        if getattr(config, change.key, None) is not None
    ]
    if not dropped:
        return config, ""
    names = "; ".join(
        f"{c.key} = {getattr(config, c.key)} ({c.old} before {c.since}, {c.new} from "
        f"{c.since}, {c.old} refused from {c.removed})"
        for c in dropped
    )
    config = replace(config, **{c.key: None for c in dropped})  # type: ignore[arg-type]
    return config, (
        f"the {engine.title} release on the box is not known: left out {names}, which no "
        "one flag spells for every release, until the running server reports its release"
    )
