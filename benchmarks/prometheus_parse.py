"""Reading ``/metrics``: ``prometheus_client``'s parser (with specconsole's bounds on top)
beside the hand-written parser it replaced, on a vLLM-sized exposition.

Why it matters where it matters: during a level the counters are read every 0.5 s
(``bench.acceptance.SERIES_S``) on the box (remote runner) or on the console, next to a load
generator that must not be starved; a real vLLM serves 374 series (histograms with their
buckets, labelled ``engine`` and ``model_name``, with ``*_created`` samples) — read from the
real vLLM bed's recording (``tests/data/vllm/metrics-after.txt``) where it is there, else a
generated one of the same shape. The figure is
the CPU time of one read, and its share of one core at two reads a second.

The peer is the hand-written reader as it stood before issue 44 (kept here verbatim as the
reference; the product no longer has it). Both run in this one process, side by side.

Run: ``.venv/bin/python benchmarks/prometheus_parse.py [--reads 300]``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from specconsole.core.measure.prometheus import read_prometheus  # noqa: E402

LABELS = 'engine="0",model_name="meta-llama/Llama-3.1-8B-Instruct"'
BUCKETS = (0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0)


def vllm_like(series_goal: int = 374) -> str:
    """An exposition shaped like a real vLLM's (counters with ``_created``, gauges,
    histograms with ``le`` buckets), of about ``series_goal`` series."""
    lines: list[str] = []
    n = 0
    k = 0
    while n < series_goal:
        k += 1
        kind = ("counter", "gauge", "histogram")[k % 3]
        name = f"vllm:metric_{k}"
        lines.append(f"# HELP {name} Metric number {k}.")
        if kind == "counter":
            lines += [
                f"# TYPE {name}_total counter",
                f"{name}_total{{{LABELS}}} {k * 1234.0}",
                f"{name}_created{{{LABELS}}} 1.7650000e+09",
            ]
            n += 2
        elif kind == "gauge":
            lines += [f"# TYPE {name} gauge", f"{name}{{{LABELS}}} {k / 7:.6f}"]
            n += 1
        else:
            lines.append(f"# TYPE {name} histogram")
            for b in BUCKETS:
                lines.append(f'{name}_bucket{{{LABELS},le="{b}"}} {k * b * 100:.1f}')
            lines += [
                f'{name}_bucket{{{LABELS},le="+Inf"}} {k * 100.0}',
                f"{name}_count{{{LABELS}}} {k * 100.0}",
                f"{name}_sum{{{LABELS}}} {k * 3.25}",
                f"{name}_created{{{LABELS}}} 1.7650000e+09",
            ]
            n += len(BUCKETS) + 4
    for p in range(8):
        lines.append(
            f'vllm:spec_decode_num_accepted_tokens_per_pos_total{{{LABELS},position="{p}"}} '
            f"{1000 - p * 100}.0"
        )
    return "\n".join(lines) + "\n"


def _labels(text: str) -> tuple[tuple[str, str], ...]:
    pairs: list[tuple[str, str]] = []
    i, n = 0, len(text)
    while i < n:
        eq = text.find("=", i)
        if eq < 0:
            break
        name = text[i:eq].strip().lstrip(",").strip()
        j = text.find('"', eq) + 1
        if j <= 0:
            break
        value: list[str] = []
        while j < n and text[j] != '"':
            if text[j] == "\\" and j + 1 < n:
                j += 1
                value.append("\n" if text[j] == "n" else text[j])
            else:
                value.append(text[j])
            j += 1
        pairs.append((name, "".join(value)))
        i = j + 1
    return tuple(sorted(pairs))


def hand_written(text: str) -> dict:
    """The reader before issue 44 (lax: bad lines skipped, duplicates overwritten)."""
    samples: dict = {}
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line[0] == "#":
            continue
        brace = line.find("{")
        if brace >= 0:
            close = line.rfind("}")
            if close < brace:
                continue
            name, labels, rest = line[:brace], _labels(line[brace + 1 : close]), line[close + 1 :]
        else:
            name, _, rest = line.partition(" ")
            labels = ()
        words = rest.split()
        if not name or not words:
            continue
        try:
            value = float(words[0])
        except ValueError:
            continue
        samples.setdefault(name, {})[labels] = value
    return samples


def _cpu_per_read(read, text: str, reads: int) -> list[float]:
    read(text)  # warm (the first read imports prometheus_client)
    times = []
    for _ in range(reads):
        start = time.process_time()
        read(text)
        times.append(time.process_time() - start)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reads", type=int, default=300)
    args = parser.parse_args()
    real = ROOT / "tests" / "data" / "vllm" / "metrics-after.txt"
    text = real.read_text() if real.is_file() else vllm_like()
    print(f"exposition: {'the real vLLM bed' if real.is_file() else 'vLLM-shaped, generated'}")
    scrape = read_prometheus(text)
    assert scrape.trusted, scrape.problem
    series = sum(len(s) for s in scrape.samples.values())
    print(f"exposition: {series} series, {len(text):,} characters")
    names = [
        "vllm:spec_decode_num_drafts_total",
        "vllm:spec_decode_num_draft_tokens_total",
        "vllm:spec_decode_num_accepted_tokens_total",
        "vllm:spec_decode_num_accepted_tokens_per_pos_total",
        "vllm:generation_tokens_total",
    ]
    readers = (
        ("prometheus_client, every line", read_prometheus),
        ("prometheus_client, the counters", lambda t: read_prometheus(t, names)),
        ("hand-written, every line", hand_written),
    )
    rows = []
    for name, read in readers:
        times = _cpu_per_read(read, text, args.reads)
        median = statistics.median(times)
        rows.append((name, median))
        print(
            f"{name:32s} {median * 1e3:7.2f} ms CPU per read (p90 "
            f"{statistics.quantiles(times, n=10)[-1] * 1e3:.2f} ms); at 2 reads/s "
            f"{2 * median * 100:.2f} % of a core"
        )
    for name, median in rows[:2]:
        print(f"{name}: {median / rows[-1][1]:.2f} × the hand-written reader's time")


if __name__ == "__main__":
    main()
