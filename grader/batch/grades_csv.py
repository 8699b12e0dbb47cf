"""The class's grades as a CSV like ``nbgrader export``'s (``batch --csv``).

The CSV has ``nbgrader export``'s columns, in its order (``nbgrader/plugins/export.py``,
``CsvExportPlugin``), then one column per exercise (the module stem, its points), ``flags``,
and where the grade came from: ``folder`` (the submission folder's full name; ``student_id``
is the login when folders follow GitHub Classroom's ``<assignment>-<login>`` naming),
``commit`` and ``committed_at`` (with ``batch --deadline``: the commit graded and its committer
date; empty otherwise), ``commits_after_deadline`` and ``last_commit_after_deadline`` (with
``--deadline``: how many commits the repository holds after it, and the newest one's committer
date; empty when none), and ``isolation`` (how student code was confined for this grade:
``namespaces``, or the weaker mode; empty when none of it ran). Scores are written as nbgrader writes them (``str(float)``). There is no late
penalty and no submission time (a cloned repository says nothing trustworthy about when it
was submitted): ``timestamp`` is empty, ``late_submission_penalty`` is 0.0.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path

from grader.hygiene import BLOCK, NAME, clean
from grader.model import Report
from grader.reports import replace_atomically

NBGRADER_COLUMNS = [
    "assignment", "duedate", "timestamp", "student_id", "last_name", "first_name", "email",
    "raw_score", "late_submission_penalty", "score", "max_score",
]
SOURCE_COLUMNS = ["folder", "commit", "committed_at", "commits_after_deadline", "last_commit_after_deadline"]


def cell(text: str) -> str:
    """A text cell a spreadsheet will not run as a formula (``=``, ``+``, ``-``, ``@`` first)."""
    text = str(text)
    return "'" + text if text[:1] in ("=", "+", "-", "@", "\t", "\r") else text


def csv_row(
    assignment: str,
    exercises: list[str],
    student_id: str,
    report: Report,
    *,
    duedate: str = "",
    person: dict | None = None,
    source: dict[str, str] | None = None,
) -> dict[str, str]:
    """One student's row, keyed by :func:`columns`. Only the text the row shows is cleaned (the
    id, the names, the flags and each grader error's first line), not the whole report: ``batch``
    makes a row once per student, as the grade arrives, and rewrites the file from the rows."""
    person = person or {}
    by_name = {e.name: e for e in report.exercises}
    row = {
        "assignment": assignment,
        "duedate": duedate,
        "timestamp": "",
        "student_id": cell(clean(student_id, NAME)),
        "last_name": cell(clean(person.get("last_name") or "", NAME)),
        "first_name": cell(clean(person.get("first_name") or "", NAME)),
        "email": cell(clean(person.get("email") or "", NAME)),
        "raw_score": str(float(report.score)),
        "late_submission_penalty": "0.0",
        "score": str(float(report.score)),
        "max_score": str(float(report.max_score)),
    }
    for name in exercises:
        row[name] = str(float(by_name[name].score)) if name in by_name else "0.0"
    errors = [clean(error, BLOCK, one_line=False) for error in report.grader_errors]
    notes = [clean(flag) for flag in report.flags] + [f"grader error: {e.splitlines()[0] if e else ''}" for e in errors]
    row["flags"] = cell("; ".join(" ".join(n.split()) for n in notes))
    for name in SOURCE_COLUMNS:  # the folder's name is the student's: cleaned like the id
        row[name] = cell(clean((source or {}).get(name, ""), NAME))
    row["isolation"] = cell(clean(report.isolation, NAME))
    return row


def columns(exercises: list[str]) -> list[str]:
    """The CSV header: nbgrader export's columns, one per exercise, ``flags``, where the grade came from."""
    taken = set(NBGRADER_COLUMNS) | set(SOURCE_COLUMNS) | {"flags", "isolation"}
    return NBGRADER_COLUMNS + [e for e in exercises if e not in taken] + ["flags"] + SOURCE_COLUMNS + ["isolation"]


def write_csv(path: Path, exercises: list[str], rows: list[dict[str, str]]) -> None:
    """Write the class's grades to ``path``: ``rows`` made by :func:`csv_row` (see the module
    docstring for the columns)."""
    text = io.StringIO()
    writer = csv.DictWriter(text, fieldnames=columns(exercises), extrasaction="ignore", lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    replace_atomically(path, text.getvalue())
