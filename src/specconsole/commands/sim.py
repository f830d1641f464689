"""``specconsole sim``: run the simulated GPU box, or print what its model predicts.

``specconsole sim [SGLang flags...]`` is the same as ``python -m specconsole.sim``: a
simulated SGLang server in the foreground (``specconsole sim vllm serve MODEL ...``: its vLLM
face). ``specconsole sim predict [...]`` prints the performance model's expectations for one
configuration over a concurrency ladder, and ``specconsole sim predict --calibration [vllm]``
a face's calibration sweep, without starting anything — handy when writing plans or checking
a profile edit.
"""

from __future__ import annotations

import argparse
import math
import os
from collections.abc import Mapping
from typing import Any


def register(subparsers: Any) -> None:
    """Add the ``sim`` subcommand."""
    parser = subparsers.add_parser(
        "sim",
        help="run the simulated GPU box (SGLang's face, or 'sim vllm serve' for vLLM's; "
        "'sim predict' for the model's numbers)",
        description=(
            "Run the simulated server with the flags of the engine it imitates: SGLang's by "
            "default, vLLM's after 'vllm serve' (see docs/simulator.md); or "
            "'specconsole sim predict [--calibration|--schedule] [--ladder 1,4,16] [the "
            "face's flags]' to print the performance model's predictions."
        ),
        add_help=False,
        # Every token after "sim" belongs to the simulator's own parser, options included.
        prefix_chars="+",
    )
    parser.add_argument("sim_args", nargs=argparse.REMAINDER)
    parser.set_defaults(handler=_run)


def _run(args: argparse.Namespace) -> int:
    rest: list[str] = list(args.sim_args)
    if rest and rest[0] == "predict":
        return _predict(rest[1:])
    from specconsole.commands.common import error
    from specconsole.sim.serverlibs import server_unavailable

    why = server_unavailable("specconsole sim")
    if why is not None:
        return error(why)
    from specconsole.sim.process import main

    return main(rest)


_SHARES = ("mem_fraction_static", "gpu_memory_utilization")
"""Flags that are a share of the GPU's memory: more than 1 is no share."""


def _unusable_number(values: Mapping[str, Any]) -> str:
    """Why a parsed flag's number cannot be predicted for ('' when every one can): negative,
    not finite, or a memory share above 1 — refused as ``validate`` and a plan refuse them,
    even where the engine would ignore the flag (no speculative algorithm named)."""
    for name, value in values.items():
        if isinstance(value, bool) or not isinstance(value, int | float):
            continue
        flag = "--" + name.replace("_", "-")
        if not math.isfinite(value) or value < 0:
            return f"{flag} {value}: must be a finite number, 0 or more; fix: give e.g. {flag} 3"
        if name in _SHARES and value > 1:
            return f"{flag} {value}: a share of GPU memory is at most 1; fix: e.g. {flag} 0.85"
    return ""


