"""A batch's student is one record, planned, graded and recorded by small functions: what each
writes, without grading anyone (no interpreter starts)."""

from __future__ import annotations

import csv

from grader.assignment import Assignment
from grader.batch import student as students
from grader.batch.recording import ClassRecord
from grader.batch.resume import GRADED
from grader.settings import Settings

CH03 = Assignment.resolve("ch03", Settings())


def class_of(tmp_path, *names):
    root = tmp_path / "class"
    for name in names:
        (root / name / "exercises" / "ch03").mkdir(parents=True)
    return [root / name for name in names]


def record_of(tmp_path, planned):
    exercises = [e.name for e in CH03.rubric.exercises]
    return ClassRecord("ch03", exercises, planned, csv_path=tmp_path / "grades.csv", reports_dir=tmp_path / "reports",
                       duedate="", people={})


def test_without_a_deadline_each_folder_is_graded_as_it_is_and_an_earlier_report_is_reused_only_for_the_same_grading(tmp_path):
    folders = class_of(tmp_path, "b-folder", "a-folder")
    planned = students.plan(folders, {"b-folder": "bob", "a-folder": "ann"}, CH03, None)
    assert [(s.name, s.graded, s.skipped) for s in planned] == [("bob", folders[0], False), ("ann", folders[1], False)]
    record = record_of(tmp_path, planned)
    record.begin()
    report = students.not_graded(CH03.rubric, "a stand-in report")
    report.flags = []
    students.reuse_earlier(planned, tmp_path / "reports", "grading 1")
    assert planned[0].fingerprint and not planned[0].reused
    record.record(planned[0], report)
    assert (tmp_path / "reports" / "b-folder" / GRADED).read_text() == planned[0].fingerprint + "\n"
    again = students.plan(folders, {"b-folder": "bob", "a-folder": "ann"}, CH03, None)
    students.reuse_earlier(again, tmp_path / "reports", "grading 1")
    assert again[0].reused and again[0].report.score == 0.0 and not again[1].reused
    other = students.plan(folders, {"b-folder": "bob", "a-folder": "ann"}, CH03, None)
    students.reuse_earlier(other, tmp_path / "reports", "grading 2")  # another suite, grader or limits
    assert not other[0].reused


def test_a_student_not_graded_is_recorded_at_the_start_with_the_reason_and_never_marked_for_reuse(tmp_path):
    folders = class_of(tmp_path, "zed", "amy")
    planned = students.plan(folders, {"zed": "zed", "amy": "amy"}, CH03, None)
    planned[0].graded = None
    students.skip(planned[0], CH03, "no work committed before the deadline")
    record = record_of(tmp_path, planned)
    record.begin()
    feedback = (tmp_path / "reports" / "zed" / "FEEDBACK.md").read_text()
    assert "Not graded: no work committed before the deadline." in feedback
    assert not (tmp_path / "reports" / "zed" / GRADED).exists()
    rows = list(csv.DictReader((tmp_path / "grades.csv").open()))
    assert [(r["student_id"], r["flags"]) for r in rows] == [("zed", "not graded: no work committed before the deadline")]
    failed = students.not_graded(CH03.rubric, "x")
    failed.flags, failed.grader_errors = [], ["the grading process for this submission failed"]
    students.reuse_earlier(planned, tmp_path / "reports", "grading")
    record.record(planned[1], failed)  # a failed grading is tried again next time
    assert not (tmp_path / "reports" / "amy" / GRADED).exists()
    assert [r["student_id"] for r in csv.DictReader((tmp_path / "grades.csv").open())] == ["amy", "zed"]  # by id
