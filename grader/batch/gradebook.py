"""The class's grades in nbgrader's gradebook (``batch --gradebook``).

Each exercise is a *notebook* named after its stem and each hidden test a *grade cell* of type
code, whose ``auto_score`` is the test's points: nbgrader's formgrader and ``nbgrader export``
then show the same totals as the CSV (:mod:`grader.batch.grades_csv`).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
import tempfile
from pathlib import Path

from grader.hygiene import NAME, clean, clean_report
from grader.model import Report

GRADEBOOK_FILE = "gradebook.db"


def _url(database: Path) -> str:
    return f"sqlite:///{database.resolve()}"


@contextlib.contextmanager
def _alembic_on_path():
    """nbgrader shells out to ``alembic`` when it creates a gradebook: find it beside this
    interpreter when it is not on PATH (a virtual environment that was not activated)."""
    previous = os.environ.get("PATH", "")
    here = os.path.dirname(sys.executable)
    if shutil.which("alembic") is None and os.path.exists(os.path.join(here, "alembic")):
        os.environ["PATH"] = here + os.pathsep + previous
    try:
        yield
    finally:
        os.environ["PATH"] = previous


def read_students(course_dir: Path) -> dict[str, dict]:
    """Names and e-mails of the students already in a course's gradebook, by id."""
    if not (course_dir / GRADEBOOK_FILE).is_file():
        return {}
    from nbgrader.api import Gradebook

    with _alembic_on_path(), Gradebook(_url(course_dir / GRADEBOOK_FILE)) as gradebook:
        return {s.id: {"first_name": s.first_name, "last_name": s.last_name, "email": s.email} for s in gradebook.students}


def graded_ids(course_dir: Path, assignment: str) -> set[str]:
    """The ids of the students the course's gradebook holds for ``assignment``: those with a
    submission of it, and those with no submission at all (``batch`` records a student it could
    not grade so)."""
    if not (course_dir / GRADEBOOK_FILE).is_file():
        return set()
    from nbgrader.api import Gradebook, MissingEntry

    with _alembic_on_path(), Gradebook(_url(course_dir / GRADEBOOK_FILE)) as gradebook:
        ids = {s.id for s in gradebook.students if not s.submissions}
        try:
            return ids | {s.student.id for s in gradebook.find_assignment(assignment).submissions}
        except MissingEntry:
            return ids


def id_changes(recorded: set[str], ids: dict[str, str]) -> list[tuple[str, str, str]]:
    """``(folder, id now, id recorded)`` for each folder whose student the gradebook already holds
    under another id: the folder's full name, or the part of it after a hyphen, is an id recorded
    for this assignment that no folder of this run is graded as (the same class graded before
    with another slug, or under a root that named another slug)."""
    now = set(ids.values())
    changes = []
    for folder, student in sorted(ids.items()):
        if student in recorded:
            continue
        candidates = [folder] + [folder[i + 1:] for i, c in enumerate(folder) if c == "-"]
        for before in candidates:
            if before != student and before in recorded and before not in now:
                changes.append((folder, student, before))
                break
    return changes


def due_date_problem(text: str) -> str:
    """Why nbgrader cannot store ``text`` as an assignment's due date ("" when it can)."""
    from nbgrader import utils

    try:
        utils.parse_utc(text)
    except (ValueError, OverflowError, TypeError) as exc:
        return f"{text!r} is not a date nbgrader can store as the due date ({exc}); write it as 2026-03-01T23:59:00+01:00"
    return ""


def write_gradebook(course_dir: Path, assignment: str, results: list[tuple[str, Report]], *, duedate: str | None = None,
                    not_graded: set[str] = frozenset()) -> None:
    """Put every student's scores into ``course_dir/gradebook.db`` through nbgrader's API.

    Creates the assignment, a notebook per exercise and a grade cell per test when missing;
    creates students and submissions; sets each grade's ``auto_score`` (regrading overwrites).
    A student in ``not_graded`` (nothing could be graded) is in the roster with no submission,
    as nbgrader has a student who submitted nothing, not a submission scored 0.
    The database is written as a copy that then replaces it: an interrupted batch leaves the
    previous gradebook whole.
    """
    course_dir.mkdir(parents=True, exist_ok=True)
    target = course_dir / GRADEBOOK_FILE
    fd, temporary = tempfile.mkstemp(prefix=".gradebook-", suffix=".db", dir=course_dir)
    os.close(fd)
    try:
        if target.exists():
            shutil.copyfile(target, temporary)
        else:
            os.unlink(temporary)  # nbgrader creates a new database (and its tables) itself
        cleaned = [(clean(student_id, NAME), clean_report(report)) for student_id, report in results]
        _fill_gradebook(Path(temporary), assignment, cleaned, duedate=duedate,
                        not_graded={clean(student_id, NAME) for student_id in not_graded})
        os.replace(temporary, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)
        raise


def _fill_gradebook(database: Path, assignment: str, results: list[tuple[str, Report]], *, duedate: str | None,
                    not_graded: set[str] = frozenset()) -> None:
    """Put the scores into the gradebook ``database`` (see :func:`write_gradebook`)."""
    import warnings

    from nbgrader.api import Grade, Gradebook, MissingEntry, SubmittedNotebook

    cells: dict[str, dict[str, float]] = {}
    for _, report in results:
        for exercise in report.exercises:
            for test in exercise.tests:
                cells.setdefault(exercise.name, {}).setdefault(test.name, test.max_score)
    # nbgrader's own add_submission makes SQLAlchemy warn about autoflush; nothing is lost.
    with warnings.catch_warnings(), _alembic_on_path(), Gradebook(_url(database)) as gradebook:
        warnings.simplefilter("ignore")
        if duedate:  # the deadline graded at (or --duedate): set again on every run
            gradebook.update_or_create_assignment(assignment, duedate=duedate)
        else:
            try:
                gradebook.find_assignment(assignment)
            except MissingEntry:
                gradebook.add_assignment(assignment)
        for notebook_name, tests in cells.items():
            notebook = gradebook.update_or_create_notebook(notebook_name, assignment)
            existing = {c.name: c for c in notebook.grade_cells}
            for name, points in tests.items():
                if name not in existing:
                    gradebook.add_grade_cell(name, notebook_name, assignment, max_score=points, cell_type="code")
                elif existing[name].max_score != points:
                    existing[name].max_score = points
        gradebook.db.commit()
        notebooks = {nb.name: nb for nb in gradebook.find_assignment(assignment).notebooks}
        for student_id, report in results:
            gradebook.update_or_create_student(student_id)
            if student_id in not_graded:  # no submission (one an earlier run made is removed: nothing stands now)
                with contextlib.suppress(MissingEntry):
                    gradebook.remove_submission(assignment, student_id)
                continue
            submission = gradebook.update_or_create_submission(assignment, student_id)
            submitted = {nb.name: nb for nb in submission.notebooks}
            for exercise in report.exercises:
                notebook = submitted.get(exercise.name)
                if notebook is None:  # a submission made before this exercise existed
                    notebook = SubmittedNotebook(notebook=notebooks[exercise.name], assignment=submission)
                    gradebook.db.add(notebook)
                grades = {g.name: g for g in notebook.grades}
                for test in exercise.tests:
                    grade = grades.get(test.name)
                    if grade is None:
                        cell = next(c for c in notebooks[exercise.name].grade_cells if c.name == test.name)
                        grade = Grade(cell=cell, notebook=notebook)
                        gradebook.db.add(grade)
                    grade.auto_score = float(test.score)
                    grade.needs_manual_grade = False
        gradebook.db.commit()
