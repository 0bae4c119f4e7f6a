# One entry point per job. `make run` is the README's first command (the dashboard with a live
# demo); `make test` is its second, and what CI runs (.ci/run).
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
HOST ?= 127.0.0.1
PORT ?= 8000
KAFKA_PORT ?= 9092

.PHONY: run test install packages system venv lint typecheck jstest pytest pytest-postgres pytest-passes bench clean

## Debian packages (redis-server, chromium, PostgreSQL, Node.js if absent): installed once, as root, by
## the project's own script.
system:
	scripts/install-system-packages.sh

## The virtualenv: pip installs uv (its pin is in requirements-dev.txt), and uv the requirements:
## into a new virtualenv with no cache, pip took 89 s and uv 39 s (2026-11-29; README has make
## install's figures). uv compiles the packages to bytecode as it installs them, as pip does and
## uv does not by default: where PYTHONDONTWRITEBYTECODE is set, as on this kind of machine, each
## of the hundreds of processes the tests start would otherwise compile Django, Celery, Twisted
## and the rest from source as it imports them (docs/operations.md, "Tests").
$(STAMP): requirements.txt requirements-dev.txt
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check "$$(grep -x 'uv==[0-9.]*' requirements-dev.txt)"
	$(VENV)/bin/uv pip install --quiet --native-tls --compile-bytecode --python $(PY) -r requirements-dev.txt
	touch $(STAMP)

venv: $(STAMP)

## The Spark driver's class-data archive (spark_tasks/tuning.py, "Start-up"): made once per
## install, after the Java runtime (system) and PySpark ($(STAMP)); a report starts without it.
SPARK_ARCHIVE := $(VENV)/spark-classes.jsa
$(SPARK_ARCHIVE): $(STAMP) | system
	scripts/spark-class-archive.sh $(SPARK_ARCHIVE)

## Front-end libraries from the npm registry, exactly as package-lock.json pins them.
NODE_STAMP := node_modules/.installed
$(NODE_STAMP): package.json package-lock.json | $(if $(shell command -v npm),,system)
	npm ci --no-audit --no-fund --loglevel=error
	touch $(NODE_STAMP)

## What a fresh machine needs, the independent installs side by side: the Debian packages, the
## virtualenv and the front-end libraries download and unpack at the same time (npm waits for
## the Debian packages only on a machine without npm), then the Spark class archive, which needs
## the Java runtime and PySpark. On a machine that has them all, each is a check.
packages:
	$(MAKE) --no-print-directory --jobs=3 system $(STAMP) $(NODE_STAMP)

install: packages
	$(MAKE) --no-print-directory $(SPARK_ARCHIVE)

## Everything, then the server with a live demo (Ctrl-C stops all it started).
run: install
	HOST=$(HOST) PORT=$(PORT) KAFKA_PORT=$(KAFKA_PORT) scripts/run.sh

## The whole suite: lint, strict type-check (the engine, the runtime, the transports, the
## simulation, the report runs and the Spark job), then every test, and beside them the tests
## that use Django's database again on PostgreSQL. The checks need no Spark: on a fresh machine
## they run while the archive is made (its JVM keeps one core of two busy; each target's output
## is shown whole as it ends).
test: packages
	$(MAKE) --no-print-directory --jobs=4 --output-sync=target $(SPARK_ARCHIVE) lint typecheck jstest
	$(MAKE) --no-print-directory pytest-passes

lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

typecheck: $(STAMP)
	$(VENV)/bin/mypy --strict coordinator_engine webapp/runtime webapp/transports webapp/simulation \
		webapp/analysis spark_tasks

## The dashboard's pure modules (static/dashboard/*.js) under Node's own test runner, a line per
## test (its default away from a terminal is TAP: some 600 lines for 98 tests).
jstest: $(NODE_STAMP)
	node --test --test-reporter=spec static/dashboard/tests/

## Two workers, one test file each at a time (pytest-xdist): most tests wait on their servers.
PYTEST_WORKERS := -n 2 --dist loadfile

pytest: $(STAMP) $(NODE_STAMP)
	$(PY) -m pytest $(PYTEST_WORKERS)

## Both passes side by side (scripts/test-passes.sh): the PostgreSQL pass, on one worker, fits in
## the SQLite pass's idle time, where most tests wait on their servers.
pytest-passes: $(STAMP) $(NODE_STAMP)
	scripts/test-passes.sh $(PY) --dist loadfile

## The tests marked `database` (tests/conftest.py: those that use Django's database, in-process
## or through a live server) on a throwaway PostgreSQL cluster (scripts/with-postgres.sh).
pytest-postgres: $(STAMP) $(NODE_STAMP)
	scripts/with-postgres.sh $(PY) -m pytest $(PYTEST_WORKERS) -m database

## Benchmarks (not tests): each prints a table and ends with one JSON line.
bench: $(STAMP)
	$(PY) bench/engine.py
	$(PY) bench/assignors.py
	$(PY) bench/server_assignors.py

clean:
	rm -rf $(VENV) node_modules .mypy_cache .pytest_cache .ruff_cache .hypothesis
