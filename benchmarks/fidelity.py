"""Does ``specconsole bench`` read the same numbers as bench_serving, and as the model says?

Why: a tuner is only as good as its measurements. Against one simulator process (a real
HTTP server on loopback, its default throttled timing model), at c = 1, 16 and 64, this runs
back to back, per level:

1. ``specconsole bench URL --json --ladder c --dataset sharegpt:FILE`` (the real CLI, a
   child process);
2. the reference client (benchmarks/reference_client.py: bench_serving's request loop on
   aiohttp) with the very same prompts (same file, same seed);

and prints, for every metric both report, the two values and their % difference, then each
against the simulator's own prediction (``specconsole.sim.model.predict`` for the same
launch, c, mean prompt length and output length). Targets (from issue 14): output and
request throughput within 1 %, TTFT/TPOT/ITL medians within 3 % of the reference.

The ShareGPT-format file is generated at run time from sentences written for this project
(chat-kind text only — :func:`specconsole.sim.textkind.classify` is checked on every prompt —
so ``predict``'s chat acceptance applies); entries have varied lengths.

Run: ``.venv/bin/python benchmarks/fidelity.py`` (about two minutes; ``--api chat`` for the
OpenAI chat endpoint, ``--scale 0.5`` for fewer requests).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

LADDER = (1, 16, 64)
OUTPUT_LEN = 128
SEED = 42
ENTRIES = 400

SENTENCES = (
    "I am planning a week of walking in the hills near the coast next spring.",
    "My sister keeps asking me which houseplants survive a dark north-facing room.",
    "We moved into an old flat and the radiators make a knocking noise at night.",
    "Could you explain why the sky looks orange at sunset but blue at noon?",
    "I have two weeks before an interview for a job in a hospital kitchen.",
    "Our football club wants to raise money for new goals without a big event.",
    "A friend told me that bread rises better in a warm room, is that true?",
    "I would like to learn to sail but I live a long way from the sea.",
    "What should a beginner know before buying a second-hand bicycle?",
    "My grandmother wants to start using a tablet to see photos of the family.",
    "Is it better to study in the morning or late in the evening?",
    "The neighbours have a dog that barks whenever we open the garden gate.",
    "How do people decide which charity gets the money from a school fair?",
    "I keep forgetting the names of people I meet at work events.",
    "We are choosing between a small car and a bus pass for the next year.",
    "Please tell me how tides work and why there are two each day.",
    "I want to write a kind note to a teacher who is leaving our school.",
    "Which questions should I ask a landlord before signing a lease?",
    "Our team argues about whether meetings should have a fixed end time.",
    "How can I keep tomatoes growing on a balcony that gets wind all day?",
    "I am nervous about giving a toast at my brother's wedding in June.",
    "What is a sensible way to split household chores among four flatmates?",
    "My son wants a pet rabbit and I wonder how much care it really needs.",
    "Why do some people get seasick on ferries while others feel fine?",
    "I would like ideas for a rainy afternoon with two children under six.",
    "Could you describe how a library decides which new books to buy?",
    "We are hosting a dinner for a friend who does not eat meat or fish.",
    "I find it hard to fall asleep after working late on a screen.",
    "How do I tell a colleague politely that their music is too loud?",
    "What makes a good first bird feeder for a small town garden?",
    "The village wants to restore its old clock tower and needs a plan.",
    "I am trying to decide whether to learn the piano or the guitar.",
    "Tell me what to pack for three nights of camping in early autumn.",
    "My parents are retiring and want to volunteer a few days each week.",
    "How should I prepare for my first long train journey across Europe?",
    "Our book club keeps choosing long novels that nobody finishes in time.",
    "I want to understand why bridges are built with those big arches.",
    "What is a friendly way to welcome a new family to our street?",
    "I am starting a vegetable patch and the soil seems heavy with clay.",
    "Can you help me think about how to save for a holiday next summer?",
)
QUESTIONS = (
    "What would you suggest?",
    "Where should I start?",
    "Please give me your advice in plain words.",
    "What are the things I should think about first?",
    "How would you go about it?",
)


def write_sharegpt(path: Path, entries: int = ENTRIES, seed: int = SEED) -> None:
    """A ShareGPT-format JSON array: each entry's first human turn is 1-6 of the sentences
    above in a seeded order plus a question; the gpt turn is a short reply."""
    rng = random.Random(seed)
    data = []
    for i in range(entries):
        parts = rng.sample(SENTENCES, rng.randint(1, 6))
        human = " ".join([*parts, rng.choice(QUESTIONS)])
        data.append(
            {
                "id": f"fidelity-{i}",
                "conversations": [
                    {"from": "human", "value": human},
                    {"from": "gpt", "value": "Here are a few ideas to start with."},
                ],
            }
        )
    path.write_text(json.dumps(data, indent=1), encoding="utf-8")


def _requests(c: int, scale: float) -> int:
    return max(8, int({1: 12, 16: 64, 64: 192}.get(c, 4 * c) * scale))


def run_specconsole(url: str, api: str, dataset: str, c: int, n: int) -> dict[str, Any]:
    argv = [
        str(Path(sys.executable).with_name("specconsole")),
        "bench",
        url,
        "--json",
        "--api",
        api,
        "--ladder",
        str(c),
        "--requests",
        str(n),
        "--warmup",
        "1",
        "--dataset",
        dataset,
        "--output-len",
        str(OUTPUT_LEN),
        "--seed",
        str(SEED),
    ]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=900, check=False)
    if done.returncode != 0:
        raise SystemExit(f"specconsole bench failed ({done.returncode}): {done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def run_reference(url: str, api: str, dataset: str, c: int, n: int) -> dict[str, float]:
    from benchmarks.reference_client import metrics, run_level

    from specconsole.bench.datasets import load_dataset

    pool, _ = load_dataset(
        dataset, n + c, input_len=256, output_len=OUTPUT_LEN, range_ratio=1.0, seed=SEED
    )
    prompts = [(p.text, p.output_len or OUTPUT_LEN) for p in pool]
    warm, measured = prompts[:c], prompts[c : c + n]

    async def go() -> tuple[list[Any], float]:
        await run_level(url, api, warm, c, warmup=False)
        return await run_level(url, api, measured, c, warmup=False)

    outputs, duration = asyncio.run(go())
    return metrics(outputs, duration)


def predicted(flags: tuple[str, ...], c: int, input_len: int) -> dict[str, float]:
    from specconsole.sim.args import parse_argv, resolve
    from specconsole.sim.model import predict
    from specconsole.sim.profile import default_profile_path, load_profile
    from specconsole.sim.textkind import TextKind

    profile = load_profile(default_profile_path())
    p = predict(
        resolve(parse_argv(list(flags)), profile),
        c,
        max(1, input_len),
        OUTPUT_LEN,
        profile,
        kind=TextKind.CHAT,
    )
    tpot = (p.e2e_latency_s - p.ttft_s) / (OUTPUT_LEN - 1) * 1000
    return {
        "output_throughput": p.aggregate_tok_s,
        "request_throughput": p.running / p.e2e_latency_s,
        "median_ttft_ms": p.ttft_s * 1000,
        "mean_ttft_ms": p.ttft_s * 1000,
        "median_tpot_ms": tpot,
        "mean_tpot_ms": tpot,
        "mean_itl_ms": tpot,
        "median_e2e_latency_ms": p.e2e_latency_s * 1000,
        "mean_e2e_latency_ms": p.e2e_latency_s * 1000,
        "concurrency": float(c),
    }


METRICS: tuple[tuple[str, float | None], ...] = (
    ("output_throughput", 1.0),
    ("request_throughput", 1.0),
    ("median_ttft_ms", 3.0),
    ("mean_ttft_ms", None),
    ("p99_ttft_ms", None),
    ("median_tpot_ms", 3.0),
    ("mean_tpot_ms", None),
    ("p99_tpot_ms", None),
    ("median_itl_ms", 3.0),
    ("mean_itl_ms", None),
    ("p99_itl_ms", None),
    ("median_e2e_latency_ms", None),
    ("mean_e2e_latency_ms", None),
    ("concurrency", None),
)
"""Every metric both clients report, with its target |Δ%| against the reference (or none)."""


def _pct(a: float, b: float) -> float:
    return (a - b) / b * 100 if b else float("nan")


def report(c: int, ours: dict[str, Any], ref: dict[str, float], pred: dict[str, float]) -> int:
    """Print one level's table; returns how many targets were missed."""
    print(
        f"\n-- c={c}: specconsole {ours['completed']} ok / {ours['failed']} failed, reference "
        f"{ref['completed']:.0f} ok / {ref['failed']:.0f} failed; accept length "
        f"{ours.get('accept_length') or 0:.2f}"
    )
    print(
        f"{'metric':<24}{'specconsole':>12}{'reference':>12}{'Δ%':>8}{'target':>8}"
        f"{'predict':>11}{'ours Δ%':>9}{'ref Δ%':>8}"
    )
    missed = 0
    for name, target in METRICS:
        a, b = float(ours[name]), float(ref[name])
        diff = _pct(a, b)
        verdict = ""
        if target is not None:
            ok = abs(diff) <= target
            missed += not ok
            verdict = f"{'≤' if ok else '>'}{target:g}%"
        p = pred.get(name)
        pcells = (
            f"{p:>11.2f}{_pct(a, p):>+9.1f}{_pct(b, p):>+8.1f}"
            if p is not None
            else f"{'-':>11}{'':>9}{'':>8}"
        )
        print(f"{name:<24}{a:>12.2f}{b:>12.2f}{diff:>+8.2f}{verdict:>8}{pcells}")
    return missed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--api", choices=("generate", "chat"), default="generate")
    parser.add_argument("--scale", type=float, default=1.0, help="request-count multiplier")
    ns = parser.parse_args()

    from tests.fixtures.sim import DEFAULT_FLAGS, running_simulator

    from specconsole.sim.textkind import TextKind, classify

    with tempfile.TemporaryDirectory(prefix="specconsole-fidelity-") as tmp:
        path = Path(tmp) / "sharegpt.json"
        write_sharegpt(path)
        entries = json.loads(path.read_text(encoding="utf-8"))
        kinds = {classify(e["conversations"][0]["value"]) for e in entries}
        if kinds != {TextKind.CHAT}:
            raise SystemExit(f"fidelity: the generated prompts classify as {sorted(kinds)}")
        dataset = f"sharegpt:{path}"
        print(
            f"fidelity: simulator (calibration launch, EAGLE-3 3/1/4), api {ns.api}, ShareGPT "
            f"file of {len(entries)} chat prompts, output {OUTPUT_LEN} tokens, seed {SEED}; "
            "per level specconsole bench then the reference client (bench_serving's loop)"
        )
        missed = 0
        with running_simulator() as sim:
            for c in LADDER:
                n = _requests(c, ns.scale)
                ours = run_specconsole(sim.base_url, ns.api, dataset, c, n)
                ref = run_reference(sim.base_url, ns.api, dataset, c, n)
                mean_in = round(ours["total_input_tokens"] / max(1, ours["completed"]))
                missed += report(c, ours, ref, predicted(DEFAULT_FLAGS, c, mean_in))
    print(
        "\nΔ% = (specconsole - reference) / reference; ours/ref Δ% = against predict "
        "(predict's ITL is its mean per-token gap, = TPOT)"
    )
    print(f"targets missed: {missed}" if missed else "all targets met")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
