"""vLLM's log grammar on the real server's logs (tests/data/vllm/, recorded from the vLLM test
bed's ``vllm serve`` 0.32.0 on the CPU, tests/realengine/vllm_recipes.py): readiness, the KV
capacity, the statistics and acceptance lines, and every way it died — each with its own
cause and a remedy in vLLM's flags and environment variables, one death per log (the engine
core's and the front end's re-raises are consequences, not second deaths).

Why: the crash banner and the acceptance figures are only as good as this reading, and these
are the lines a real vLLM prints, not the simulator's.
"""

from __future__ import annotations

import pytest

from specconsole.core.logs.events import (
    Capacity,
    DecodeStats,
    FatalError,
    KVCacheAllocated,
    Ready,
    SpecStats,
    WeightsBegin,
)
from specconsole.core.logs.load_summary import summarize
from specconsole.core.logs.parser import parse_lines
from specconsole.present.crashtext import cause_text
from tests.realengine.vllm_recipes import NO_LIBNUMA, RECIPES, recorded

LOAD_DEATHS = [*(recipe for recipe in RECIPES if recipe.phase != "serving"), NO_LIBNUMA]


def events(name: str, engine: str | None = "vllm") -> list:
    return parse_lines(recorded(name).read_text().splitlines(), engine=engine)


@pytest.mark.parametrize("engine", ["vllm", None])
def test_a_real_start_is_ready_with_its_capacity_and_its_acceptance(engine: str | None) -> None:
    found = events("ngram4", engine)
    assert sum(isinstance(e, Ready) for e in found) == 1
    (kv,) = [e for e in found if isinstance(e, KVCacheAllocated)]
    assert kv.num_tokens == 46_592
    (capacity,) = [e for e in found if isinstance(e, Capacity)]
    assert (capacity.context_len, capacity.max_concurrency) == (2048, 22.75)
    assert capacity.max_total_num_tokens == 46_592
    assert [e.role.value for e in found if isinstance(e, WeightsBegin)] == ["target", "draft"]
    stats = [e for e in found if isinstance(e, DecodeStats)]
    assert stats and stats[0].token_usage == pytest.approx(0.003)  # "CPU KV cache usage: 0.3%"
    spec = [e for e in found if isinstance(e, SpecStats)]
    assert [(e.accepted_tokens, e.drafted_tokens) for e in spec] == [(116, 116), (44, 44)]
    assert spec[0].accept_len == 5.0 and spec[0].per_position == (1.0, 1.0, 1.0, 1.0)
    assert not any(isinstance(e, FatalError) for e in found)


def test_the_recorded_counters_move_by_what_the_log_says() -> None:
    """/metrics before and after four requests (the same window as the log's two lines)."""
    from specconsole.core.engine.registry import get_engine
    from specconsole.core.measure.acceptance import parse_prometheus

    counters = get_engine("vllm").endpoints.spec_counters
    assert counters is not None
    data = recorded("ngram4").parent
    before = parse_prometheus((data / "metrics-before.txt").read_text())
    after = parse_prometheus((data / "metrics-after.txt").read_text())

    def delta(name: str) -> float:
        return sum(after[name].values()) - sum(before.get(name, {}).values())

    assert delta(counters.accepted) == 116 + 44
    assert delta(counters.draft_tokens) == 116 + 44
    assert delta(counters.drafts) == 40 and delta(counters.output_tokens) == 4 * 48


@pytest.mark.parametrize("engine", ["vllm", None])
@pytest.mark.parametrize("recipe", LOAD_DEATHS, ids=lambda r: r.name)
def test_every_real_death_in_load_has_its_cause_and_a_vllm_fix(recipe, engine) -> None:
    found = [e for e in events(recipe.name, engine) if isinstance(e, FatalError)]
    assert len(found) == 1, [(e.cause, e.summary[:80]) for e in found]
    (fatal,) = found
    assert fatal.cause == recipe.cause, fatal
    assert recipe.fatal_text in fatal.summary or recipe.fatal_text in fatal.excerpt
    assert fatal.fixes, fatal
    words = " ".join(fix.text for fix in fatal.fixes)
    assert any(w in words for w in ("--", "VLLM_", "speculative_", "max_model_len", "vllm._C")), (
        words
    )
    assert "SGLang" not in words and "--mem-fraction-static" not in words
    summary = summarize(events(recipe.name, engine))
    assert not summary.ready and summary.fatal is not None


def test_cpu_facts_are_named_plainly_in_the_remedies() -> None:
    """Memory utilisation is host RAM on the CPU backend; VLLM_CPU_KVCACHE_SPACE overrides
    --kv-cache-memory-bytes."""
    by_cause = {}
    for recipe in LOAD_DEATHS:
        (fatal,) = [e for e in events(recipe.name) if isinstance(e, FatalError)]
        by_cause[fatal.cause] = fatal
    utilisation = by_cause["host_memory_utilization"]
    assert "host RAM" in utilisation.fixes[0].text
    assert utilisation.fixes[0].changes == (("gpu_memory_utilization", "0.5"),)
    assert any("VLLM_CPU_KVCACHE_SPACE" in f.text for f in utilisation.fixes)
    space = by_cause["kv_space_exceeds_memory"]
    assert "overrides --kv-cache-memory-bytes" in space.fixes[0].text
    kv = by_cause["kv_cache_no_memory"]
    assert any(
        "VLLM_CPU_KVCACHE_SPACE" in f.text and "estimated maximum" in f.text for f in kv.fixes
    )
    assert "host RAM" in cause_text("host_memory_utilization", "vllm")


def test_the_death_after_start_is_the_draft_length() -> None:
    found = events("runtime-huge-k")
    assert any(isinstance(e, Ready) for e in found)
    (fatal,) = [e for e in found if isinstance(e, FatalError)]
    assert fatal.cause == "too_many_speculative_tokens"
    assert "128" in fatal.fixes[0].text
    assert fatal.fixes[0].changes == (("num_speculative_tokens", "4"),)
