"""Does ``specconsole bench`` read the same numbers as bench_serving, and as the model says?

Why: a tuner is only as good as its measurements. Against one simulator process (a real
HTTP server on loopback, its default throttled timing model), at c = 1, 16 and 64, this runs
back to back, per level:

1. ``specconsole bench URL --json --ladder c --dataset sharegpt:FILE`` (the real CLI, a
   child process);
2. the reference client (benchmarks/reference_client.py: bench_serving's request loop on
   aiohttp, a new session per request) with the very same prompts (same file, same seed);
3. the same reference loop on one keep-alive session — specconsole bench keeps its
   connections open, bench_serving connects per request, and this third column shows which
   part of a TTFT difference is that connect rather than the client;

and prints, for every metric both report, the two values and their % difference, then each
against the simulator's own prediction (``specconsole.sim.physics.model.predict`` for the same
launch, c, mean prompt length and output length). Targets (from issue 14): output and
request throughput within 1 %, TTFT/TPOT/ITL medians within 3 % of the reference; the
verdicts are printed against both reference columns.

The ShareGPT-format file is generated at run time from sentences written for this project
(chat-kind text only — :func:`specconsole.sim.physics.textkind.classify` is checked on every prompt
—
so ``predict``'s chat acceptance applies); entries have varied lengths.

One run of a level is not enough to judge a 3 % target on a median TTFT at c = 64 (it moves
±5 % between identical runs: where a request lands in the simulator's decode-step cycle), so
each level runs ``--rounds`` (default 3) rounds, each client once per round in a rotating
order, and the table compares the means over the rounds with a noise column (the largest
round-to-round standard deviation of that metric). Last, each client's own TTFT floor: c = 1
against the unthrottled simulator with 8-token outputs, so what the clients add before the
first token is printed by itself.

Which part of a TTFT difference is the client's? The simulator runs with ``--enable-metrics``
and keeps SGLang's ``sglang:time_to_first_token_seconds`` histogram, timed by the server
from each request's arrival; the ``_sum`` / ``_count`` difference across one client's run
gives the server's mean TTFT for exactly the requests that client sent (no client runs a
warm-up here, so the server counts nothing else). Two rows per level follow from it:
``server_mean_ttft_ms`` (what the server did: when clients send their requests differently —
all at once, or spread by a per-request connect — the server batches their prefills
differently and really answers them sooner or later) and ``http_path_ttft_ms`` (the
client's mean TTFT less the server's: the HTTP path both ways — the request's send, the
server's writing of the first chunk, loopback and the client's read — the part of TTFT that
is not the scheduler's; the server's share of it is the same for every client at one c, so
the differences between the clients in this row are theirs).

Run: ``.venv/bin/python benchmarks/fidelity.py`` (about seven minutes; ``--api chat`` for the
OpenAI chat endpoint, ``--scale 0.5`` for fewer requests, ``--rounds 1`` for one pass).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import statistics
import subprocess
import sys
import tempfile
import urllib.request
from collections import Counter
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
    return max(8, int({1: 24, 16: 128, 64: 192}.get(c, 4 * c) * scale))


def run_specconsole(
    url: str, api: str, dataset: str, c: int, n: int, output_len: int = OUTPUT_LEN
) -> dict[str, Any]:
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
        "0",
        "--dataset",
        dataset,
        "--output-len",
        str(output_len),
        "--seed",
        str(SEED),
    ]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=900, check=False)
    if done.returncode != 0:
        raise SystemExit(f"specconsole bench failed ({done.returncode}): {done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def run_reference(
    url: str,
    api: str,
    dataset: str,
    c: int,
    n: int,
    output_len: int = OUTPUT_LEN,
    *,
    keepalive: bool = False,
) -> dict[str, float]:
    """The reference client on the same prompts: bench_serving's loop (a new session per
    request) or, with ``keepalive``, the same loop on one keep-alive session."""
    import aiohttp
    from benchmarks.reference_client import metrics, run_level

    from specconsole.bench.workload.datasets import load_dataset

    pool, _ = load_dataset(
        dataset, n, input_len=256, output_len=output_len, range_ratio=1.0, seed=SEED
    )
    prompts = [(p.text, p.output_len or output_len) for p in pool]

    async def go() -> tuple[list[Any], float]:
        if not keepalive:
            return await run_level(url, api, prompts, c, warmup=False)
        async with aiohttp.ClientSession() as session:
            return await run_level(url, api, prompts, c, warmup=False, session=session)

    outputs, duration = asyncio.run(go())
    return metrics(outputs, duration)


def predicted(flags: tuple[str, ...], c: int, input_len: int) -> dict[str, float]:
    from specconsole.sim.faces.sglang.args import parse_argv
    from specconsole.sim.faces.sglang.resolve import resolve
    from specconsole.sim.forecast import predict
    from specconsole.sim.physics.textkind import TextKind
    from specconsole.sim.profile import default_profile_path, load_profile

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
    ("server_mean_ttft_ms", None),
    ("http_path_ttft_ms", None),
)
"""Every metric both clients report, with its target |Δ%| against the reference (or none)."""


def _pct(a: float, b: float) -> float:
    return (a - b) / b * 100 if b else float("nan")


VERDICTS = ("met", "within noise", "missed")
"""How a targeted metric fared: within its target; outside it but by no more than twice the
round-to-round noise (this many rounds cannot tell); or outside both."""


def _verdict(diff: float, target: float | None, noise: float) -> tuple[str, str | None]:
    """The table cell and the verdict (None for a metric without a target)."""
    if target is None:
        return "", None
    if abs(diff) <= target:
        return f"≤{target:g}%", "met"
    if abs(diff) <= 2 * noise:
        return f"~{target:g}%", "within noise"
    return f">{target:g}%", "missed"


CLIENTS = ("specconsole", "reference", "keep-alive")
"""The three clients, in the order of the first round (later rounds rotate it)."""


_TTFT_SERIES = "sglang:time_to_first_token_seconds"


def server_ttft(url: str) -> tuple[float, int]:
    """The server's own TTFT histogram (``_sum`` seconds, ``_count``) from ``/metrics``:
    measured by the server from each request's arrival, as SGLang's ``--enable-metrics``."""
    with urllib.request.urlopen(f"{url}/metrics", timeout=10) as resp:
        text = resp.read().decode()
    total, count = float("nan"), -1
    for line in text.splitlines():
        series, _, value = line.rpartition(" ")
        if series.startswith(f"{_TTFT_SERIES}_sum{{"):
            total = float(value)
        elif series.startswith(f"{_TTFT_SERIES}_count{{"):
            count = int(float(value))
    if count < 0:
        raise SystemExit(f"fidelity: {url}/metrics has no {_TTFT_SERIES} histogram")
    return total, count


def _run_client(
    client: str, url: str, api: str, dataset: str, c: int, n: int, output_len: int = OUTPUT_LEN
) -> dict[str, Any]:
    """One client's run of ``n`` requests at ``c`` (no warm-up, so the server's histogram
    counts exactly the requests measured), with the server's mean TTFT for them and the
    HTTP path: the client's mean TTFT less the server's."""
    sum0, count0 = server_ttft(url)
    if client == "specconsole":
        result = run_specconsole(url, api, dataset, c, n, output_len)
    else:
        result = run_reference(
            url, api, dataset, c, n, output_len, keepalive=client == "keep-alive"
        )
    sum1, count1 = server_ttft(url)
    sent = int(result["completed"]) + int(result["failed"])
    if count1 - count0 != sent:
        raise SystemExit(
            f"fidelity: the server saw {count1 - count0} first tokens for {client}'s "
            f"{sent} requests"
        )
    result["server_mean_ttft_ms"] = (sum1 - sum0) / max(1, count1 - count0) * 1000
    result["http_path_ttft_ms"] = float(result["mean_ttft_ms"]) - result["server_mean_ttft_ms"]
    return result


def _mean(rounds: list[dict[str, Any]], name: str) -> float:
    return statistics.fmean(float(r[name]) for r in rounds)


def _noise(runs: dict[str, list[dict[str, Any]]], name: str) -> float:
    """The largest round-to-round spread of one metric over the clients: the standard
    deviation of a client's per-round values in % of their mean (0 with one round)."""
    spreads = [0.0]
    for rounds in runs.values():
        values = [float(r[name]) for r in rounds]
        if len(values) > 1 and statistics.fmean(values):
            spreads.append(statistics.stdev(values) / statistics.fmean(values) * 100)
    return max(spreads)


