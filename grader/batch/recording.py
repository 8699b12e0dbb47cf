"""What ``batch`` writes for each student, as soon as their grade is known, so that a batch
that is interrupted loses nothing already graded: their REPORT.json and feedback, the CSV
(rewritten from every row known, :mod:`grader.batch.grades_csv`), and last the mark that lets a
later run reuse the report (:mod:`grader.batch.resume`)."""

from __future__ import annotations

from pathlib import Path

from grader.batch import class_report
from grader.batch.grades_csv import csv_row, write_csv
from grader.batch.resume import GRADED
from grader.batch.student import Student
from grader.model import Report
from grader.reports import replace_atomically, write_json


class ClassRecord:
    """The files of one batch: ``csv_path``, and a folder per student under ``reports_dir``."""

    def __init__(self, assignment: str, exercises: list[str], students: list[Student], *, csv_path: Path,
                 reports_dir: Path, duedate: str, people: dict[str, dict]):
        self.assignment, self.exercises, self.students = assignment, exercises, students
        self.csv_path, self.reports_dir = csv_path, reports_dir
        self.duedate, self.people = duedate, people  # the CSV's duedate column; the gradebook's names, by id
        for student in students:  # reused or not graded: their rows are known before any grading
            if student.report is not None:
                self.know(student, student.report)

    def know(self, student: Student, report: Report) -> None:
        """Hold ``report`` as ``student``'s, with their CSV row (made once: the file is rewritten from rows)."""
        student.report = report
        student.row = csv_row(self.assignment, self.exercises, student.name, report, duedate=self.duedate,
                              person=self.people.get(student.name), source=student.source)

    def write_csv(self) -> None:
        """The CSV of every student whose grade is known, by id."""
        known = sorted((s for s in self.students if s.report is not None), key=lambda s: s.name)
        write_csv(self.csv_path, self.exercises, [s.row for s in known])

    def begin(self) -> None:
        """Before any student is graded: the students not graded, the reused ones' feedback, the CSV."""
        self.reports_dir.mkdir(parents=True, exist_ok=True)
        for student in self.students:
            if student.skipped:
                self.record(student, student.report)
        for student in self.students:
            if student.reused:  # their feedback as named now
                student.feedback = class_report.write_feedback(student, self.reports_dir)
        self.write_csv()

    def record(self, student: Student, report: Report) -> None:
        """``student``'s grade on disk: report, CSV, feedback; last, the mark that it may be reused."""
        folder = self.reports_dir / student.folder.name
        write_json(report, folder / "REPORT.json")
        self.know(student, report)
        self.write_csv()
        student.feedback = class_report.write_feedback(student, self.reports_dir)
        # Last: a report marked reusable is in the CSV already, whenever the run is killed.
        if not report.grader_errors and student.fingerprint:  # a failed grading is tried again next time
            replace_atomically(folder / GRADED, student.fingerprint + "\n")
