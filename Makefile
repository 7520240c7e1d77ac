# Two commands for a fresh machine (see README):
#   make run    set up .venv from the pinned lock file and run the main job (the default sweep)
#   make test   set up .venv (if needed) and run the test suite
PYTHON ?= python3
VENV   ?= .venv
BIN     = $(VENV)/bin

.PHONY: setup run test test-quick numbers bench clean

$(BIN)/evaluator: pyproject.toml requirements.lock
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -r requirements.lock
	$(BIN)/python -m pip install -q --no-deps -e .
	touch $(BIN)/evaluator

# the package's bytecode, compiled ahead (an editable install is not; with PYTHONDONTWRITEBYTECODE set, every
# run compiled the ~90 modules it imports again: 0.2-0.3 s of each command's start-up). Up to date: 0.06 s.
setup: $(BIN)/evaluator
	@cmp -s requirements-kahip.lock $(VENV)/kahip/.pins 2>/dev/null || { rm -rf $(VENV)/kahip && $(BIN)/python -m pip install -q --no-deps --target $(VENV)/kahip -r requirements-kahip.lock && cp requirements-kahip.lock $(VENV)/kahip/.pins; } || echo "note: KaHIP (requirements-kahip.lock) not installed into $(VENV)/kahip; its comparison tests will be skipped" >&2
	@$(BIN)/python -m compileall -q evaluator

run: setup
	$(BIN)/evaluator sweep

# pytest rewrites every test module's asserts before importing it, about 12 s of each worker's start for the ~270
# modules. With PYTHONDONTWRITEBYTECODE set (as on this project's machines) it could not keep the result, so every
# worker of every run did it again. The test targets let pytest keep it in tests/__pycache__ (git-ignored; pytest
# rewrites a module again when its source changes), filled by one collection before a run that finds it empty.
PYTEST = PYTHONDONTWRITEBYTECODE= $(BIN)/python -m pytest
KEEP_REWRITES = @test -d tests/__pycache__ || $(PYTEST) -q -p no:cacheprovider --collect-only > /dev/null 2>&1 || true

test: setup
	$(KEEP_REWRITES)
	$(PYTEST) -q -n 2 --dist loadgroup --durations=15

# the suite without its heavy groups (tests/conftest.py SLOW_GROUPS: Ray, the documents run, the claim tests, SMPI)
# and without the tests of tests/data/slow_tests.txt (half a second or more in a full run: tests/slow_tests.py)
test-quick: setup
	$(KEEP_REWRITES)
	$(PYTEST) -q -n 2 --dist loadgroup -m "not slow"

clean:
	rm -rf $(VENV) .pytest_cache tests/__pycache__

# the stated results of README.md and docs/ that no claim test reads and no timing marker covers (tests/stated_numbers.py)
numbers: setup
	@ledger=$$(mktemp); EVALUATOR_CLAIMS_LEDGER=$$ledger $(PYTEST) -q -n 2 --dist loadgroup \
	    $$( (ls tests/test_claims_*.py; grep -l "check_stated\|stated(" tests/test_*.py) | sort -u) >/dev/null; \
	    LIMIT=$${LIMIT:-1000} $(BIN)/python -m tests.stated_numbers $$ledger; rm -f $$ledger
