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
from typing import Any


def register(subparsers: Any) -> None:
    """Add the ``sim`` subcommand."""
    parser = subparsers.add_parser(
        "sim",
        help="run the simulated SGLang GPU box (or 'sim predict' for the model's numbers)",
        description=(
            "Run the simulated SGLang server with SGLang's flags (see docs/simulator.md), or "
            "'specconsole sim predict [--calibration] [--ladder 1,4,16] [SGLang flags]' to "
            "print the performance model's predictions."
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
    from specconsole.sim.process import main

    return main(rest)


def _predict(argv: list[str]) -> int:
    from specconsole.commands.bounded import bench_number, ladder
    from specconsole.sim.args import SimArgError
    from specconsole.sim.facetable import DEFAULT_FACE, select_face
    from specconsole.sim.model import (
        CALIBRATION_LADDER,
        DEFAULT_INPUT_LEN,
        DEFAULT_OUTPUT_LEN,
        predict,
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
    try:
        opts, flags = ap.parse_known_args(argv)
    except SystemExit as exc:  # argparse said why (a bad --ladder, --help): its exit code
        return int(exc.code or 0)
    levels: tuple[int, ...] = opts.ladder
    try:
        face, words = select_face(flags)
        if opts.calibration and not words and face.engine != DEFAULT_FACE:
            words = face.words(face.calibration(load_profile(face.default_profile()), 1))
        parsed = face.parse(words)
        profile = load_profile(parsed.values.get("sim_profile") or face.default_profile())
    except (SimArgError, ProfileError, ValueError) as exc:
        print(exc)
        return 2
    if opts.calibration:
        configs = [
            (f"{face.steps_word} {s}", face.calibration(profile, s))
            for s in range(1, face.calibration_steps + 1)
        ]
    else:
        try:
            configs = [("config", face.resolve(parsed, face.with_release(parsed, profile)))]
        except SimArgError as exc:
            print(f"{exc.exception_type}: {exc}")
            return 2
    print(f"profile {profile.source}; input {opts.input_len}, output {opts.output_len} tokens")
    print(
        f"{'':<9} {'capacity':>9} {'accept':>6} "
        + " ".join(f"{'c=' + str(c):>8}" for c in levels)
        + "   peak"
    )
    for label, cfg in configs:
        first = predict(cfg, levels[0], opts.input_len, opts.output_len, profile)
        if not first.ok:
            reason = first.load_failure.value if first.load_failure else "request too large"
            print(f"{label:<9} {first.max_total_num_tokens:>9} {'':>6} load fails: {reason}")
            continue
        preds = [predict(cfg, c, opts.input_len, opts.output_len, profile) for c in levels]
        best = max(preds, key=lambda p: p.aggregate_tok_s)
        cells = " ".join(f"{p.aggregate_tok_s:>8.0f}" for p in preds)
        print(
            f"{label:<9} {first.max_total_num_tokens:>9} {first.accept_length:>6.2f} {cells}"
            f"   {best.aggregate_tok_s:,.0f} @ c={best.concurrency}; single "
            f"{preds[0].per_request_tok_s:.0f} tok/s"
        )
    return 0
