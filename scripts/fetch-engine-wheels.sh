#!/bin/sh
# Fetch the real SGLang releases the oracle tests read (tests/oracle): `pip download --no-deps`
# of each release in ORACLE_SGLANG_VERSIONS into a cache OUTSIDE the repository
# (${SPECCONSOLE_WHEEL_CACHE:-~/.cache/specconsole/wheels}), and the vLLM source distributions
# of tests/oracle/vllm-versions.txt (scripts/fetch-vllm-sdists.py). Idempotent: a cached file
# is kept.
# Off-line it says so and exits 0; the oracle tests then skip (or fail under CI=true).
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
PY="${PYTHON:-$ROOT/.venv/bin/python}"
[ -x "$PY" ] || PY=python3
CACHE="${SPECCONSOLE_WHEEL_CACHE:-$HOME/.cache/specconsole/wheels}"
VERSIONS="${ORACLE_SGLANG_VERSIONS:-$(cat "$ROOT/tests/oracle/sglang-versions.txt")}"
mkdir -p "$CACHE"
status=0
for v in $VERSIONS; do
    if ls "$CACHE"/sglang-"$v"-*.whl >/dev/null 2>&1; then
        continue
    fi
    echo "fetch-engine-wheels: sglang==$v -> $CACHE"
    if ! "$PY" -m pip download --quiet --no-deps --only-binary=:all: --dest "$CACHE" "sglang==$v" 2>/dev/null; then
        echo "fetch-engine-wheels: could not download sglang==$v (off-line?); oracle tests will skip" >&2
        status=1
    fi
done
# vLLM: its source distributions, fetched by URL (pip would build their metadata with torch).
"$PY" "$ROOT/scripts/fetch-vllm-sdists.py" || status=1
[ "${CI:-}" = "true" ] && exit $status
exit 0
