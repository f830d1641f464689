"""What the simulator's SGLang face says of SGLang's silent changes and adaptive refusals is
what the product's SGLang engine knows.

Why: the face reaches its engine through the registry for everything the engine protocol
exposes (flags and their aliases, the release table, the ``/metrics`` counter names); these
few texts the protocol does not carry, so the face keeps its own and this holds them equal to
the engine's — a change to one without the other fails here, not on a user's box.
"""

from __future__ import annotations

from specconsole.engines.sglang.adaptive import UNSUPPORTED_FLAGS
from specconsole.engines.sglang.normalize import AUTO_TREE, MSG_MAX_RUNNING_RESET
from specconsole.engines.sglang.rules import MSG_DRAFT_ADJUSTED
from specconsole.sim.faces.sglang import resolve


def test_silent_changes_are_the_engines_words() -> None:
    assert resolve.MSG_MAX_RUNNING_48 == MSG_MAX_RUNNING_RESET
    assert resolve.MSG_TOPK1_DRAFT == MSG_DRAFT_ADJUSTED
    assert resolve.AUTO_SPEC_PARAMS == AUTO_TREE


def test_the_mixed_chunk_notice_is_the_engines_warning() -> None:
    from specconsole.engines.sglang import rules

    with open(rules.__file__, encoding="utf-8") as handle:  # an inline text of its rules
        source = handle.read()
    assert f'"{resolve.MSG_MIXED_CHUNK}"' in source


def test_adaptive_refusals_are_the_engines() -> None:
    by_key = {
        flag.removeprefix("--").replace("-", "_"): why for flag, why in UNSUPPORTED_FLAGS.items()
    }
    assert by_key == resolve.ADAPTIVE_OFF


def test_adaptive_defaults_and_the_capture_ladder_are_the_engines() -> None:
    """The buckets SGLang's adaptive mode uses without a file, and the CUDA-graph sizes it
    rounds a batch up to before it looks a bucket up: the engine's routing
    (``engines/sglang/routing.py``) and the face's are one."""
    from specconsole.engines.sglang import routing
    from specconsole.sim.faces.sglang.adaptive import default_spec

    for release, tiers in routing.DEFAULT_TIERS:
        spec = default_spec(release)
        assert tuple((b.key, b.candidates) for b in spec.buckets) == tiers
    for top in (1, 8, 40, 64, 100, 256, 512):
        for speculative in (True, False):
            assert resolve.capture_batch_sizes(top, speculative) == routing.capture_sizes(
                top, speculative
            )
