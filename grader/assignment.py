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
from grader.settings import Settings


class AssignmentNotFound(LookupError):
    """There is no grading suite for the requested assignment."""


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
            known = sorted(p.parent.name for p in (root / "tests").glob("*/rubric.toml"))
            raise AssignmentNotFound(f"no assignment {name!r} (known: {', '.join(known) or 'none'})")
        return assignment

    @functools.cached_property
    def rubric(self) -> rubrics.Rubric:
        """The suite's rubric (read once)."""
        return rubrics.load(self.suite, self.name)
