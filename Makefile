# Set-up and everyday commands. Everything installs into .venv; nothing is needed beforehand but
# Python >= 3.10 with venv. `make run` and `make test` are the README's two commands.
PY ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: setup run test test-fm test-fast lint tools answers clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	# CPU torch first (a plain `torch` would pull a multi-GB CUDA build); keep a torch already there,
	# so GPU users can install their CUDA build into $(VENV) beforehand.
	# Byte-compiled at install (pip's default): where PYTHONDONTWRITEBYTECODE is set, nothing is compiled
	# later, and every process (each Ray worker) would compile ray and torch again at import.
	$(BIN)/python -c "import torch" 2>/dev/null || $(BIN)/python -m pip install -q torch==2.13.0
	$(BIN)/python -m pip install -q -e '.[test]'
	touch $(STAMP)

setup: $(STAMP)

run: setup
	$(BIN)/attnbench run

# Debian's chromium (browser tests) and tmux (Ctrl-C typed into a real terminal), installed when root.
tools:
	@missing=""; for t in chromium tmux; do command -v $$t >/dev/null 2>&1 || missing="$$missing $$t"; done; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ]; then apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; \
	  else echo "missing:$$missing — install these Debian packages for the browser and terminal tests"; fi; fi

# Three workers on the CI machine's two cores, each taking a whole test module at a time, longest first
# (tests/conftest.py): much of a test is waiting (on a Ray start, a subprocess, a port), which a third
# worker fills. Measured on 2 cores, one session: 501 s with two workers, 470 s with three. A fourth gains
# little: 718 s against 758 s with three (2026-11-29, a fresh clone), the CPU 99% busy through its run.
test: setup tools lint
	$(BIN)/python -m pytest -n 3 --dist loadfile --no-loadscope-reorder

# The in-context models' tests (TabICL, TabPFN v2: the optional extra `fm`), in a virtual environment of
# their own, so that the extra's models are not registered in the one `make test` uses (CI leaves them out).
test-fm:
	$(MAKE) VENV=.venv-fm setup
	.venv-fm/bin/python -m pip install -q -e '.[fm,test]'
	.venv-fm/bin/python -m pytest tests/test_in_context.py

test-fast: setup
	$(BIN)/python -m pytest -m "not slow"

# The shipped results printed into README.md and docs/ again (tools/print_answers.py), after a reference grows.
answers: setup
	$(BIN)/python tools/print_answers.py

lint: setup
	$(BIN)/ruff check pipeline tests benchmarks examples tools
	$(BIN)/mypy

clean:
	rm -rf $(VENV) .venv-fm results.duckdb reports/*.html
