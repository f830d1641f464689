#!/usr/bin/env bash
# Runs the whole suite: lint, import-layering contracts, then pytest. Exits non-zero on any failure.
set -euo pipefail
cd "$(dirname "$0")/.."
export PYTHONDONTWRITEBYTECODE=1
echo "== ruff" && .venv/bin/ruff check src tests benchmarks && .venv/bin/ruff format --check src tests benchmarks
echo "== import layering" && .venv/bin/lint-imports
echo "== pytest"
.venv/bin/python -m pytest -q "$@"
