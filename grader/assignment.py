"""One assignment, resolved once: its name and every folder the grader reads for it.

The commands turn the name the user typed into an :class:`Assignment` (or refuse it, naming
the assignments that exist) and pass that object on; no other module joins the name into a
path again.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path

from grader import rubric as rubrics
from grader.errors import CommandError
from grader.settings import Settings


class AssignmentNotFound(CommandError):
    """There is no such assignment (no suite to grade it with, or no solutions to release it from)."""

    def __init__(self, name: str, known: list[str]):
        """``name`` is none of the ``known`` assignments, which the message names."""
        super().__init__(f"no assignment {name!r} (known: {', '.join(sorted(known)) or 'none'})")


def suites_in(folder: Path) -> list[str]:
    """The assignments that have a suite (a rubric) in ``folder``: tests/ or public_tests/."""
    return [p.parent.name for p in folder.glob("*/rubric.toml")]


@dataclass(frozen=True)
class Assignment:
    """An assignment's name and folders (the instructor's repository, or a student's template)."""

    name: str
    # The grading suite: tests/<name>/, or the folder --suite names (a public suite, a fetched one).
    suite: Path
    # The reference solutions, solutions/<name>/ (absent in a student's template).
    solutions: Path
    # The public suite shipped to students, public_tests/<name>/.
    public_suite: Path
    # The files every release of every assignment starts from, template/.
    template: Path
    # The demo's sample submission: the solutions with typical mistakes, samples/<name>.toml.
    sample: Path

    @classmethod
    def at(cls, name: str, root: Path, suite: Path | None = None) -> Assignment:
        """The folders of ``name`` in the repository ``root``, whether they exist or not (``release``
        and ``stubs`` check what they need themselves)."""
        return cls(name=name, suite=suite or root / "tests" / name, solutions=root / "solutions" / name,
                   public_suite=root / "public_tests" / name, template=root / "template",
                   sample=root / "samples" / f"{name}.toml")

    @classmethod
    def resolve(cls, name: str, settings: Settings) -> Assignment:
        """The assignment ``name`` as ``settings`` place it, or AssignmentNotFound naming what exists."""
        root = settings.project_root
        assignment = cls.at(name, root, settings.suite_dir)
        if not (assignment.suite / "rubric.toml").is_file():
            raise AssignmentNotFound(name, suites_in(root / "tests"))
        return assignment

    @classmethod
    def public(cls, name: str, settings: Settings) -> Assignment:
        """The assignment ``name`` graded with its public suite (``check``), or AssignmentNotFound."""
        folders = settings.project_root / "public_tests"
        if not (folders / name / "rubric.toml").is_file():
            raise AssignmentNotFound(name, suites_in(folders))
        return cls.at(name, settings.project_root, folders / name)

    @functools.cached_property
    def rubric(self) -> rubrics.Rubric:
        """The suite's rubric (read once)."""
        return rubrics.load(self.suite, self.name)
