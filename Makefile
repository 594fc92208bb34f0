# One entry point per task. Each target creates the environment on a fresh machine.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test test-deploy check bench docs clean system-deps

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/meshnav demo

system-deps:
	bash scripts/system-deps

test: $(STAMP) system-deps
	$(BIN)/python -m pytest -q -n 2 --dist loadgroup

# compose.yaml under a Docker engine that scripts/compose-engine installs, starts and takes down.
test-deploy: $(STAMP)
	$(BIN)/python -m pytest -q -m deploy tests/deploy

check: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

docs: $(STAMP)
	$(BIN)/meshnav docs

bench: $(STAMP) system-deps
	$(BIN)/python benchmarks/call_overhead.py
	$(BIN)/python benchmarks/search_quality.py
	$(BIN)/python benchmarks/search_scale.py
	$(BIN)/python benchmarks/registry_scale.py --tools 10000 --machines 100

clean:
	rm -rf $(VENV) .meshnav-demo .pytest_cache .mypy_cache .ruff_cache