def _predict(argv: list[str]) -> int:
    from specconsole.commands.bounded import bench_number, ladder
    from specconsole.sim.arguments import SimArgError
    from specconsole.sim.facetable import DEFAULT_FACE, select_face
    from specconsole.sim.forecast import predict
    from specconsole.sim.physics.model import (
        CALIBRATION_LADDER,
        DEFAULT_INPUT_LEN,
        DEFAULT_OUTPUT_LEN,
    )
    from specconsole.sim.profile import ProfileError, load_profile

    ap = argparse.ArgumentParser(prog="specconsole sim predict")
    ap.add_argument(
        "--ladder",
        type=ladder,
        default=tuple(CALIBRATION_LADDER),
        help="comma-separated concurrency levels (default: 1,4,16,32,64)",
    )
    ap.add_argument(
        "--input-len", type=bench_number("input_len", "--input-len"), default=DEFAULT_INPUT_LEN
    )
    ap.add_argument(
        "--output-len",
        type=bench_number("output_len", "--output-len"),
        default=DEFAULT_OUTPUT_LEN,
    )
    ap.add_argument(
        "--calibration",
        action="store_true",
        help="sweep the draft length (SGLang steps 1-10, vLLM K 1-8) with the profile's "
        "reference launch flags",
    )
    ap.add_argument(
        "--schedule",
        action="store_true",
        help="the calibration sweep, no speculation, then the schedule the per-level bests "
        "make (SGLang's adaptive config, vLLM's per-batch-size K) and its prediction",
    )
    try:
        opts, flags = ap.parse_known_args(argv)
    except SystemExit as exc:  # argparse said why (a bad --ladder, --help): its exit code
        return int(exc.code or 0)
    levels: tuple[int, ...] = opts.ladder
    sweep = opts.calibration or opts.schedule
    try:
        face, words = select_face(flags)
        if sweep and not words and face.engine != DEFAULT_FACE:
            words = face.words(face.calibration(load_profile(face.default_profile()), 1))
        parsed = face.parse(words)
        if problem := _unusable_number(parsed.values):
            print(problem)
            return 2
        profile = load_profile(parsed.values.get("sim_profile") or face.default_profile())
    except (SimArgError, ProfileError, ValueError) as exc:
        print(exc)
        return 2
    configs: list[tuple[str, Any]]
    if sweep:
        configs = [
            (f"{face.steps_word} {s}", face.calibration(profile, s))
            for s in range(1, face.calibration_steps + 1)
        ]
    else:
        try:
            parsed = face.context(parsed, os.environ, _read)  # SGLANG_SIMULATE_ACC_LEN, files
            configs = [("config", face.resolve(parsed, face.with_release(parsed, profile)))]
        except SimArgError as exc:
            print(f"{exc.exception_type}: {exc}")
            return 2
    if opts.schedule:
        configs = _with_schedule(configs, levels, opts.input_len, opts.output_len, profile)
    print(f"profile {profile.source}; input {opts.input_len}, output {opts.output_len} tokens")
    w = max(9, *(len(label) for label, _cfg in configs))
    print(
        f"{'':<{w}} {'capacity':>9} {'accept':>6} "
        + " ".join(f"{'c=' + str(c):>8}" for c in levels)
        + "   peak"
    )
    for label, cfg in configs:
        if isinstance(cfg, str):  # the engine's refusal of a schedule
            print(f"{label:<{w}} {cfg}")
            continue
        first = predict(cfg, levels[0], opts.input_len, opts.output_len, profile)
        if not first.ok:
            reason = first.load_failure.value if first.load_failure else "request too large"
            print(f"{label:<{w}} {first.max_total_num_tokens:>9} {'':>6} load fails: {reason}")
            continue
        preds = [predict(cfg, c, opts.input_len, opts.output_len, profile) for c in levels]
        best = max(preds, key=lambda p: p.aggregate_tok_s)
        cells = " ".join(f"{p.aggregate_tok_s:>8.0f}" for p in preds)
        print(
            f"{label:<{w}} {first.max_total_num_tokens:>9} {first.accept_length:>6.2f} {cells}"
            f"   {best.aggregate_tok_s:,.0f} @ c={best.concurrency}; single "
            f"{preds[0].per_request_tok_s:.0f} tok/s"
        )
    return 0


def _read(path: str) -> str | None:
    """A file a flag names (SGLang's adaptive config), as the simulated server reads it."""
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read(1 << 20)
    except (OSError, UnicodeDecodeError):
        return None


def _with_schedule(
    configs: list[tuple[str, Any]],
    levels: tuple[int, ...],
    input_len: int,
    output_len: int,
    profile: Any,
) -> list[tuple[str, Any]]:
    """The sweep, no speculation, and the schedule the predicted per-level bests make (the
    derivation a ``strategy = "per_level"`` sweep runs: ``core.search.per_level``) — or the
    engine's refusal, as a line."""
    from specconsole.core.config.issues import Issue
    from specconsole.core.engine.registry import engine_for
    from specconsole.core.measure.trials import LevelSummary, TrialRecord, TrialStatus
    from specconsole.core.plans.objective import DEFAULT_GOAL
    from specconsole.core.search.per_level import best_picks, schedule_for
    from specconsole.present.labels import schedule_text
    from specconsole.sim.forecast import predict

    base = configs[0][1]
    rows = [*configs, ("none", engine_for(base).without_speculation(base))]
    trials = []
    for index, (_label, config) in enumerate(rows):
        preds = [predict(config, c, input_len, output_len, profile) for c in levels]
        if not all(p.ok for p in preds):
            continue
        measured = tuple(
            LevelSummary(p.concurrency, p.aggregate_tok_s, p.per_request_tok_s, 1) for p in preds
        )
        trials.append(TrialRecord(index, config, status=TrialStatus.OK, levels=measured))
    got = schedule_for(base, best_picks(trials, DEFAULT_GOAL))
    if got is None or isinstance(got, Issue):
        why = "nothing measured" if got is None else f"{got.field}: {got.message} {got.fix}"
        return [*rows, ("schedule", f"not derived: {why}")]
    return [*rows, (schedule_text(got) or "schedule", got)]