def report(
    c: int,
    runs: dict[str, list[dict[str, Any]]],
    pred: dict[str, float],
    tally: dict[str, Counter[str]],
) -> None:
    """Print one level's table (each client's mean over the rounds) and count each targeted
    metric's verdict into ``tally`` per compared client: ``reference`` (bench_serving's loop)
    and ``keep-alive`` (the same loop on one keep-alive session)."""
    counts = ", ".join(
        f"{client} {sum(int(r['completed']) for r in rounds)} ok / "
        f"{sum(int(r['failed']) for r in rounds)} failed"
        for client, rounds in runs.items()
    )
    accept = _mean(runs["specconsole"], "accept_length")
    print(f"\n-- c={c}, {len(runs['specconsole'])} round(s): {counts}; accept length {accept:.2f}")
    print(
        f"{'metric':<22}{'specconsole':>12}{'reference':>11}{'Δ%':>8}{'target':>7}"
        f"{'keep-alive':>11}{'Δ%':>8}{'target':>7}{'noise%':>7}"
        f"{'predict':>10}{'ours Δ%':>8}{'ref Δ%':>8}"
    )
    for name, target in METRICS:
        a, b, k = (_mean(runs[client], name) for client in CLIENTS)
        diff, diff_keep, noise = _pct(a, b), _pct(a, k), _noise(runs, name)
        verdict, outcome = _verdict(diff, target, noise)
        verdict_keep, outcome_keep = _verdict(diff_keep, target, noise)
        for client, result in (("reference", outcome), ("keep-alive", outcome_keep)):
            if result is not None:
                tally[client][result] += 1
        p = pred.get(name)
        pcells = (
            f"{p:>10.2f}{_pct(a, p):>+8.1f}{_pct(b, p):>+8.1f}"
            if p is not None
            else f"{'-':>10}{'':>8}{'':>8}"
        )
        print(
            f"{name:<22}{a:>12.2f}{b:>11.2f}{diff:>+8.2f}{verdict:>7}"
            f"{k:>11.2f}{diff_keep:>+8.2f}{verdict_keep:>7}{noise:>7.1f}{pcells}"
        )


