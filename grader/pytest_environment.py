"""The environment every pytest run inside the grader gets: its own, not the shell's.

pytest reads options added to every run (``PYTEST_ADDOPTS``), plugins to load by name
(``PYTEST_PLUGINS``) and whether installed plugins load themselves from the environment. A grade
must not depend on the shell it runs in: an instructor's ``PYTEST_ADDOPTS="-x"`` stopped the
hidden suite at its first failure (grader errors in every report), and ``-k`` left checks out.
"""

from __future__ import annotations

import contextlib
import os

GRADERS = {"PYTEST_ADDOPTS": None, "PYTEST_PLUGINS": None, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}


@contextlib.contextmanager
def graders_own():
    """:data:`GRADERS` in ``os.environ`` (None: unset) while the block runs, then the caller's back."""
    before = {name: os.environ.get(name) for name in GRADERS}
    try:
        for name, value in GRADERS.items():
            _set(name, value)
        yield
    finally:
        for name, value in before.items():
            _set(name, value)


def _set(name: str, value: str | None) -> None:
    if value is None:
        os.environ.pop(name, None)
    else:
        os.environ[name] = value
