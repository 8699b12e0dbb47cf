"""One student of a batch, as one record from their folder under ROOT to their row of the CSV.

``batch`` plans every student first (:func:`plan`: which folder or staged copy is graded, at
which commit, or why nothing is), then grades the ones whose earlier report cannot be reused,
and records each (:mod:`grader.batch.recording`) as their report arrives.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from pathlib import Path

from grader.assignment import Assignment
from grader.batch import deadline as deadlines
from grader.batch.resume import earlier_report, fingerprint
from grader.model import ExerciseResult, Report


@dataclass
class Student:
    """A student of the class: who, what is graded, and (once known) their report."""

    folder: Path  # their submission folder under ROOT; its name names their reports' folder
    name: str  # the student id: the login, or the folder's name
    # Where the grade comes from, the CSV's columns: folder, commit, committed_at, commits after the deadline.
    source: dict[str, str]
    graded: Path | None = None  # the folder graded: ``folder``, or its copy staged at the deadline's commit
    commit: str = ""  # the commit staged ("" when the work tree is graded as it is)
    fingerprint: str = ""  # what an earlier run's report must have been made from to be reused
    skip_reason: str = ""  # why nothing was graded (no work before the deadline, an unreadable repository)
    flags: list[str] = field(default_factory=list)  # what the staged commit's files raise
    report: Report | None = None
    reused: bool = False  # the report is an earlier run's, for the same fingerprint
    row: dict[str, str] = field(default_factory=dict)  # their CSV row, made once the report is known
    feedback: Path | None = None  # their FEEDBACK.md, written once the report is known

    @property
    def skipped(self) -> bool:
        """Not graded at all."""
        return bool(self.skip_reason)


def not_graded(rubric, why: str) -> Report:
    """The report of a submission that was not graded at all (score 0, every exercise saying why)."""
    exercises = [ExerciseResult(e.name, 0.0, e.max_score, message=why) for e in rubric.exercises]
    return Report(rubric.assignment, 0.0, sum(e.max_score for e in exercises), exercises, flags=[f"not graded: {why}"])


@dataclass
class Deadline:
    """What grading at a deadline needs: the time, the template's files, and where to stage commits."""

    due: dt.datetime
    template: dict[str, str]  # the stubs and the template's files: a commit holding only these has no work
    compare_with: dict[str, str] | None  # the released template's hashes (flags changed workflows and tests)
    staging: Path


def plan(folders: list[Path], names: dict[str, str], assignment: Assignment, at: Deadline | None) -> list[Student]:
    """A record per folder: the folder itself graded, or (``at`` a deadline) its commit then, or nothing."""
    students = []
    for folder in folders:
        student = Student(folder, names[folder.name], {"folder": folder.name, "commit": "", "committed_at": ""})
        if at is None:
            student.graded = folder
        else:
            at_deadline(student, assignment, at)
        students.append(student)
    return students


def at_deadline(student: Student, assignment: Assignment, at: Deadline) -> None:
    """Plan ``student`` at the deadline: their last commit by then, staged; or their work tree; or why not."""
    folder = student.folder
    exercises = [e.name for e in assignment.rubric.exercises]
    found = deadlines.at_deadline(folder, assignment.name, exercises, at.due, at.template, compare_with=at.compare_with)
    source = student.source
    if found.later:
        source.update(commits_after_deadline=str(found.later), last_commit_after_deadline=found.latest)
    if not found.repository:  # no .git: the work tree as it is, said beside the grade
        source["commit"] = "(not a git repository: graded as it is)"
        student.graded = folder
    elif found.problem:
        skip(student, assignment, found.problem)
    elif found.template_commit:
        source.update(commit=found.commit, committed_at=found.committed)
        skip(student, assignment, f"no work committed before the deadline: the last commit by then "
                                  f"({found.commit[:12]}, {found.committed}) holds the template's exercise files unchanged")
    else:
        student.graded = deadlines.write_staged(at.staging / folder.name, assignment.name, found)
        student.flags = found.flags
        source.update(commit=found.commit, committed_at=found.committed)
        student.commit = found.commit


def skip(student: Student, assignment: Assignment, why: str) -> None:
    """Grade nothing of ``student``: their report says why."""
    student.skip_reason, student.report = why, not_graded(assignment.rubric, why)


def reuse_earlier(students: list[Student], reports_dir: Path, grading: str) -> None:
    """Fingerprint what each student has graded; take an earlier run's report where it was made from the same."""
    for student in students:
        if student.graded is None:
            continue
        student.fingerprint = fingerprint(student.graded, grading + "\0" + student.commit)
        if report := earlier_report(reports_dir / student.folder.name, student.fingerprint):
            student.report, student.reused = report, True
