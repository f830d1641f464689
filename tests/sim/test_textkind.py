"""The simulator's text-dependent acceptance rule (sim/physics/textkind.py, docs/simulator.md)."""

from __future__ import annotations

import json
from importlib import resources

from specconsole.sim.faces.sglang.args import parse_argv
from specconsole.sim.faces.sglang.resolve import resolve
from specconsole.sim.forecast import predict
from specconsole.sim.physics.textkind import (
    REJECTION_MULTIPLIER,
    TextKind,
    classify,
    perf_for,
    request_perf,
)
from specconsole.sim.profile import load_default_profile
from tests.fixtures.sim import DEFAULT_FLAGS


def _args():  # type: ignore[no-untyped-def]
    profile = load_default_profile()
    return resolve(parse_argv(list(DEFAULT_FLAGS)), profile), profile


def test_builtin_prompts_are_classified_as_their_label() -> None:
    # The packaged prompt set labels each prompt's kind; the simulator only sees the text.
    data = resources.files("specconsole.bench").joinpath("data/prompts.jsonl").read_text()
    rows = [json.loads(line) for line in data.splitlines() if line.strip()]
    kinds = {row["kind"] for row in rows}
    assert {"chat", "code", "summarisation"} <= kinds
    wrong = [
        (row["kind"], row["prompt"][:60]) for row in rows if classify(row["prompt"]) != row["kind"]
    ]
    assert not wrong


def test_random_and_repetitive_text_are_recognised() -> None:
    assert classify("time year people way day man thing woman life child world school " * 2) in (
        TextKind.RANDOM,
        TextKind.REPETITIVE,
    )
    soup = "market sense nation plan college interest death experience effect use class control "
    soup += "care field development role effort rate heart drug show leader light voice wife"
    assert classify(soup) is TextKind.RANDOM
    assert classify(" ".join(["token"] * 64)) is TextKind.REPETITIVE
    assert classify("Tell me about the history of the bicycle, and why it caught on.") is (
        TextKind.CHAT
    )
    # Background notes first, the request last: the request decides.
    assert classify(
        "Background notes:\nA poem.\n\nRequest: Write a Python function that sorts."
    ) is (TextKind.CODE)


def test_chat_is_the_calibration_and_the_kinds_are_ordered() -> None:
    args, profile = _args()
    assert perf_for(profile.perf, TextKind.CHAT) == profile.perf
    assert predict(args, 1, 256, 128, profile) == predict(
        args, 1, 256, 128, profile, kind=TextKind.CHAT
    )
    lengths = {k: predict(args, 1, 256, 128, profile, kind=k).accept_length for k in TextKind}
    order = sorted(TextKind, key=lambda k: REJECTION_MULTIPLIER[k])
    assert [lengths[k] for k in order] == sorted(lengths.values(), reverse=True)
    assert lengths[TextKind.RANDOM] < 0.9 * lengths[TextKind.CHAT]
    assert lengths[TextKind.CODE] > lengths[TextKind.CHAT]


def test_request_perf_is_the_kinds() -> None:
    _, profile = _args()
    kind, perf = request_perf(profile.perf, "Write a Python function that merges intervals.")
    assert kind is TextKind.CODE and perf == perf_for(profile.perf, TextKind.CODE)
    assert perf.accept_first > profile.perf.accept_first
