"""llama.cpp's answers to tuning by level: the baseline and the acceptance what-if; no schedule.

Why its own module: these are the engine's slots a per-level sweep asks
(``core.engine.protocol``, "tuning by level"). ``llama-server`` drafts up to one
``--spec-draft-n-max`` whatever the number of slots decoding together, so it cannot run a
draft length per batch size: a schedule is refused with that reason, and the per-level table
still says which static configuration to deploy for which traffic. Its benchmark knob fixes
the acceptance: ``--spec-synth-len L`` (the target mean acceptance length, target token
included, its ``--help``) or ``--spec-synth-rates P0,P1,...`` (unconditional per-position
rates, whose sum plus one is the mean).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from specconsole.core.config.issues import Issue, Severity
from specconsole.core.config.model import ServerConfig
from specconsole.core.config.options import with_options
from specconsole.core.engine.schedule import LevelPick
from specconsole.engines.llamacpp import rules
from specconsole.engines.llamacpp.options import OPTION_FIELDS

__all__ = [
    "fix_acceptance",
    "fixed_acceptance",
    "no_adaptive_mode",
    "schedule",
    "without_speculation",
]

_ORDER = [f.name for f in OPTION_FIELDS]
_SPEC = [name for name in _ORDER if name.startswith("spec_")]


def without_speculation(config: ServerConfig) -> ServerConfig:
    """No draft model and none of the ``spec_*`` keys: llama-server's default, no speculation."""
    options = with_options(config.options, {k: None for k in _SPEC}, _ORDER)
    return dataclasses.replace(config, speculative_draft_model_path=None, options=options)


def schedule(picks: Sequence[LevelPick]) -> Issue:
    del picks
    return Issue(
        "spec_draft_n_max",
        Severity.ERROR,
        "llama-server drafts one spec_draft_n_max at every number of busy slots: it has no "
        "draft length per batch size to deploy a schedule with.",
        "deploy the per-level table's best for your traffic (or the single best).",
    )


def no_adaptive_mode() -> Issue:
    """llama-server's answer when asked for an adaptive draft length: it has none."""
    return Issue(
        "spec_draft_n_max",
        Severity.ERROR,
        "llama-server has no mode that switches its draft length by batch size or by "
        "acceptance (spec_draft_p_min only ends one draft early, token by token).",
        "compare the per-level table's statics.",
    )


def fix_acceptance(config: ServerConfig, length: float) -> ServerConfig | Issue:
    """``--spec-synth-len length`` (replacing any per-position rates)."""
    if not rules.speculates(config):
        return Issue(
            "spec_type",
            Severity.ERROR,
            "without speculation there is no acceptance to fix.",
            "fix it on a speculative configuration.",
        )
    changes = {"spec_synth_len": float(length), "spec_synth_rates": None}
    return dataclasses.replace(config, options=with_options(config.options, changes, _ORDER))


def fixed_acceptance(config: ServerConfig) -> str | None:
    length = config.spec_synth_len
    if isinstance(length, int | float) and not isinstance(length, bool):
        return f"accept length fixed at {float(length):g} (--spec-synth-len)"
    rates = config.spec_synth_rates
    if isinstance(rates, str) and rates.strip():
        try:
            mean = 1.0 + sum(float(p) for p in rates.split(","))
        except ValueError:
            return f"acceptance fixed by --spec-synth-rates {rates}"
        return f"accept length fixed at {mean:g} (--spec-synth-rates {rates})"
    return None