def client_floor(api: str, dataset: str) -> None:
    """Each client's own TTFT floor: c = 1 against the *unthrottled* simulator (no modelled
    prefill), short outputs — what is left is the client's request path plus the server's
    HTTP handling, so the differences between the clients here are theirs alone."""
    from tests.fixtures.sim import running_simulator

    n, output_len = 48, 8
    with running_simulator("--sim-unthrottled", "--enable-metrics") as sim:
        floors = {
            client: _run_client(client, sim.base_url, api, dataset, 1, n, output_len)
            for client in CLIENTS
        }
    cells = ", ".join(f"{client} {floors[client]['median_ttft_ms']:.2f} ms" for client in CLIENTS)
    ours = float(floors["specconsole"]["median_ttft_ms"])
    print(
        f"\nclient TTFT floor (unthrottled simulator, c=1, {n} requests of {output_len} tokens, "
        f"median): {cells}; the reference adds "
        f"{float(floors['reference']['median_ttft_ms']) - ours:+.2f} ms, the keep-alive "
        f"reference {float(floors['keep-alive']['median_ttft_ms']) - ours:+.2f} ms over "
        "specconsole bench"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--api", choices=("generate", "chat"), default="generate")
    parser.add_argument("--scale", type=float, default=1.0, help="request-count multiplier")
    parser.add_argument(
        "--rounds", type=int, default=3, help="alternating rounds per level (each client once)"
    )
    ns = parser.parse_args()

    from tests.fixtures.sim import DEFAULT_FLAGS, running_simulator

    from specconsole.sim.physics.textkind import TextKind, classify

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
            f"per level {ns.rounds} alternating round(s) of specconsole bench, the reference "
            "client (bench_serving's loop) and the same loop on a keep-alive session"
        )
        tally: dict[str, Counter[str]] = {"reference": Counter(), "keep-alive": Counter()}
        with running_simulator("--enable-metrics") as sim:
            for c in LADDER:
                n = _requests(c, ns.scale)
                runs: dict[str, list[dict[str, Any]]] = {client: [] for client in CLIENTS}
                for r in range(ns.rounds):
                    for client in CLIENTS[r % 3 :] + CLIENTS[: r % 3]:
                        runs[client].append(
                            _run_client(client, sim.base_url, ns.api, dataset, c, n)
                        )
                mean_in = round(
                    _mean(runs["specconsole"], "total_input_tokens")
                    / max(1.0, _mean(runs["specconsole"], "completed"))
                )
                report(c, runs, predicted(DEFAULT_FLAGS, c, mean_in), tally)
        client_floor(ns.api, dataset)
    print(
        "\nΔ% = (specconsole - client) / client on the means over the rounds; reference = "
        "bench_serving's loop (a new ClientSession, so a TCP connect, per request); keep-alive "
        "= the same loop on one session, as specconsole bench keeps its connections; noise% = "
        "the largest round-to-round standard deviation of the metric over the three clients; "
        "ours/ref Δ% = against predict (predict's ITL is its mean per-token gap, = TPOT); "
        "server_mean_ttft_ms = the server's own mean TTFT (sglang:time_to_first_token_seconds) "
        "for exactly the client's requests, http_path_ttft_ms = the client's mean TTFT less "
        "it; "
        "target cells: ≤ met, ~ outside the target by no more than twice the noise (more "
        "rounds needed to tell), > missed"
    )
    for client, counts in tally.items():
        print(
            f"targets against the {client} client: "
            + ", ".join(f"{counts[v]} {v}" for v in VERDICTS)
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
