"""The simulator's vLLM face against the real releases it plays: every line it prints, every
flag it accepts, every counter and route it serves is the release's own.

Read from the cached sdists (``tests/oracle/vllm_sdist.py``, never imported): each text of
``sim/faces/vllm_text.SOURCES`` is a string literal of the recorded file at the recorded line
(the logging call's, which the header shows); the face's fatal messages, rendered with sample
values, hold every literal piece of the release's own f-string in order; every flag of its
``--help=all`` (the simulator's own ``--sim-*`` aside) is registered by the release's argument
parser; the ``--speculative-config`` keys it reads are ``SpeculativeConfig`` fields of that
release (the per-batch-size K of 0.34.0 only); the counter and metric names it serves are in
the release's metrics code; the routes it serves are the release's. Without the sdists the
tests skip with the reason, and fail under ``CI=true``.
"""

from __future__ import annotations

import re

import pytest

from specconsole.sim.faces.vllm import fatal
from specconsole.sim.faces.vllm.args import help_text
from specconsole.sim.faces.vllm.text import SOURCES, text_for
from specconsole.sim.physics.model import LoadFailure, plan_memory
from specconsole.sim.profile import load_profile
from tests.oracle.test_vllm_releases import need
from tests.oracle.vllm_sdist import (
    oracle_versions,
    registered_flags,
    routes,
    source_text,
    speculative_fields,
    string_constants,
)

VERSIONS = [v for v in oracle_versions() if v in SOURCES]


def _source(version: str, path: str) -> str:
    need(version)
    text = source_text(version, path)
    assert text is not None, f"vllm {version} has no {path}"
    return text


def _near(version: str, path: str, line: int, text: str, span: int = 4) -> bool:
    """Whether ``text`` is a string literal of ``path`` within ``span`` lines after ``line``."""
    return any(
        line <= at <= line + span and value == text
        for at, value, _f in string_constants(_source(version, path))
    )


@pytest.mark.parametrize("version", VERSIONS)
def test_every_text_is_the_releases_own_at_its_line(version: str) -> None:
    for key, (path, line, fmt) in SOURCES[version].items():
        if key == "stats" and version != "0.11.0":
            # "Engine %03d: " + ", ".join(parts): each part a literal of the same method
            text = _source(version, path)
            assert 'return f"Engine {self.engine_index:03d}: "' in text
            parts = fmt.removeprefix("Engine %03d: ").split(", ")
            literals = {value for _at, value, _f in string_constants(text)}
            assert set(parts) <= literals, (version, set(parts) - literals)
            continue
        if key == "version" and version != "0.11.0":
            assert _near(version, path, line - 20, fmt, 20), (version, key)
            continue
        if key == "schedule":
            assert f"    {fmt}: " in _source(version, path).splitlines()[line - 1], version
            continue
        assert _near(version, path, line, fmt), (version, key, path, line, fmt)


def _pieces_in_order(template: str, message: str) -> bool:
    """Whether every literal piece of an f-string (``{}`` where values go) is in ``message``,
    in order."""
    at = 0
    for piece in template.split("{}"):
        found = message.find(piece, at)
        if found < 0:
            return False
        at = found + len(piece)
    return True


def _fstring(version: str, path: str, needle: str) -> str:
    """The release's f-string (or literal) in ``path`` that holds ``needle``."""
    got = [v for _at, v, _f in string_constants(_source(version, path)) if needle in v]
    assert got, f"vllm {version}: no literal with {needle!r} in {path}"
    return max(got, key=len)


@pytest.mark.parametrize("version", VERSIONS)
def test_the_fatal_messages_hold_the_releases_words(version: str) -> None:
    from specconsole.sim.faces.vllm.args import parse_vllm, resolve_vllm
    from specconsole.sim.faces.vllm.face import VllmFace

    face = VllmFace()
    profile = load_profile(face.default_profile())
    t = text_for(version)
    words = ["serve", "m", "--gpu-memory-utilization", "0.35", "--sim-engine-version", version]
    args = resolve_vllm(
        parse_vllm(words, version, "schedule" in SOURCES[version]), profile, version
    )
    plan = plan_memory(args, profile)
    assert plan.failure is LoadFailure.NOT_ENOUGH_MEMORY
    planning = (
        "vllm/v1/core/kv_cache_utils.py"
        if version == "0.11.0"
        else "vllm/v1/core/kv_cache_planning.py"
    )
    too_short = _fstring(version, planning, "To serve at least one request")
    assert _pieces_in_order(too_short.replace("{}", "{}", 1), fatal.too_short(t, plan, args)), (
        version
    )
    no_memory = _fstring(version, planning, "No available memory for the cache blocks")
    assert _pieces_in_order(no_memory, fatal.no_memory(t, args)), version
    if version != "0.11.0":
        hint = _fstring(version, planning, "The KV cache gets what is left after")
        assert _pieces_in_order(hint, fatal.no_memory(t, args)), version
    worker = "vllm/v1/worker/gpu_worker.py" if version == "0.11.0" else "vllm/v1/worker/utils.py"
    startup = _fstring(version, worker, "on startup is less than desired GPU memory utilization")
    message = fatal.startup_oom(t, 78.6, profile, args)
    tail = startup[startup.index(") on startup") :]
    assert _pieces_in_order(tail, message), version
    failed = _fstring(version, "vllm/v1/engine/utils.py", "Engine core initialization failed.")
    assert (
        "Engine core initialization failed. See root cause above."
        in failed + " See root cause above."
    )
    dead = _source(version, "vllm/v1/engine/exceptions.py")
    assert "EngineCore encountered an issue. See stack trace (above) for the root cause." in dead


