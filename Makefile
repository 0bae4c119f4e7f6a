# One entry point per job. `make test` is what CI runs (see .ci/run and README.md).
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: test lint typecheck pytest bench clean

$(STAMP): requirements.txt requirements-dev.txt
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements-dev.txt
	touch $(STAMP)

venv: $(STAMP)

## The whole suite: lint, strict type-check of the engine, then every test.
test: $(STAMP) lint typecheck pytest

lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

typecheck: $(STAMP)
	$(VENV)/bin/mypy --strict coordinator_engine

pytest: $(STAMP)
	$(PY) -m pytest

## Benchmarks (not tests): each prints a table and ends with one JSON line.
bench: $(STAMP)
	$(PY) bench/engine.py
	$(PY) bench/assignors.py

clean:
	rm -rf $(VENV) .mypy_cache .pytest_cache .ruff_cache .hypothesis
