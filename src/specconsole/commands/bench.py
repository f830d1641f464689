"""``specconsole bench URL``: benchmark a server that is already running, like bench_serving.

Why a CLI of its own: the ladder engine is useful without the console — to check a server
by hand, to compare with numbers from ``python -m sglang.bench_serving`` (``--json`` prints
one record per level with bench_serving's key names), or from scripts. A live progress line
goes to stderr so stdout stays clean for the table or the JSON records. Ctrl-C stops the run
and still prints what was measured, marked partial.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
import sys
import time
from typing import Any, TextIO

from specconsole.commands.bench_table import format_table
from specconsole.commands.bounded import (
    bench_number,
    ladder,
    output_file_problem,
    percentiles,
    server_url,
)
from specconsole.core.config.inputs import load_json
from specconsole.core.engine.registry import EngineNotFound, get_engine
from specconsole.core.measure.result import BenchResult
from specconsole.core.measure.slo import parse_slo
from specconsole.core.ports import DEFAULT_OUTPUT_LEN, BenchApi, BenchSpec

DEFAULT_LADDER = "1,4,16,32,64"


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``bench`` subcommand."""
    p = subparsers.add_parser(
        "bench",
        help="benchmark a running server over a concurrency ladder (bench_serving metrics)",
        description=(
            "Stream fixed-length requests at each concurrency level of a ladder (warm-up, "
            "/flush_cache, N requests with exactly c in flight, accept length from "
            "/server_info) and print bench_serving's metrics per level."
        ),
    )
    p.add_argument("url", type=server_url, help="server base URL, e.g. http://127.0.0.1:30000")
    p.add_argument(
        "--api",
        choices=[a.value for a in BenchApi],
        default=None,
        help="SGLang /generate (default), /v1/completions or /v1/chat/completions (with "
        "--engine: the first it serves)",
    )
    p.add_argument(
        "--engine",
        default=None,
        metavar="NAME",
        help="the server's engine: its own speculative-decoding counters are read from "
        "/metrics around each level (acceptance per level; e.g. llamacpp, vllm)",
    )
    p.add_argument(
        "--ladder",
        type=ladder,
        default=ladder(DEFAULT_LADDER),
        help=f"comma-separated concurrency levels (default {DEFAULT_LADDER})",
    )
    p.add_argument(
        "--requests",
        type=bench_number("requests_per_level", "--requests"),
        default=None,
        metavar="N",
        help="measured requests per level (default max(8, 4 x concurrency))",
    )
    p.add_argument(
        "--duration",
        type=bench_number("duration_s", "--duration"),
        default=None,
        metavar="S",
        help="run each level for S seconds instead of a request count",
    )
    p.add_argument(
        "--window",
        choices=("completed", "steady"),
        default="completed",
        help="completed (default): bench_serving's metrics over finished requests; steady: "
        "measure each level over a steady-state window of streamed tokens (docs/benchmark.md)",
    )
    p.add_argument(
        "--window-s",
        type=bench_number("window_s", "--window-s"),
        default=None,
        metavar="S",
        help="steady window length in seconds (default 2)",
    )
    p.add_argument(
        "--window-tokens",
        type=bench_number("window_tokens", "--window-tokens"),
        default=None,
        metavar="N",
        help="end a steady window once N output tokens streamed (whichever bound first)",
    )
    p.add_argument(
        "--warmup",
        type=bench_number("warmup_requests", "--warmup"),
        default=1,
        metavar="N",
        help="warm-up requests per in-flight slot before each level (default 1)",
    )
    p.add_argument(
        "--input-len",
        type=bench_number("input_len", "--input-len"),
        default=256,
        metavar="N",
        help="prompt length in tokens (default 256)",
    )
    p.add_argument(
        "--output-len",
        type=bench_number("output_len", "--output-len"),
        default=None,
        metavar="N",
        help="output tokens per request, with ignore_eos (default 256; a ShareGPT or custom "
        "dataset's recorded answers set their own unless this is given)",
    )
    p.add_argument(
        "--dataset",
        "--prompts",
        dest="prompts",
        default="builtin",
        metavar="SOURCE",
        help="builtin (default), coding or prose (realistic sets in the model's chat template "
        "on the text APIs: --model names it), random, sharegpt:FILE (ShareGPT JSON), "
        'jsonl:FILE (or a path) of {"prompt": ...} / {"messages": [...]} lines',
    )
    p.add_argument(
        "--range-ratio",
        type=bench_number("range_ratio", "--range-ratio"),
        default=1.0,
        metavar="R",
        help="draw lengths uniformly from [len*R, len] (default 1: fixed; bench_serving's "
        "--random-range-ratio)",
    )
    p.add_argument(
        "--seed",
        type=bench_number("seed", "--seed"),
        default=42,
        help="seeds prompt order and lengths",
    )
    p.add_argument(
        "--request-rate",
        type=bench_number("request_rate", "--request-rate"),
        default=None,
        metavar="R",
        help="Poisson arrivals at R req/s (capped at the level's concurrency)",
    )
    p.add_argument("--temperature", type=bench_number("temperature", "--temperature"), default=0.0)
    p.add_argument("--model", default=None, help="model name for the OpenAI APIs")
    p.add_argument(
        "--request-timeout",
        type=bench_number("request_timeout_s", "--request-timeout"),
        default=600.0,
        metavar="S",
        help="longest wait for any answer (connect, first byte, a control request) and the "
        "longest silence of a stream before it fails (default 600; docs/benchmark.md)",
    )
    p.add_argument(
        "--stall-timeout",
        type=bench_number("stall_timeout_s", "--stall-timeout"),
        default=None,
        metavar="S",
        help="a stream that yields no token for S seconds fails as a stall (default 30)",
    )
    p.add_argument(
        "--no-flush", action="store_true", help="do not POST /flush_cache before each level"
    )
    p.add_argument(
        "--json", action="store_true", help="print one bench_serving-keyed JSON record per level"
    )
    p.add_argument(
        "--output-file",
        default=None,
        metavar="FILE",
        help="also append the JSON records, with per-request lists, to FILE "
        "(like bench_serving's --output-file --output-details)",
    )
    p.add_argument(
        "--slo",
        nargs="+",
        default=None,
        metavar="KEY=MS",
        help="goodput objectives, e.g. --slo ttft_ms=500 tpot_ms=50 e2e_ms=20000",
    )
    p.add_argument(
        "--percentiles",
        type=percentiles,
        default=(90.0, 95.0, 99.0),
        metavar="LIST",
        help="latency percentiles to record (default 90,95,99), e.g. 50,90,95,99,99.9",
    )
    p.add_argument(
        "--api-key",
        default=None,
        metavar="KEY|env:VAR",
        help="send Authorization: Bearer KEY (SGLang's --api-key); env:VAR reads it from the "
        "environment. Never printed or recorded",
    )
    p.add_argument(
        "--header",
        action="append",
        default=[],
        metavar="NAME:VALUE",
        help="extra request header (repeatable; VALUE may be env:VAR); records keep the name",
    )
    p.add_argument(
        "--extra-body",
        default=None,
        metavar="JSON",
        help="JSON object merged into every request body, e.g. '{\"top_k\": 1}'",
    )
    p.add_argument(
        "--repeats",
        type=bench_number("repeats", "--repeats"),
        default=1,
        metavar="N",
        help="run the ladder N times: headlines get mean, std and a 95%% CI",
    )
    p.set_defaults(handler=run_bench)


