# Two entry points, each doing all of its own set-up on a fresh machine:
#   make demo   grade the reference solutions and a bundled sample submission
#   make test   lint with ruff, then run the project's own tests (the grader, stubs, release, reports)
# and the fast tier while you work:
#   make check  lint, then only the tests that start no Python interpreter (under a minute)
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
# PyTorch's CPU index, so that pip takes torch 2.13.0+cpu, never PyPI's CUDA build (gigabytes on
# Linux); left out when its host cannot be reached (scripts/torch_index.py says why).
# Another index: make demo TORCH_INDEX=URL; none: make demo TORCH_INDEX=
TORCH_INDEX ?= https://download.pytorch.org/whl/cpu

$(VENV)/installed: requirements.txt grader/requirements.txt
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check $$($(PY) scripts/torch_index.py '$(TORCH_INDEX)') -r requirements.txt
	touch $@

.PHONY: demo test check bench
demo: $(VENV)/installed
	$(PY) -m grader demo

test: $(VENV)/installed
	$(VENV)/bin/ruff check .
	$(PY) -m pytest -n auto --dist loadfile --no-loadscope-reorder

check: $(VENV)/installed
	$(VENV)/bin/ruff check .
	PROJECT_TESTS_TIER=check $(PY) -m pytest -m "not end_to_end" -q

bench: $(VENV)/installed
	$(PY) scripts/benchmark.py