@pytest.mark.parametrize("version", VERSIONS)
def test_every_flag_of_its_help_is_registered_by_the_release(version: str) -> None:
    rel = need(version)
    flags = registered_flags(rel)
    shown = set(
        flag
        for line in help_text().splitlines()
        # an option line starts with its flags; a description's words are not flags
        if (head := re.match(r"\s{1,4}(-.*?)(?:\s{2,}|$)", line))
        for flag in re.findall(r"(?<![\w-])(--?[a-z][a-z0-9-]*)", head.group(1))
    )
    shown = {f for f in shown if not f.startswith("--sim-") and f != "-h"}
    assert {"--gpu-memory-utilization", "--speculative-config", "--max-num-seqs"} <= shown
    missing = sorted(f for f in shown if f not in flags)
    assert not missing, f"vllm {version} registers none of {missing}"


@pytest.mark.parametrize("version", VERSIONS)
def test_the_speculative_keys_it_reads_are_the_releases_fields(version: str) -> None:
    fields = speculative_fields(need(version))
    assert {"method", "model", "num_speculative_tokens"} <= set(fields)
    has_schedule = "num_speculative_tokens_per_batch_size" in fields
    assert has_schedule == ("schedule" in SOURCES[version]), version


@pytest.mark.parametrize("version", VERSIONS)
def test_its_counters_metrics_and_routes_are_the_releases(version: str) -> None:
    from specconsole.core.engine.registry import get_engine
    from specconsole.sim.faces.vllm import http as vllm_http

    source = vllm_http.__file__
    with open(source, encoding="utf-8") as handle:
        served = set(re.findall(r'"(vllm:[a-z_]+?)(?:_total)?"', handle.read()))
    counters = get_engine("vllm").endpoints.spec_counters  # the names the face serves them by
    assert counters is not None
    for name in (counters.drafts, counters.draft_tokens, counters.accepted, counters.per_position):
        assert name is not None
        served.add(name.removesuffix("_total"))
    spec = _source(version, "vllm/v1/spec_decode/metrics.py")
    loggers = _source(version, "vllm/v1/metrics/loggers.py")
    for name in sorted(served):
        base = name.removesuffix("_bucket")
        assert f'"{base}"' in spec + loggers, f"vllm {version} has no metric {base}"
    paths = routes(need(version))
    for path, _methods in fatal.ROUTES:
        if path == "/metrics":  # a Mount of prometheus' ASGI app, not a decorated route
            continue
        assert path in paths, f"vllm {version} serves no {path}"


@pytest.mark.parametrize("version", VERSIONS)
def test_every_speculative_key_we_render_is_read_by_the_release_or_refused_first(
    version: str,
) -> None:
    """The per-batch-size K renders as a ``SpeculativeConfig`` field of the releases that
    have it; for one without it the configuration is refused before any deploy."""
    import json

    from specconsole.core.config.model import config_from_table
    from specconsole.core.config.render import to_argv
    from specconsole.core.config.validation import validate

    fields = set(speculative_fields(need(version)))
    config = config_from_table(
        {
            "engine": "vllm",
            "engine_version": version,
            "model_path": "/models/target",
            "method": "eagle3",
            "speculative_model": "/models/draft",
            "num_speculative_tokens": 4,
            "num_speculative_tokens_per_batch_size": "1-8:4,9-1024:1",
        }
    )
    argv = to_argv(config)
    spec = json.loads(argv[argv.index("--speculative-config") + 1])
    errors = [i for i in validate(config) if i.severity.value == "error"]
    if "num_speculative_tokens_per_batch_size" in fields:
        assert set(spec) <= fields and not errors, (version, spec, errors)
    else:
        assert errors and errors[0].field == "num_speculative_tokens_per_batch_size", version
