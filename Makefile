# The two Quick start commands (see README.md) and a few helpers.
.PHONY: demo test lint bench snapshots-update

# Set up .venv and launch the console against the built-in simulated GPU box.
demo:
	@scripts/bootstrap.sh
	@.venv/bin/specconsole demo

# Set up everything (system test packages, .venv) and run the whole test suite.
test:
	@scripts/bootstrap.sh --system
	@scripts/run-tests.sh

lint:
	@.venv/bin/ruff check src tests benchmarks
	@.venv/bin/ruff format --check src tests benchmarks
	@.venv/bin/lint-imports

bench:
	@for f in benchmarks/*.py; do echo "== $$f"; .venv/bin/python $$f; done

snapshots-update:
	@.venv/bin/pytest tests -k snapshot --snapshot-update
