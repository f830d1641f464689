#!/usr/bin/env bash
# Runs the whole suite: lint, import-layering contracts, then pytest. Exits non-zero on any failure.
#
# pytest runs twice: every test not marked `serial` on two xdist workers (tests sharing one
# real component stay on one worker: tests/conftest.py), then the `serial` ones alone, so
# figures measured against a model never share the cores with a neighbour. Arguments go to
# both runs; SPECCONSOLE_TEST_WORKERS=0 runs everything in this one process instead.
set -euo pipefail
cd "$(dirname "$0")/.."
export PYTHONDONTWRITEBYTECODE=1
echo "== ruff" && .venv/bin/ruff check src tests benchmarks && .venv/bin/ruff format --check src tests benchmarks
echo "== import layering" && .venv/bin/lint-imports
workers="${SPECCONSOLE_TEST_WORKERS:-2}"
if [[ "$workers" == 0 ]]; then
    echo "== pytest"
    exec .venv/bin/python -m pytest -q "$@"
fi
status=0
echo "== pytest (parallel: $workers workers)"
.venv/bin/python -m pytest -q -n "$workers" --dist loadgroup -m "not serial" "$@" || status=$?
echo "== pytest (serial)"
.venv/bin/python -m pytest -q -m serial "$@" || { code=$?; [[ $code == 5 ]] || status=$code; }
exit "$status"
