"""Grades of a whole class: a CSV like ``nbgrader export``'s, and nbgrader's gradebook.

The CSV has ``nbgrader export``'s columns, in its order (``nbgrader/plugins/export.py``,
``CsvExportPlugin``), then one column per exercise (the module stem, its points) and
``flags``. Scores are written as nbgrader writes them (``str(float)``). There is no late
penalty and no submission time (a cloned repository says nothing trustworthy about when it
was submitted): ``timestamp`` is empty, ``late_submission_penalty`` is 0.0.

In the gradebook (:func:`write_gradebook`) each exercise is a *notebook* named after its
stem and each hidden test a *grade cell* of type code, whose ``auto_score`` is the test's
points: nbgrader's formgrader and ``nbgrader export`` then show the same totals.
"""

from __future__ import annotations

import csv
from pathlib import Path

from grader.model import Report

NBGRADER_COLUMNS = [
    "assignment", "duedate", "timestamp", "student_id", "last_name", "first_name", "email",
    "raw_score", "late_submission_penalty", "score", "max_score",
]
GRADEBOOK_FILE = "gradebook.db"


def cell(text: str) -> str:
    """A text cell a spreadsheet will not run as a formula (``=``, ``+``, ``-``, ``@`` first)."""
    text = str(text)
    return "'" + text if text[:1] in ("=", "+", "-", "@", "\t", "\r") else text


def csv_rows(
    assignment: str,
    exercises: list[str],
    results: list[tuple[str, Report]],
    *,
    duedate: str = "",
    students: dict[str, dict] | None = None,
) -> list[dict[str, str]]:
    """One row per student, as dictionaries keyed by :func:`columns`."""
    rows = []
    for student_id, report in results:
        person = (students or {}).get(student_id, {})
        by_name = {e.name: e for e in report.exercises}
        row = {
            "assignment": assignment,
            "duedate": duedate,
            "timestamp": "",
            "student_id": cell(student_id),
            "last_name": cell(person.get("last_name") or ""),
            "first_name": cell(person.get("first_name") or ""),
            "email": cell(person.get("email") or ""),
            "raw_score": str(float(report.score)),
            "late_submission_penalty": "0.0",
            "score": str(float(report.score)),
            "max_score": str(float(report.max_score)),
        }
        for name in exercises:
            row[name] = str(float(by_name[name].score)) if name in by_name else "0.0"
        notes = list(report.flags) + [f"grader error: {e.splitlines()[0] if e else ''}" for e in report.grader_errors]
        row["flags"] = cell("; ".join(" ".join(n.split()) for n in notes))
        rows.append(row)
    return rows


def columns(exercises: list[str]) -> list[str]:
    """The CSV header: nbgrader export's columns, one per exercise, ``flags``."""
    return NBGRADER_COLUMNS + [e for e in exercises if e not in NBGRADER_COLUMNS] + ["flags"]


def write_csv(path: Path, assignment: str, exercises: list[str], results: list[tuple[str, Report]], **kwargs) -> None:
    """Write the class's grades to ``path`` (see the module docstring for the columns)."""
    rows = csv_rows(assignment, exercises, results, **kwargs)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=columns(exercises), extrasaction="ignore", lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)


def _url(course_dir: Path) -> str:
    return f"sqlite:///{(course_dir / GRADEBOOK_FILE).resolve()}"


def read_students(course_dir: Path) -> dict[str, dict]:
    """Names and e-mails of the students already in a course's gradebook, by id."""
    if not (course_dir / GRADEBOOK_FILE).is_file():
        return {}
    from nbgrader.api import Gradebook

    with Gradebook(_url(course_dir)) as gradebook:
        return {s.id: {"first_name": s.first_name, "last_name": s.last_name, "email": s.email} for s in gradebook.students}


def write_gradebook(course_dir: Path, assignment: str, results: list[tuple[str, Report]], *, duedate: str | None = None) -> None:
    """Put every student's scores into ``course_dir/gradebook.db`` through nbgrader's API.

    Creates the assignment, a notebook per exercise and a grade cell per test when missing;
    creates students and submissions; sets each grade's ``auto_score`` (regrading overwrites).
    """
    from nbgrader.api import Grade, Gradebook, MissingEntry, SubmittedNotebook

    cells: dict[tuple[str, str], float] = {}
    for _, report in results:
        for exercise in report.exercises:
            for test in exercise.tests:
                cells.setdefault((exercise.name, test.name), test.max_score)
    course_dir.mkdir(parents=True, exist_ok=True)
    with Gradebook(_url(course_dir)) as gradebook:
        try:
            gradebook.find_assignment(assignment)
        except MissingEntry:
            gradebook.add_assignment(assignment, **({"duedate": duedate} if duedate else {}))
        for (notebook, name), points in cells.items():
            gradebook.update_or_create_notebook(notebook, assignment)
            gradebook.update_or_create_grade_cell(name, notebook, assignment, max_score=points, cell_type="code")
        for student_id, report in results:
            gradebook.update_or_create_student(student_id)
            submission = gradebook.update_or_create_submission(assignment, student_id)
            for exercise in report.exercises:
                try:
                    notebook = gradebook.find_submission_notebook(exercise.name, assignment, student_id)
                except MissingEntry:  # a submission made before this exercise existed
                    notebook = SubmittedNotebook(notebook=gradebook.find_notebook(exercise.name, assignment), assignment=submission)
                    gradebook.db.add(notebook)
                    gradebook.db.flush()
                for test in exercise.tests:
                    try:
                        grade = gradebook.find_grade(test.name, exercise.name, assignment, student_id)
                    except MissingEntry:
                        graded = gradebook.find_grade_cell(test.name, exercise.name, assignment)
                        grade = Grade(cell_id=graded.id, notebook=notebook)
                        gradebook.db.add(grade)
                    grade.auto_score = float(test.score)
                    grade.needs_manual_grade = False
            gradebook.db.commit()
