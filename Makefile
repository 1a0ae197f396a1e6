# Two commands a new machine needs: `make demo` and `make test`; `make check` is the quick tier (under a minute).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
DEMO_LOG := fixtures/logs/sglang/eagle3-tp8-warmup-health-503.log

.PHONY: demo test check lint typecheck bench accuracy install install-test clean

$(BIN)/logphase: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e .
	touch $@

$(VENV)/.test-deps: $(BIN)/logphase
	$(BIN)/pip install --quiet -e '.[test]'
	touch $@

install: $(BIN)/logphase

install-test: $(VENV)/.test-deps

demo: install
	@echo "$$ logphase analyze --post-mortem $(DEMO_LOG)"
	@$(BIN)/logphase analyze --post-mortem $(DEMO_LOG); \
	  echo "(exit code $$?: 0 ready, 4 stalled/crashed/aborted/timeout, 5 still starting, 6 unknown)"

# Every test: the quick ones, and those marked `slow` (the sampled equivalence harness, generated logs of
# a MB, hostile inputs in child processes) or `live` (real processes under py-spy).
test: install-test
	$(BIN)/ruff check logphase tests bench
	$(BIN)/mypy
	$(BIN)/python -m pytest -q

# The quick tier: unit, golden, CLI and layering tests; a test is quick unless marked slow or live
# (tests/conftest.py names an unmarked one that took over 2 s).
check: install-test
	$(BIN)/ruff check logphase tests bench
	$(BIN)/mypy
	$(BIN)/python -m pytest -q -m "not slow and not live"

lint: install-test
	$(BIN)/ruff check logphase tests bench
	$(BIN)/ruff format --check logphase tests bench

typecheck: install-test
	$(BIN)/mypy

bench: install-test
	$(BIN)/python -m bench

# logphase against the labelled real-world logs, per batch (ACCURACY.md); CASES="a.toml b.toml" to pick
accuracy: install-test
	$(BIN)/python -m bench.accuracy $(CASES)

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .mypy_cache .ruff_cache
