"""The prefix layer: every collector prefix and engine header, alone and in combination.

Each row of ``core.logs.prefixes`` and each header form of an engine's grammar carries a
real-shaped example (written for this project); these tests check that its message comes out
intact, wrapped around every engine header, and that the parser then finds the event the
message holds.
"""

from __future__ import annotations

import itertools
import json

import pytest

from specconsole.core.logs.events import Capacity, DecodeStats, FatalCause, FatalError, Ready
from specconsole.core.logs.parser import LogParser, parse_lines
from specconsole.core.logs.prefixes import OUTER, strip_outer

DIALECT = LogParser().dialect
"""Every registered engine's grammar, as ``LogParser()`` reads."""
ENGINE_HEADERS = DIALECT.header_examples
"""The Ray / PyTorch prefixes and every grammar's header forms, each with its example."""
strip_engine_header = DIALECT.strip_header

DECODE = (
    "Decode batch, #running-req: 3, #token: 912, token usage: 0.02, accept len: 2.61, "
    "cuda graph: True, gen throughput (token/s): 412.50, #queue-req: 0"
)


@pytest.mark.parametrize("row", OUTER, ids=lambda r: r.name)
def test_outer_row_strips_to_the_message(row) -> None:
    msg, _ts, _ident = strip_outer(row.example)
    assert msg == "MESSAGE"
    assert row.example[:1] in row.starts


@pytest.mark.parametrize(("name", "example"), ENGINE_HEADERS, ids=[n for n, _ in ENGINE_HEADERS])
def test_engine_header_strips_to_the_message(name: str, example: str) -> None:
    assert strip_engine_header(example)[0] == "MESSAGE"


def _combos() -> list[tuple[str, str, str]]:
    out = []
    for row, (hname, header) in itertools.product(OUTER, ENGINE_HEADERS):
        if row.name == "supervisord":
            continue  # supervisord's own lines carry its messages, not the program's output
        out.append((f"{row.name} + {hname}", row.example, header))
    return out


@pytest.mark.parametrize(("name", "outer", "header"), _combos(), ids=[c[0] for c in _combos()])
def test_any_collector_around_any_engine_header(name: str, outer: str, header: str) -> None:
    line = outer.replace("MESSAGE", header.replace("MESSAGE", DECODE))
    events = LogParser().feed(line)
    assert [type(e) for e in events] == [DecodeStats], line
    assert events[0].running_req == 3 and events[0].accept_len == pytest.approx(2.61)


@pytest.mark.parametrize(
    "line",
    [
        # docker compose -t: service, then a docker timestamp, then SGLang's header
        "sglang-1  | 2026-07-20T10:27:57.123456789Z [2026-07-20 10:27:57 TP0] " + DECODE,
        # CRI file of a pod whose container runs vLLM under Ray
        "2026-07-20T10:27:57.1Z stderr F (EngineCore_DP0 pid=311) INFO 07-20 10:27:57 "
        "[core.py:81] " + DECODE,
        # kubectl --prefix around --timestamps around an SGLang 0.3 header
        "[pod/sg-0/server] 2026-07-20T10:27:57.000000001Z [10:27:57 TP0] " + DECODE,
        # compose output with colours (docker compose logs in a terminal)
        "\x1b[36msglang-1  |\x1b[0m [2026-07-20 10:27:57 DP0 TP0 EP0] " + DECODE,
        # journal short-iso around SGLang 0.2
        "2026-07-20T10:27:57+0000 gpu-box python3[48211]: [gpu_id=0] " + DECODE,
        # a bare rank prefix
        "DP1 TP3 EP3 " + DECODE,
    ],
)
def test_nested_prefixes(line: str) -> None:
    events = LogParser().feed(line)
    assert [type(e) for e in events] == [DecodeStats], line


