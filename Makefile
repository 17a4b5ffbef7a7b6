# The two commands a newcomer needs: `make repro` (set up + run the pipeline on the built-in
# defaults) and `make test` (set up, type-check src/evalpipe with mypy, run the tests but the
# slow ones, in parallel: a few minutes). `make test-all` runs every test, the slow ones (vLLM, browsers, servers, long
# `dvc repro` runs) one at a time after the rest; CI runs it. Everything runs inside ./.venv.
SHELL := /bin/bash
VENV := .venv/bin

# One pytest-xdist worker per core; a test file stays on one worker, so its module fixtures
# (servers, engines) start once.
PYTEST := python -m pytest -n auto --dist loadfile

.PHONY: setup setup-dev setup-browser repro test test-all typecheck lint format bench lock

setup:
	bash scripts/setup.sh

setup-dev:
	bash scripts/setup.sh --dev

setup-browser:
	bash scripts/setup.sh --dev --browser

repro: setup
	source $(VENV)/activate && dvc repro

test: setup-dev
	source $(VENV)/activate && mypy && $(PYTEST) -m "not slow"

test-all: setup-browser
	source $(VENV)/activate && mypy && $(PYTEST) -m "not slow" && python -m pytest -m slow

# The type check alone (`make test` runs it first): mypy over src/evalpipe, set up in pyproject.toml.
typecheck: setup-dev
	source $(VENV)/activate && mypy

lint:
	$(VENV)/ruff format --check . && $(VENV)/ruff check .

format:
	$(VENV)/ruff format . && $(VENV)/ruff check --fix .

bench:
	source $(VENV)/activate && for b in perf/*.py; do echo "== $$b"; python $$b; done

# Refresh requirements/lock-cpu.txt (the versions setup.sh installs) from pyproject.toml's ranges.
lock:
	bash scripts/lock.sh
