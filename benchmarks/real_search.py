"""Search proven on a real engine: llama.cpp's speculative space measured once, then every
strategy replayed against it.

* ``measure`` — the ground truth (benchmarks/realsearch/grid.py): 60 points of
  llama-server's speculative space (3 draft files x 5 ``n_max`` x 4 ``p_min``) plus the
  references, each measured once per pass by the product's own loop on the real server of
  the test bed; kept in ``benchmarks/data/llamacpp-grid.jsonl`` with its conditions. Long and
  CPU-bound: in chunks under the suite lock, resumable.
* ``replay`` (the default) — benchmarks/realsearch/replay.py: every strategy's real code
  against the measured grid, each proposal answered by one of its measured runs, so the noise
  and pruning replay too; prints trials and benchmark seconds to within 2 % of the grid's
  best, median over the seeds, with and without pruning, side by side.
* ``live`` — one live ``optimize`` run with pruning on the real server, next to the replay of
  the same plan and seed.

Run, chunk by chunk until it exits 0 (exit 3: slices left; each chunk ≤ ``--minutes``)::

    /work/bin/fairlock .venv/bin/python benchmarks/real_search.py measure --minutes 18

then ``.venv/bin/python benchmarks/real_search.py [replay] [--seeds 5]`` (no server) and
``/work/bin/fairlock .venv/bin/python benchmarks/real_search.py live``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT))

from benchmarks.realsearch import grid  # noqa: E402
from tests.fixtures.llamacpp import find_build  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command")
    m = sub.add_parser("measure", help="measure the grid's missing slices (resumable)")
    m.add_argument("--passes", type=int, default=3)
    m.add_argument("--minutes", type=float, default=18.0, help="this chunk's budget")
    r = sub.add_parser("replay", help="replay every strategy against the measured grid")
    r.add_argument("--seeds", type=int, default=5)
    r.add_argument(
        "--partial", action="store_true", help="replay the complete drafts' sub-grid meanwhile"
    )
    live = sub.add_parser("live", help="one live optimize run with pruning on the real server")
    live.add_argument("--seed", type=int, default=0)
    live.add_argument("--again", action="store_true", help="run it again though one is kept")
    args = parser.parse_args(argv)
    if args.command == "measure":
        left = grid.measure(find_build(), args.passes, args.minutes)
        return 3 if left else 0
    from benchmarks.realsearch import replay

    if args.command == "live":
        return replay.live(find_build(), args.seed, args.again)
    return replay.main(seeds=getattr(args, "seeds", 5), partial=getattr(args, "partial", False))


if __name__ == "__main__":
    raise SystemExit(main())
