# One entry point per task. Each target creates the environment on a fresh machine.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# What a fresh clone installs is exactly what was tested: every dependency, the build tools and pip
# itself at a locked version with its hashes. `make lock` moves the locks on purpose.
LOCK := requirements.lock
DEV_LOCK := requirements-dev.lock
UV := uv==0.13.9
COMPILE := uv pip compile pyproject.toml - --generate-hashes --universal --python-version 3.11 \
	--no-header --quiet

.PHONY: demo test test-deploy check bench docs clean system-deps lock

$(STAMP): pyproject.toml $(DEV_LOCK)
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --require-hashes --no-deps -r $(DEV_LOCK)
	$(BIN)/python -m pip install --quiet --no-deps --no-build-isolation -e .
	touch $(STAMP)

# The runtime lock (the images) and the development lock (runtime versions plus the tools).
lock: $(STAMP)
	$(BIN)/python -m pip install --quiet '$(UV)'
	printf 'setuptools\nwheel\npip\n' | $(BIN)/$(COMPILE) --upgrade -o $(LOCK)
	printf 'setuptools\nwheel\npip\n' | $(BIN)/$(COMPILE) --upgrade --extra dev -c $(LOCK) -o $(DEV_LOCK)
	$(BIN)/python -m pip uninstall --quiet --yes uv

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
