"""The rules a pool orchestrator applies to its boxes' trials: pure, so they are table-tested.

* **The shared view.** Each box's machine proposes its next trial from the records of the
  whole pool plus the configurations running elsewhere (``pending``: the constant liar of
  :func:`specconsole.core.search.strategy.next_trial`). The port a configuration is served on is a
  property of the box, not of what is tuned, so configurations are compared on one port
  (:func:`as_port`, :func:`records_on_port`).
* **Boxes assumed alike.** :func:`unlike_boxes` compares each box's first capacity line with
  what another box's trials predict for that same configuration
  (:func:`specconsole.core.search.capacity.predict_capacity`: the capacity seen for it, or the
  linear fit over draft tokens); more than 1% apart, the orchestrator says so and keeps that
  box's results apart (its strategy then sees only its own group's trials).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

from specconsole.core.config.model import ServerConfig
from specconsole.core.measure.trials import TrialRecord
from specconsole.core.search.capacity import predict_capacity

ALIKE_TOLERANCE = 0.01
"""Largest relative capacity difference between boxes still called "alike"."""


def as_port(config: ServerConfig, port: int) -> ServerConfig:
    """``config`` served on ``port``: the same configuration as far as tuning goes."""
    return config if config.port == port else replace(config, port=port)


def records_on_port(trials: Iterable[TrialRecord], port: int) -> tuple[TrialRecord, ...]:
    """``trials`` with their configuration (the trial's identity) on ``port``, so the same
    configuration compares equal whichever box served it; ``normalized`` and ``argv`` keep
    what was really deployed."""
    out = []
    for t in trials:
        cfg = as_port(t.config, port)
        out.append(t if cfg is t.config else replace(t, config=cfg))
    return tuple(out)


@dataclass(frozen=True, slots=True)
class Unlike:
    """Box ``box``'s first capacity differs from what box ``other``'s trials predict."""

    box: str
    other: str
    config_label: str
    capacity: int
    predicted: int

    @property
    def difference(self) -> float:
        return abs(self.capacity - self.predicted) / max(1, self.predicted)

    def message(self) -> str:
        return (
            f"boxes {self.box} and {self.other} are not alike: {self.box}'s first capacity line "
            f"({self.capacity} tokens for {self.config_label}) differs by "
            f"{self.difference * 100:.1f}% from {self.other}'s ({self.predicted}); their "
            "results are kept apart"
        )


def unlike_boxes(
    by_box: Mapping[str, Sequence[TrialRecord]],
    label: Callable[[ServerConfig], str] = str,
) -> list[Unlike]:
    """Pairs whose first capacity lines differ by more than :data:`ALIKE_TOLERANCE` for the
    same configuration (as the other box's trials predict it). Trials must be on one port."""
    found: list[Unlike] = []
    for name, trials in by_box.items():
        first = next((t for t in trials if t.capacity is not None), None)
        if first is None or first.capacity is None:
            continue
        for other, theirs in by_box.items():
            if other == name or not theirs:
                continue
            prediction = predict_capacity(theirs, first.config)
            predicted = prediction.predicted_tokens
            if predicted is None or predicted <= 0:
                continue
            if abs(first.capacity - predicted) / predicted > ALIKE_TOLERANCE:
                found.append(Unlike(name, other, label(first.config), first.capacity, predicted))
    return found
