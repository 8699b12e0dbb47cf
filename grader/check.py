"""``check``: the public tests on a student's own machine, through the same engine as grading.

    python -m grader check [SUBMISSION] [--assignment A]

The suite is ``public_tests/<assignment>/`` beside the grader package (the same relative
place in the instructor repository and in a student's template); the submission defaults to
the current folder and the assignment to the one folder under ``exercises/``.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from grader import manifest
from grader.dependencies import dependency_first
from grader.model import Report
from grader.settings import Settings

NOTE = "Only public tests ran. Hidden tests run on GitHub when you push; they decide your grade."
PUBLIC = "public_tests"
# Folders of a student's machine that are never part of a submission: flags there are noise.
LOCAL_FOLDERS = frozenset({".venv", "venv", "env", ".ipynb_checkpoints", "__pycache__", ".pytest_cache", ".tox", "node_modules"})


class NoAssignment(LookupError):
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


def public_suite(settings: Settings, assignment: str) -> Path:
    """The folder of the public tests of ``assignment``."""
    return settings.project_root / PUBLIC / assignment


def unchanged_template_files(root: Path) -> frozenset[str]:
    """Paths listed in ``root``'s template manifest whose content is still the template's."""
    return manifest.unchanged(root, manifest.read(root))


def local_noise(flag: str) -> bool:
    """A flag about a virtual environment, a cache, or the scan's own file limit."""
    first = flag.split(" ", 1)[0].split("/", 1)[0]
    return first in LOCAL_FOLDERS or flag.startswith("more than ")


def existing_public_suite(settings: Settings, assignment: str) -> Path:
    """The folder of the public tests of ``assignment``; AssignmentNotFound, naming the known ones, without it."""
    from grader.assignment import AssignmentNotFound

    suite = public_suite(settings, assignment)
    if not (suite / "rubric.toml").is_file():
        known = sorted(p.parent.name for p in (settings.project_root / PUBLIC).glob("*/rubric.toml"))
        raise AssignmentNotFound(f"no public tests for {assignment!r} (known: {', '.join(known) or 'none'})")
    return suite


def check(root: Path, assignment: str, settings: Settings, sandbox) -> Report:
    """Grade ``root`` with the public tests of ``assignment``; raises AssignmentNotFound without them."""
    from grader.assignment import Assignment
    from grader.grade import grade

    settings = dataclasses.replace(settings, suite_dir=existing_public_suite(settings, assignment))
    public = Assignment.resolve(assignment, settings)
    report = grade(root, public, settings, sandbox, known=unchanged_template_files(root))
    report.flags = [flag for flag in report.flags if not local_noise(flag)]
    # The public suite checks a module with the student's own dependency (no reference ships).
    dependency_first(report, {e.name: e.builds_on for e in public.rubric.exercises if e.builds_on})
    return report
