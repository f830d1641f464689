"""The real ways ``vllm serve`` 0.32 (CPU) dies, as data: each recipe's flags and environment,
when it dies, the line that says why, and the cause specconsole must classify it as.

Why one place: the bed's own tests (tests/realengine/test_vllm_bed.py) start each recipe and
check the real log; the recorded logs in tests/data/vllm/ were made from them; the end-to-end
sweeps and benchmarks/real_engine.py pick recipes from here. Measured on the 2-core, 24 GiB
development machine (docs/vllm-testbed.md): every load-time death ends with ``RuntimeError:
Engine core initialization failed. See root cause above.`` after its root cause, except the
argument-stage ones, which never start the engine.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from tests.fixtures.vllm import VllmBed

MISSING_DRAFT = "does-not-exist"
"""A draft folder name that is never there (under the bed's models folder)."""


@dataclass(frozen=True)
class Recipe:
    """One way to die: how to start it and what must be seen."""

    name: str
    """Also the recorded log's stem (tests/data/vllm/NAME.log)."""
    flags: tuple[str, ...] = ()
    env: dict[str, str | None] = field(default_factory=dict)
    fatal_text: str = ""
    """A text of the root-cause line."""
    cause: str = ""
    """What specconsole's vLLM grammar classifies it as."""
    phase: str = "loading"
    """``arguments`` (refused before the engine starts), ``loading`` or ``serving`` (boots,
    then dies on its first drafting request)."""
    draft: str | None = None
    """A model folder of the bed the flags name as the draft (``{draft}`` in a flag)."""

    def argv(self, bed: VllmBed) -> tuple[str, ...]:
        path = str(bed.cache / "models" / self.draft) if self.draft else ""
        return tuple(flag.replace("{draft}", path) for flag in self.flags)


def _spec(**config: object) -> tuple[str, str]:
    return ("--speculative-config", json.dumps(config))


RECIPES: tuple[Recipe, ...] = (
    Recipe(
        "crash-default-memutil",
        env={"VLLM_CPU_KVCACHE_SPACE": None},
        fatal_text="is less than desired CPU memory utilization",
        cause="host_memory_utilization",
    ),
    Recipe(
        "crash-kv64",
        env={"VLLM_CPU_KVCACHE_SPACE": "64"},
        fatal_text="is less than requested memory for kv",
        cause="kv_space_exceeds_memory",
    ),
    Recipe(
        "crash-kv-too-small",
        flags=("--max-model-len", "8192", "--kv-cache-memory-bytes", "50000000"),
        env={"VLLM_CPU_KVCACHE_SPACE": None},
        fatal_text="larger than the available KV cache memory",
        cause="kv_cache_no_memory",
    ),
    Recipe(
        "crash-mem-util",
        flags=("--gpu-memory-utilization", "0.99"),
        env={"VLLM_CPU_KVCACHE_SPACE": None},
        fatal_text="is less than desired CPU memory utilization",
        cause="host_memory_utilization",
    ),
    Recipe(
        # an empty value reads as unset in the worker's memory check, which runs first here
        # (the engine core's int('') of it comes later, if at all)
        "crash-empty-kvspace-env",
        env={"VLLM_CPU_KVCACHE_SPACE": ""},
        fatal_text="is less than desired CPU memory utilization",
        cause="host_memory_utilization",
    ),
    Recipe(
        "crash-bad-spec-method",
        flags=_spec(method="ngramz", num_speculative_tokens=4),
        fatal_text="validation error for SpeculativeConfig",
        cause="speculative_config",
        phase="arguments",
    ),
    Recipe(
        "crash-missing-draft",
        flags=_spec(method="draft_model", model="{draft}", num_speculative_tokens=4),
        draft=MISSING_DRAFT,
        fatal_text="Invalid repository ID or local directory specified",
        cause="draft_unreadable",
        phase="arguments",
    ),
    Recipe(
        "crash-broken-draft",
        flags=_spec(method="draft_model", model="{draft}", num_speculative_tokens=4),
        draft="draft-broken",
        fatal_text="exceeds dimension size",
        cause="weights_mismatch",
    ),
    Recipe(
        "crash-long-context",
        flags=("--max-model-len", "65536"),
        env={"VLLM_ALLOW_LONG_MAX_MODEL_LEN": "1"},
        fatal_text="larger than the available KV cache memory",
        cause="kv_cache_no_memory",
    ),
    Recipe(
        "crash-context-beyond-model",
        flags=("--max-model-len", "65536"),
        fatal_text="is greater than the derived max_model_len",
        cause="context_beyond_model",
        phase="arguments",
    ),
    Recipe(
        "runtime-huge-k",
        flags=_spec(method="ngram", num_speculative_tokens=4096, prompt_lookup_max=4),
        fatal_text="AssertionError",
        cause="too_many_speculative_tokens",
        phase="serving",
    ),
)
"""Every recipe, the fast argument-stage ones included."""

BY_NAME = {recipe.name: recipe for recipe in RECIPES}


NO_LIBNUMA = Recipe(
    "crash-no-libnuma.journal",
    fatal_text="'_OpNamespace' '_C' object has no attribute 'init_cpu_memory_env'",
    cause="native_ops_missing",
)
"""Met, not made: the bed's venv run as a unit in a container whose root lacks libnuma.so.1
(its journal, as the systemd backend recorded it)."""


def recorded(name: str) -> Path:
    """The recorded real log of recipe (or run) ``name``."""
    return Path(__file__).resolve().parents[1] / "data" / "vllm" / f"{name}.log"
