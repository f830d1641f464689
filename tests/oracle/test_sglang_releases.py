"""The real SGLang releases as the oracle for our engine knowledge.

Each test reads one release's own source out of its wheel (``tests/oracle/wheel.py``; fetched by
``scripts/fetch-engine-wheels.sh`` into ``~/.cache/specconsole/wheels``, never imported) and
checks what we know against it: flag names and types (render, reverse parse, the simulator),
the flag-change table, the speculative rules validation enforces, the HTTP routes we call, and
the log lines the release prints (rendered from its own format strings) parsed into the right
events. Without the wheels the tests skip with the reason, and fail under ``CI=true``.
"""

from __future__ import annotations

import ast
import functools
import json
import re
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from specconsole.core.config.model import ServerConfig, replace_config
from specconsole.core.config.releases import has_feature
from specconsole.core.launch.command import parse_command
from specconsole.core.logs.events import (
    Capacity,
    CudaGraphBegin,
    CudaGraphEnd,
    DecodeStats,
    FatalCause,
    FatalError,
    KVCacheAllocated,
    PrefillStats,
    Ready,
)
from specconsole.core.logs.parser import LogParser
from specconsole.engines.sglang.adaptive import FLAG_FEATURES
from specconsole.engines.sglang.flags import MODELLED_FLAGS
from specconsole.engines.sglang.flags import render_flags as sglang_flags
from specconsole.engines.sglang.keys import SpecAlgorithm
from specconsole.engines.sglang.logstats import DECODE_KEYS, PREFILL_KEYS
from specconsole.engines.sglang.releases import (
    FLAG_CHANGES,
    KNOWN_RELEASES,
    TABLE,
    has_new_name,
    rule_applies,
)
from specconsole.sim.faces.sglang.args import sglang_parser
from tests.fixtures.sim import DEFAULT_FLAGS, running_simulator
from tests.oracle.offline import unavailable
from tests.oracle.wheel import Release, flags, oracle_versions, release

VERSIONS = oracle_versions()


def need(version: str) -> Release:
    rel = release(version)
    if rel is None:
        reason = (
            f"sglang {version} wheel not cached (run scripts/fetch-engine-wheels.sh; needs the "
            "package registry)"
        )
        unavailable(reason)
    return rel


def full_config(version: str) -> ServerConfig:
    """A configuration with every modelled SGLang field set, in release ``version``."""
    return ServerConfig(
        model_path="/models/target",
        engine_version=version,
        speculative_algorithm=SpecAlgorithm.EAGLE3,
        speculative_draft_model_path="/models/draft",
        speculative_num_steps=3,
        speculative_eagle_topk=1,
        speculative_num_draft_tokens=4,
        mem_fraction_static=0.85,
        cuda_graph_max_bs=64,
        max_running_requests=64,
        tp_size=2,
        context_length=8192,
        attention_backend="fa3",
        host="127.0.0.1",
        port=30000,
    )


def _compatible(kind: str, value: str) -> bool:
    if kind == "int":
        return re.fullmatch(r"-?\d+", value) is not None
    if kind == "float":
        try:
            float(value)
        except ValueError:
            return False
        return True
    return kind in ("str", "other")


def test_the_oracle_spans_the_supported_releases() -> None:
    assert set(KNOWN_RELEASES) <= set(VERSIONS)
    assert len(VERSIONS) >= 3


# ---------------------------------------------------------------------------------------------
# Flags
# ---------------------------------------------------------------------------------------------


def flag_problems(version: str, words: list[str]) -> list[str]:
    """What release ``version`` refuses in rendered ``--flag value`` pairs (``[]``: none)."""
    known = flags(version)
    problems: list[str] = []
    for flag, value in zip(words[::2], words[1::2], strict=True):
        spec = known.get(flag)
        if spec is None:
            problems.append(f"sglang {version} has no {flag}")
        elif spec.deprecated:
            problems.append(f"{flag} is deprecated in sglang {version}")
        elif not _compatible(spec.kind, value):
            problems.append(f"{flag} {value!r} is not a {spec.kind}")
        elif spec.choices is not None and value not in spec.choices:
            problems.append(f"{flag} {value!r} is not one of {spec.choices}")
    return problems