def _extra_body(text: str | None) -> dict[str, Any] | None:
    if text is None:
        return None
    body = load_json(text, "--extra-body", ValueError)
    if not isinstance(body, dict):
        raise ValueError("--extra-body: give a JSON object, e.g. '{\"top_k\": 1}'")
    return body


def _engine(args: argparse.Namespace) -> Any:
    try:
        return get_engine(args.engine)
    except EngineNotFound as exc:
        raise ValueError(f"--engine: {exc}") from None


def spec_from_args(args: argparse.Namespace) -> BenchSpec:
    from specconsole.bench.wire.auth import parse_header

    if args.window == "steady" and (args.requests is not None or args.duration is not None):
        raise ValueError(
            "--window steady: each level ends with its window (--window-s, --window-tokens); "
            "drop --requests / --duration"
        )
    if args.window != "steady" and (args.window_s is not None or args.window_tokens is not None):
        raise ValueError("--window-s / --window-tokens: only with --window steady")
    return BenchSpec(
        window=args.window,
        window_s=args.window_s,
        window_tokens=args.window_tokens,
        ladder=args.ladder,
        requests_per_level=args.requests,
        duration_s=args.duration,
        warmup_requests=args.warmup,
        input_len=args.input_len,
        output_len=DEFAULT_OUTPUT_LEN if args.output_len is None else args.output_len,
        output_len_from_dataset=args.output_len is None,
        api=BenchApi(args.api or (_engine(args).endpoints.apis[0] if args.engine else "generate")),
        spec_counters=_engine(args).endpoints.spec_counters if args.engine else None,
        prompts=args.prompts,
        range_ratio=args.range_ratio,
        seed=args.seed,
        temperature=args.temperature,
        request_rate=args.request_rate,
        flush_cache=not args.no_flush,
        model=args.model,
        request_timeout_s=args.request_timeout,
        **({} if args.stall_timeout is None else {"stall_timeout_s": args.stall_timeout}),
        repeats=args.repeats,
        percentiles=args.percentiles,
        slo=parse_slo(args.slo).to_dict() if args.slo else None,
        output_details=bool(args.output_file),
        api_key=args.api_key,
        headers=tuple(parse_header(h) for h in args.header),
        extra_body=_extra_body(args.extra_body),
    )