def test_ranks_and_timestamps_are_kept() -> None:
    (ev,) = LogParser().feed("[2026-07-20 10:27:57.321 DP0 TP1 EP1] " + DECODE)
    assert ev.timestamp == "2026-07-20 10:27:57.321" and ev.rank == "DP0 TP1 EP1"
    (ev,) = LogParser().feed("[10:27:57 TP2] " + DECODE)
    assert ev.timestamp == "10:27:57" and ev.rank == "TP2"
    (ev,) = LogParser().feed("[gpu_id=1] " + DECODE)
    assert ev.rank == "gpu_id=1"
    (ev,) = LogParser().feed("2026-07-20T10:27:57.5Z stdout F " + DECODE)
    assert ev.timestamp == "2026-07-20T10:27:57.5Z"


def test_docker_json_file_record() -> None:
    rec = {"log": "[2026-07-20 10:27:57 TP0] " + DECODE + "\n", "stream": "stderr", "time": "t"}
    events = LogParser().feed(json.dumps(rec))
    assert [type(e) for e in events] == [DecodeStats]


def test_sglang_02_capacity_line_with_gpu_id_prefix() -> None:
    line = (
        "[gpu_id=0] max_total_num_tokens=412,386, max_prefill_tokens=16384, "
        "max_running_requests=2047, context_len=8192"
    )
    (ev,) = [e for e in parse_lines([line]) if isinstance(e, Capacity)]
    assert ev.max_running_requests == 2047 and ev.context_len == 8192


def test_ray_traceback_continuation_lines_stay_in_one_group() -> None:
    lines = [
        "(EngineCore_DP0 pid=311) ERROR 07-20 10:27:57 [core.py:700] EngineCore failed to start.",
        "(EngineCore_DP0 pid=311) ERROR 07-20 10:27:57 [core.py:700] Traceback (most recent "
        "call last):",
        '(EngineCore_DP0 pid=311) ERROR 07-20 10:27:57 [core.py:700]   File "x.py", line 1',
        "(EngineCore_DP0 pid=311) ERROR 07-20 10:27:57 [core.py:700] torch.OutOfMemoryError: "
        "CUDA out of memory. Tried to allocate 2.00 GiB.",
        "(APIServer pid=300) INFO 07-20 10:27:58 [api_server.py:1] Shutting down.",
    ]
    fatal = [e for e in parse_lines(lines) if isinstance(e, FatalError)]
    assert [f.cause for f in fatal] == [FatalCause.CUDA_OOM]
    assert "File" in fatal[0].excerpt


def test_torch_rank_prefix_continues_a_traceback() -> None:
    lines = [
        "[rank0]: Traceback (most recent call last):",
        '[rank0]:   File "/sglang/srt/managers/scheduler.py", line 12, in run',
        "[rank0]: RuntimeError: CUDA error: an illegal memory access was encountered",
    ]
    (fatal,) = [e for e in parse_lines(lines) if isinstance(e, FatalError)]
    assert fatal.cause is FatalCause.ILLEGAL_MEMORY_ACCESS


def test_vllm_ready_through_compose_and_ray() -> None:
    line = "vllm-1  | (APIServer pid=300) INFO:     Application startup complete."
    assert any(isinstance(e, Ready) for e in parse_lines([line]))


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("2026-07-20 10:27:57,123 INFO exited: sglang (exit status 1; not expected)", False),
        (
            "2026-07-20 10:27:57,123 WARN exited: sglang (terminated by SIGKILL; not expected)",
            False,
        ),
        ("2026-07-20 10:27:57,123 INFO stopped: sglang (terminated by SIGTERM)", True),
        ("2026-07-20 10:27:57,123 INFO exited: sglang (exit status 0; expected)", True),
    ],
)
def test_supervisord_exits(line: str, expected: bool) -> None:
    events = parse_lines([line])
    exits = [e for e in events if e.kind == "service_exited"]
    assert len(exits) == 1 and exits[0].expected is expected
    fatal = [e for e in events if isinstance(e, FatalError)]
    assert bool(fatal) is (not expected)
    if "SIGKILL" in line:
        assert fatal[0].cause is FatalCause.SCHEDULER_KILLED


def test_unknown_lines_pass_unchanged() -> None:
    for line in ("hello | world x", "2026 was a year", "[not a header] x", "(no pid) x", "["):
        assert strip_engine_header(strip_outer(line)[0])[0] == line
