"""The book's printed values, read from the one file that holds them.

The public tests import ``book_values`` beside them; the hidden suites and the notebooks load the
same file through :func:`book_values`, so that a value is never written twice.
"""

from __future__ import annotations

import importlib.util
from types import ModuleType

from grader.assignment import Assignment
from grader.settings import Settings


def book_values(assignment: str, settings: Settings | None = None) -> ModuleType:
    """The book's printed values of ``assignment``: ``public_tests/<assignment>/book_values.py``,
    the one place that holds them (public tests, notebooks and hidden suites read it)."""
    path = Assignment.at(assignment, (settings or Settings()).project_root).public_suite / "book_values.py"
    spec = importlib.util.spec_from_file_location(f"book_values_{assignment}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