@pytest.mark.parametrize("version", VERSIONS)
def test_every_rendered_flag_exists_with_a_compatible_type(version: str) -> None:
    need(version)
    assert flag_problems(version, sglang_flags(full_config(version))) == []


@pytest.mark.parametrize("version", VERSIONS)
def test_a_misspelled_rendered_flag_fails_the_oracle(version: str) -> None:
    """The check above can fail: each rendered flag, misspelled in turn, is refused."""
    need(version)
    words = sglang_flags(full_config(version))
    for i in range(0, len(words), 2):
        for typo in (words[i] + "s", words[i][:2] + words[i][3:]):  # --hosts, --ost
            misspelled = [*words[:i], typo, *words[i + 1 :]]
            assert flag_problems(version, misspelled) == [f"sglang {version} has no {typo}"]


@pytest.mark.parametrize("version", VERSIONS)
def test_the_seed_box_renders_only_flags_the_release_accepts(version: str) -> None:
    """``specconsole render examples/seed-box.toml --as argv --engine-version V``, run as a
    user runs it: every ``--flag`` after the launcher is one release ``V`` declares."""
    need(version)
    root = Path(__file__).resolve().parents[2]
    argv = [sys.executable, "-m", "specconsole", "render", "examples/seed-box.toml"]
    done = subprocess.run(
        [*argv, "--as", "argv", "--engine-version", version],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    words = json.loads(done.stdout)
    known = flags(version)
    rendered = [w.split("=", 1)[0] for w in words if w.startswith("--")]
    assert rendered and "--model-path" in rendered
    assert [f for f in rendered if f not in known] == [], (version, rendered)


@pytest.mark.parametrize("version", VERSIONS)
def test_every_flag_the_reverse_parse_knows_exists_or_is_a_later_rename(version: str) -> None:
    need(version)
    known = flags(version)
    renamed = {c.new for c in FLAG_CHANGES} | {c.old for c in FLAG_CHANGES}
    for flag in MODELLED_FLAGS:
        if flag == "--tp":
            continue  # argparse's prefix abbreviation of --tp-size, not a declared flag
        if flag in FLAG_FEATURES:  # a later release's flag: there exactly from its release
            assert (flag in known) is has_feature(TABLE, FLAG_FEATURES[flag], version), flag
            continue
        assert flag in known or flag in renamed, f"sglang {version} has no {flag}"


@pytest.mark.parametrize("version", VERSIONS)
def test_every_flag_the_simulator_accepts_exists(version: str) -> None:
    need(version)
    known = flags(version)
    parser = sglang_parser(engine_version=version)
    for action in parser._actions:
        for flag in action.option_strings:
            if flag.startswith("--sim-") or flag in ("-h", "--help"):
                continue
            if flag == "--tp":
                continue  # argparse's prefix abbreviation of --tp-size (the engine's table)
            assert flag in known, f"the simulator accepts {flag}; sglang {version} does not"


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("change", FLAG_CHANGES, ids=lambda c: c.old)
def test_flag_change_rows_match_the_release(version: str, change) -> None:
    need(version)
    known = flags(version)
    new = change.new.split("=", 1)[0]
    assert (new in known) is has_new_name(change, version), (version, new)
    gone = change.removed is not None and change.old not in known
    if change.removed is not None and has_new_name(change, version):
        from specconsole.engines.sglang.releases import removed_flags

        assert gone is (change.old in removed_flags(version)), (version, change.old)
    elif not has_new_name(change, version):
        assert change.old in known and not known[change.old].deprecated


# ---------------------------------------------------------------------------------------------
# Speculative rules: validation says what the release itself says
# ---------------------------------------------------------------------------------------------

SPEC_RULES: tuple[tuple[str | None, str], ...] = (
    # server_args.py: "speculative_num_draft_tokens is adjusted to speculative_num_steps + 1
    # when speculative_eagle_topk == 1" (engines.sglang.rules MSG_DRAFT_ADJUSTED)
    (
        None,
        "speculative_num_draft_tokens is adjusted to speculative_num_steps + 1 when "
        "speculative_eagle_topk == 1",
    ),
    # "Max running requests is reset to 48 for speculative decoding. You can override this by
    # explicitly setting --max-running-requests." (MSG_MAX_RUNNING_RESET)
    (None, "Max running requests is reset to 48 for speculative decoding"),
    # "Currently standalone speculative decoding does not support dp attention."
    (None, "Currently standalone speculative decoding does not support dp attention."),
    # "Currently ngram speculative decoding does not support dp attention."
    (None, "ngram speculative decoding does not support dp attention"),
    # assert ..., "Pipeline parallelism is not compatible with overlap schedule, speculative
    # decoding, ..." — gone in 0.5.23 (engines.sglang.releases.RULES_UNTIL)
    (
        "pp_speculative",
        "Pipeline parallelism is not compatible with overlap schedule, speculative decoding",
    ),
)


@functools.cache
def _flat_source(version: str) -> str:
    rel = release(version)
    assert rel is not None
    source = "\n".join(rel.sources("sglang/srt/").values())
    # a message written as implicitly concatenated literals across lines reads as one
    return re.sub(r'"\s*\n\s*(f?)"', "", source).lower()


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize(("rule", "text"), SPEC_RULES, ids=[t[:40] for _, t in SPEC_RULES])
def test_speculative_rules_are_the_releases_own(version: str, rule: str | None, text: str) -> None:
    need(version)
    from specconsole.core.config import validation
    from specconsole.engines.sglang import normalize, rules

    applies = rule is None or rule_applies(rule, version)
    said = text.lower() in _flat_source(version)
    assert said is applies, f"sglang {version} {'no longer says' if applies else 'says'}: {text}"
    ours = "".join(inspect_source(m) for m in (validation, rules, normalize)).lower()
    assert text.lower()[:48] in ours, (
        f"core.config.validation / engines.sglang.rules / normalize lost the rule: {text}"
    )


def inspect_source(module: object) -> str:
    import inspect

    text = inspect.getsource(module)  # type: ignore[arg-type]
    return re.sub(r'"\s*\n\s*(f?)"', "", text)


# ---------------------------------------------------------------------------------------------
# HTTP routes
# ---------------------------------------------------------------------------------------------

CALLED_ROUTES = (
    "/health",  # controller health poll (bench/engine, remote runner)
    "/server_info",  # accept length, engine version fallback
    "/v1/models",  # bench: the served model name
    "/v1/completions",  # bench
    "/v1/chat/completions",  # bench
    "/flush_cache",  # bench: between levels
)


def release_routes(rel: Release) -> set[str]:
    routes: set[str] = set()
    for path, text in rel.sources("sglang/srt/entrypoints/").items():
        if "http_server" not in path and "openai" not in path:
            continue
        for m in re.finditer(r'@app\.(?:get|post|put|api_route)\(\s*"([^"]+)"', text):
            routes.add(m.group(1))
        for m in re.finditer(r'add_api_route\(\s*"([^"]+)"', text):
            routes.add(m.group(1))
    return routes


@pytest.mark.parametrize("version", VERSIONS)
def test_every_route_we_call_exists_in_the_release(version: str) -> None:
    rel = need(version)
    routes = release_routes(rel)
    missing = [r for r in CALLED_ROUTES if r not in routes]
    assert not missing, f"sglang {version} has no {missing}"


@pytest.mark.parametrize("version", VERSIONS)
def test_the_simulator_plays_the_release(version: str) -> None:
    """Deployed with the flags rendered for ``version``, the simulator accepts them, serves
    every route we call and reports the version."""
    need(version)
    calibrated = parse_command(["python3", "-m", "sglang.launch_server", *DEFAULT_FLAGS])
    config = replace_config(calibrated, engine_version=version, host="127.0.0.1", port=30000)
    argv = [*sglang_flags(config)[:-4], "--sim-engine-version", version]  # host/port: fixture's
    with running_simulator(base_flags=argv) as sim:
        for route in CALLED_ROUTES:
            if route in ("/v1/completions", "/v1/chat/completions", "/flush_cache"):
                resp = httpx.post(sim.base_url + route, json={}, timeout=10)
                assert resp.status_code != 404, route
            else:
                resp = httpx.get(sim.base_url + route, timeout=10)
                assert resp.status_code == 200, route
        assert httpx.get(sim.base_url + "/server_info", timeout=10).json()["version"] == version


# ---------------------------------------------------------------------------------------------
# Log lines rendered from the release's own format strings
# ---------------------------------------------------------------------------------------------


class _Samples:
    """Distinct sample values for a format string's placeholders, remembered by key."""

    def __init__(self) -> None:
        self.n = 10

    def value(self, expr: ast.AST, spec: str) -> str:
        text = ast.unparse(expr)
        self.n += 1
        if spec.endswith("f"):
            digits = int(spec[1:-1] or 2) if spec.startswith(".") else 2
            return f"{self.n + 0.25:.{digits}f}"
        if spec.endswith("%"):
            return f"{self.n}.00%"
        if "cuda_graph" in text or text.startswith(("can_run", "is_")) or "enable" in text:
            return "True"
        if text.endswith(("_msg", "suffix")) or "iter_msg" in text:
            return ""
        if text.endswith("cache_name"):
            return "KV Cache"
        if "dtype" in text:
            return "torch.bfloat16"
        if "bs" in text.split(".")[-1] and "capture" in text:
            return "[1, 2, 4, 8]"
        return str(self.n)


def _render_joined(node: ast.JoinedStr, samples: _Samples) -> str:
    out = []
    for part in node.values:
        if isinstance(part, ast.Constant):
            out.append(str(part.value))
        elif (
            isinstance(part, ast.FormattedValue)
            and isinstance(part.value, ast.IfExp)
            and isinstance(part.value.orelse, ast.Constant)
        ):
            out.append(str(part.value.orelse.value))  # the plain branch ("is allocated")
        elif isinstance(part, ast.FormattedValue):
            spec = ""
            if part.format_spec is not None and isinstance(part.format_spec, ast.JoinedStr):
                spec = "".join(
                    str(v.value) for v in part.format_spec.values if isinstance(v, ast.Constant)
                )
            out.append(samples.value(part.value, spec))
    return "".join(out)


def _string_of(node: ast.AST, samples: _Samples) -> str | None:
    if isinstance(node, ast.JoinedStr):
        return _render_joined(node, samples)
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _string_of(node.left, samples), _string_of(node.right, samples)
        if left is not None and right is not None:
            return left + right
    return None


def _percent(text: str) -> str:
    return text.replace("%d", "412386").replace("%.2f", "3.25").replace("%s", "torch.bfloat16")


def release_lines(rel: Release, marker: str) -> list[str]:
    """Every line the release can log that contains ``marker``, rendered with sample values:
    an f-string (with the ``msg +=`` pieces that follow it in the same function) or a
    %-format string."""
    lines: list[str] = []
    for text in rel.sources("sglang/srt/").values():
        if marker not in text:
            continue
        tree = ast.parse(text)
        for func in ast.walk(tree):
            if not isinstance(func, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            body = sorted(
                (n for n in ast.walk(func) if isinstance(n, ast.Assign | ast.AugAssign | ast.Call)),
                key=lambda n: (n.lineno, n.col_offset),
            )
            for node in body:
                samples = _Samples()
                if isinstance(node, ast.Assign) and len(node.targets) == 1:
                    first = _string_of(node.value, samples)
                    if first is None or marker not in first:
                        continue
                    target = ast.unparse(node.targets[0])
                    pieces = [first]
                    for later in body:
                        if (
                            isinstance(later, ast.AugAssign)
                            and later.lineno > node.lineno
                            and ast.unparse(later.target) == target
                        ):
                            piece = _string_of(later.value, samples)
                            if piece is not None:
                                pieces.append(piece)
                    lines.append("".join(pieces))
                elif isinstance(node, ast.Call) and node.args:
                    for arg in node.args[:2]:
                        got = _string_of(arg, samples)
                        if got is not None and marker in got:
                            lines.append(_percent(got))
    # de-duplicate, keep order; one line each
    seen: dict[str, None] = {}
    for line in lines:
        seen.setdefault(line.split("\n", 1)[0].strip(), None)
    return list(seen)


def _parse(line: str) -> list:
    parser = LogParser()
    return parser.feed(f"[2026-07-20 10:27:57 TP0] {line}") + parser.flush()


def _check_by_key(line: str, event: object, keys: dict[str, tuple[str, int]]) -> None:
    """Every ``key: value`` of the rendered line that we model is read into its field."""
    counts: dict[str, int] = {}
    pairs = [p.partition(": ") for p in line.split(", ")]
    for k, _, _ in pairs:
        counts[k.split("] ")[-1]] = counts.get(k.split("] ")[-1], 0) + 1
    for k, sep, v in pairs:
        k = k.split("] ")[-1]
        if not sep or k not in keys or counts[k] > 1 or not v:
            continue
        name, _kind = keys[k]
        if sum(1 for kk, (nn, _) in keys.items() if nn == name and counts.get(kk)) > 1:
            continue  # two keys for one field on the same line (hybrid pools)
        got = getattr(event, name)
        if v in ("True", "False"):
            assert got is (v == "True"), (k, line)
        else:
            assert got == pytest.approx(float(v)), (k, v, got, line)


@pytest.mark.parametrize("version", VERSIONS)
def test_decode_and_prefill_lines_parse_by_key(version: str) -> None:
    rel = need(version)
    for marker, cls, keys in (
        ("Decode batch", DecodeStats, DECODE_KEYS),
        ("Prefill batch", PrefillStats, PREFILL_KEYS),
    ):
        lines = release_lines(rel, marker)
        assert lines, f"sglang {version}: no {marker} format string found"
        for line in lines:
            events = _parse(line)
            assert [type(e) for e in events] == [cls], (version, line)
            _check_by_key(line, events[0], keys)
            assert events[0].running_req is not None, line


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize(
    ("marker", "cls"),
    [
        ("max_total_num_tokens=", Capacity),
        ("#tokens: ", KVCacheAllocated),
        ("CUDA graph begin", CudaGraphBegin),
        ("CUDA graph end", CudaGraphEnd),
        ("fired up and ready", Ready),
        ("Not enough memory. Please try to increase --mem-fraction-static", FatalError),
    ],
)
def test_release_log_lines_parse_into_events(version: str, marker: str, cls: type) -> None:
    rel = need(version)
    lines = release_lines(rel, marker)
    if not lines and marker.startswith("CUDA graph"):
        lines = release_lines(rel, marker.replace("CUDA graph", "{graph_backend"))
    if not lines:
        # e.g. the capture lines name the backend with a placeholder: "Capture {name} begin."
        lines = [
            ln
            for ln in release_lines(rel, "Capture ")
            if marker.split()[-1] + "." in ln and "graph" in ln.lower()
        ]
    if cls in (Capacity, KVCacheAllocated):
        # the allocation/capacity log lines, not debug texts that mention the same words
        lines = [
            ln
            for ln in lines
            if (cls is Capacity and ln.startswith(marker))
            or (cls is KVCacheAllocated and ("allocated. dtype" in ln or "is allocated" in ln))
        ]
    assert lines, f"sglang {version}: no format string with {marker!r}"
    for line in lines:
        events = [e for e in _parse(line) if isinstance(e, cls)]
        assert events, (version, line)
        if cls is FatalError:
            assert events[0].cause is FatalCause.KV_CACHE_NO_MEMORY
        if cls is Capacity:
            assert events[0].max_total_num_tokens is not None, line