class _ProgressLine:
    """One self-overwriting status line on a terminal; a line per level otherwise."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream
        self._tty = stream.isatty()
        self._last = 0.0
        self._last_level = -1

    def __call__(self, event: dict[str, Any]) -> None:
        now = time.monotonic()
        phase = "warm-up" if event["warmup"] else "measure"
        total = event["total"] or "?"
        text = (
            f"level {event['level_index'] + 1}/{event['level_count']} "
            f"c={event['concurrency']} {phase} {event['completed']}/{total} done "
            f"{event['failed']} failed {event['running']} running "
            f"{event['current_tok_s']:8.1f} tok/s {event['elapsed_s']:6.1f}s"
        )
        if self._tty:
            if now - self._last >= 0.1:
                self._last = now
                self._stream.write("\r\033[K" + text)
                self._stream.flush()
        elif (
            not event["warmup"]
            and event["running"] == 0
            and event["completed"] + event["failed"] >= event["total"]
            and event["level_index"] != self._last_level
        ):
            self._last_level = event["level_index"]
            self._stream.write(text + "\n")
            self._stream.flush()

    def clear(self) -> None:
        if self._tty:
            self._stream.write("\r\033[K")
            self._stream.flush()


def run_bench(args: argparse.Namespace) -> int:
    """Handler of ``specconsole bench``; returns the exit status."""
    from specconsole.bench.loadgen import make_run
    from specconsole.bench.workload.prompts import PromptError

    if args.output_file and (problem := output_file_problem(args.output_file, "--output-file")):
        print(f"error: {problem}", file=sys.stderr)
        return 2
    progress = _ProgressLine(sys.stderr)
    try:
        spec = spec_from_args(args)
        run = make_run(spec, args.url, on_progress=progress)
    except (PromptError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2

    async def main() -> BenchResult:
        loop = asyncio.get_running_loop()
        loop.add_signal_handler(signal.SIGINT, run.cancel)
        try:
            return await run.run()
        finally:
            loop.remove_signal_handler(signal.SIGINT)

    result = asyncio.run(main())
    progress.clear()
    records = result.records()
    if args.output_file:
        try:
            with open(args.output_file, "a", encoding="utf-8") as out:
                for record in result.records(details=True):
                    out.write(json.dumps(record) + "\n")
        except OSError as exc:
            print(
                f"error: --output-file {args.output_file}: {exc.strerror or exc}", file=sys.stderr
            )
            return 1
    if args.json:
        for record in records:
            print(json.dumps(record))
    elif result.levels or not result.error:  # nothing measured: the error alone says why
        print(format_table(result))
    if result.error:
        print(f"error: {result.error}", file=sys.stderr)
        return 1
    return 130 if result.cancelled else 0
