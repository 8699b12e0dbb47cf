# Two entry points, each doing all of its own set-up on a fresh machine:
#   make demo   grade the reference solutions and a bundled sample submission
#   make test   lint with ruff, then run the project's own tests (the grader, stubs, release, reports)
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python

$(VENV)/installed: requirements.txt grader/requirements.txt
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -r requirements.txt
	touch $@

.PHONY: demo test bench
demo: $(VENV)/installed
	$(PY) -m grader demo

test: $(VENV)/installed
	$(VENV)/bin/ruff check .
	$(PY) -m pytest -n auto --dist loadfile

bench: $(VENV)/installed
	$(PY) scripts/benchmark.py
