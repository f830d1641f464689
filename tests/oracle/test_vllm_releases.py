"""The real vLLM releases as oracle: what ``engines.vllm.flags`` renders and parses, checked against
the
release's own source (read from its sdist, never imported; ``tests/oracle/vllm_sdist.py``).

For each release in ``tests/oracle/vllm-versions.txt`` (0.11.0, the first with every
``--speculative-config`` method we render — 0.10.0's ``SpeculativeMethod`` has no ``"mtp"`` —
and the newest): every flag the renderer emits is registered by the release with a compatible
type, ``vllm serve MODEL`` takes the model positionally, the parser's flags and aliases exist,
the speculative JSON's keys are ``SpeculativeConfig`` fields and each method we render is one of
its ``SpeculativeMethod`` values, and every route the benchmark and the health poll call is
served. Without the sdists (``scripts/fetch-vllm-sdists.py``, run by bootstrap) the tests skip
with the reason, and fail under ``CI=true``.
"""

from __future__ import annotations

import dataclasses
import json

import pytest

from specconsole.core.config.model import ServerConfig
from specconsole.core.config.render import to_argv
from specconsole.engines.vllm.flags import MODELLED_FLAGS as VLLM_MODELLED_FLAGS
from specconsole.engines.vllm.flags import speculative_config
from specconsole.engines.vllm.options import METHODS
from tests.oracle.offline import unavailable
from tests.oracle.vllm_sdist import (
    VllmRelease,
    engine_fields,
    frontend_fields,
    oracle_versions,
    positional_model_tag,
    registered_flags,
    routes,
    speculative_fields,
    speculative_methods,
    vllm_release,
)

VERSIONS = oracle_versions()

FULL = ServerConfig(
    model_path="/models/target",
    engine="vllm",
    method="eagle3",
    speculative_model="/models/draft",
    num_speculative_tokens=3,
    gpu_memory_utilization=0.85,
    max_num_seqs=64,
    tensor_parallel_size=2,
    max_model_len=8192,
    host="127.0.0.1",
    port=8000,
)
"""A vLLM configuration with every field ``engines.vllm.flags`` renders set."""

LAUNCHERS = ("vllm serve", "python3 -m vllm.entrypoints.openai.api_server")
"""The model is positional after ``vllm serve``, ``--model`` after the api_server module."""

CALLED_ROUTES = (
    "/health",  # controller health poll
    "/v1/models",  # bench: the served model name
    "/v1/completions",  # bench
    "/v1/chat/completions",  # bench
)
"""What specconsole needs a vLLM server to serve (``/server_info`` and ``/flush_cache`` are
SGLang's; the benchmark tolerates their absence, bench/ladder_run.py)."""


def need(version: str) -> VllmRelease:
    rel = vllm_release(version)
    if rel is None:
        reason = (
            f"vllm {version} sdist not cached (run scripts/fetch-vllm-sdists.py; needs the "
            "package index)"
        )
        unavailable(reason)
    return rel


def _kind(word: str) -> str:
    """What the renderer put in a value word: ``dict`` (JSON object), ``int``, ``float``,
    ``str``."""
    if word.startswith("{"):
        assert isinstance(json.loads(word), dict)
        return "dict"
    for kind, convert in (("int", int), ("float", float)):
        try:
            convert(word)
        except ValueError:
            continue
        return kind
    return "str"


def _accepts(annotation: str, kind: str) -> bool:
    """Whether a field annotated ``annotation`` (``get_kwargs`` makes its argparse type from
    it) takes a value of ``kind``; an int is a valid float."""
    text = annotation.lower()
    if kind == "float":
        return "float" in text
    if kind == "int":
        return "int" in text or "float" in text
    return kind in text


def _flag_values(words: list[str]) -> list[tuple[str, str]]:
    pairs = []
    for i, word in enumerate(words):
        if word.startswith("-"):
            assert i + 1 < len(words), f"{word} has no value"
            pairs.append((word, words[i + 1]))
    return pairs


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("launcher", LAUNCHERS)
def test_every_flag_we_render_exists_with_a_compatible_type(version: str, launcher: str) -> None:
    rel = need(version)
    flags = registered_flags(rel)
    fields = {**engine_fields(rel), **frontend_fields(rel)}
    argv = to_argv(dataclasses.replace(FULL, launcher=launcher))
    words = argv[len(launcher.split()) :]
    if launcher == "vllm serve":
        # vllm/entrypoints/.../serve.py: serve_parser.add_argument("model_tag", ..., nargs="?")
        assert positional_model_tag(rel), f"vllm {version}: `vllm serve` takes no model_tag"
        assert words[0] == FULL.model_path
        words = words[1:]
    pairs = _flag_values(words)
    assert {flag for flag, _ in pairs} >= {"--speculative-config", "--gpu-memory-utilization"}
    for flag, value in pairs:
        assert flag in flags, f"vllm {version} registers no {flag} (rendered: {argv})"
        name = flags[flag].removeprefix("--").replace("-", "_")
        assert name in fields, f"vllm {version}: {flag} is no EngineArgs/FrontendArgs field"
        kind = _kind(value)
        assert _accepts(fields[name], kind), (
            f"vllm {version}: {flag} is {fields[name]}, we render a {kind} ({value!r})"
        )


@pytest.mark.parametrize("version", VERSIONS)
def test_every_flag_the_reverse_parse_reads_exists(version: str) -> None:
    """``parse_vllm_args`` reads these words back into fields: each is a flag (or alias, like
    ``-tp``: ``parallel_group.add_argument("--tensor-parallel-size", "-tp", ...)``) of the
    release, and every alias of one field names the same release flag."""
    flags = registered_flags(need(version))
    canonical_by_field: dict[str, set[str]] = {}
    for flag, field in VLLM_MODELLED_FLAGS.items():
        assert flag in flags, f"vllm {version} has no {flag}"
        canonical_by_field.setdefault(field, set()).add(flags[flag])
    for field, canonical in canonical_by_field.items():
        assert len(canonical) == 1, f"{field} is read from different vLLM flags {canonical}"


@pytest.mark.parametrize("version", VERSIONS)
def test_the_speculative_config_is_one_the_release_accepts(version: str) -> None:
    """Keys are ``SpeculativeConfig`` fields (``num_speculative_tokens: int``, ``model: str |
    None``, ``method: SpeculativeMethod | str | None`` in 0.34.0); every method we render for an
    algorithm is a ``SpeculativeMethod`` value (``"mtp"`` is among the MTP model types from
    0.11.0 on)."""
    rel = need(version)
    fields = speculative_fields(rel)
    methods = speculative_methods(rel)
    assert fields and methods, f"vllm {version}: SpeculativeConfig not found"
    for algo in METHODS:
        config = dataclasses.replace(FULL, method=algo)
        spec = speculative_config(config)
        assert spec is not None
        assert set(spec) <= set(fields), f"vllm {version}: no {set(spec) - set(fields)}"
        assert spec["method"] in methods, f"vllm {version} has no method {spec['method']!r}"
    assert "int" in fields["num_speculative_tokens"]


@pytest.mark.parametrize("version", VERSIONS)
def test_every_route_we_call_exists_in_the_release(version: str) -> None:
    served = routes(need(version))
    missing = [r for r in CALLED_ROUTES if r not in served]
    assert not missing, f"vllm {version} serves no {missing}"
    # why the benchmark must tolerate a 404 from /flush_cache on vLLM (bench/ladder_run.py)
    assert "/flush_cache" not in served
