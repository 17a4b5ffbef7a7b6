# The two commands a newcomer needs: `make repro` (set up + run the pipeline on the built-in
# defaults) and `make test` (set up + run the tests). Everything runs inside ./.venv.
SHELL := /bin/bash
VENV := .venv/bin

.PHONY: setup setup-dev repro test lint format bench

setup:
	bash scripts/setup.sh

setup-dev:
	bash scripts/setup.sh --dev

repro: setup
	source $(VENV)/activate && dvc repro

test: setup-dev
	source $(VENV)/activate && python -m pytest

lint:
	$(VENV)/ruff format --check . && $(VENV)/ruff check .

format:
	$(VENV)/ruff format . && $(VENV)/ruff check --fix .

bench:
	source $(VENV)/activate && for b in perf/*.py; do echo "== $$b"; python $$b; done
