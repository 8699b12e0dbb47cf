"""``check``: the public tests on a student's own machine, through the same engine as grading.

    python -m grader check [SUBMISSION] [--assignment A]

The suite is ``public_tests/<assignment>/`` beside the grader package (the same relative
place in the instructor repository and in a student's template); the submission defaults to
the current folder and the assignment to the one folder under ``exercises/``.
"""

from __future__ import annotations

from pathlib import Path

from grader import manifest
from grader.assignment import Assignment
from grader.dependencies import dependency_first
from grader.errors import CommandError
from grader.model import Report
from grader.settings import Settings

NOTE = "Only public tests ran. Hidden tests run on GitHub when you push; they decide your grade."
# Folders of a student's machine that are never part of a submission: flags there are noise.
LOCAL_FOLDERS = frozenset({".venv", "venv", "env", ".ipynb_checkpoints", "__pycache__", ".pytest_cache", ".tox", "node_modules"})


class NoAssignment(CommandError):
    """Which assignment to check cannot be told from the submission."""


def find_assignment(root: Path) -> str:
    """The assignment whose exercises are in ``root/exercises/`` (exactly one folder of .py files)."""
    folder = root / "exercises"
    found = sorted(p.name for p in folder.iterdir() if p.is_dir() and any(p.glob("*.py"))) if folder.is_dir() else []
    if not found:
        raise NoAssignment(f"no exercises/<assignment>/ folder with Python files in {root}")
    if len(found) > 1:
        raise NoAssignment(f"several assignments in {folder} ({', '.join(found)}): choose one with --assignment")
    return found[0]


def unchanged_template_files(root: Path) -> frozenset[str]:
    """Paths listed in ``root``'s template manifest whose content is still the template's."""
    return manifest.unchanged(root, manifest.read(root))


def local_noise(flag: str) -> bool:
    """A flag about a virtual environment, a cache, or the scan's own file limit."""
    first = flag.split(" ", 1)[0].split("/", 1)[0]
    return first in LOCAL_FOLDERS or flag.startswith("more than ")


def check(root: Path, public: Assignment, settings: Settings, sandbox) -> Report:
    """Grade ``root`` with the public suite of an assignment (:meth:`Assignment.public`)."""
    from grader.grade import grade

    report = grade(root, public, settings, sandbox, known=unchanged_template_files(root))
    report.flags = [flag for flag in report.flags if not local_noise(flag)]
    # The public suite checks a module with the student's own dependency (no reference ships).
    dependency_first(report, {e.name: e.builds_on for e in public.rubric.exercises if e.builds_on})
    return report
