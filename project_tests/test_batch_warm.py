"""A batch computes a failing module's diagnosis results once, in its collecting process, and
every later grading process forked from it uses them: their reports must be what ``grade``
gives alone (the same scores, messages and diagnoses)."""

from __future__ import annotations


from grader.diagnosis import catalog
from grader.batch.class_session import failing_modules
from grader.assignment import Assignment
from grader.demo import build_submission, sample_mistakes
from grader.settings import Settings
from project_tests.helpers import grade_cli, grade_many


def test_later_submissions_graded_after_the_warm_up_get_the_solo_grade(tmp_path):
    settings = Settings()
    assignment = Assignment.resolve("ch03", settings)
    roots = [build_submission(tmp_path / f"student{i}", assignment, sample_mistakes(assignment)) for i in range(3)]
    reports = grade_many(roots, "ch03", "--workers", "1")  # two jobs: the third is forked after a warm-up
    _, alone = grade_cli(roots[0], "ch03")
    assert alone["score"] < alone["max_score"]
    assert any(e["diagnosis"] and e["diagnosis"]["concepts"] for e in alone["exercises"])  # a concept is named
    for root in roots:
        assert reports[root]["score"] == alone["score"]
        assert reports[root]["exercises"] == alone["exercises"]


def test_the_modules_that_lost_points_are_read_from_a_report():
    report = {"exercises": [{"name": "causal", "score": 3, "max_score": 9}, {"name": "mha", "score": 5, "max_score": 5}]}
    assert failing_modules(report) == {"causal"}
    assert failing_modules(None) == failing_modules({}) == set()


class _Counting:
    """A catalog source that counts what it is asked."""

    def __init__(self):
        self.asked: list[tuple] = []

    def concepts(self, stem):
        return [(f"{stem}:0", None), (f"{stem}:1", None)]

    def result(self, stem, mistake, probe, kwargs):
        self.asked.append((stem, mistake, probe))


def test_warm_asks_for_the_reference_and_every_concept_mistake_of_each_call():
    source = _Counting()
    catalog.warm(source, [("causal", "forward", {}), ("mha", "future", {})])
    assert source.asked == [("causal", None, "forward"), ("causal", "causal:0", "forward"), ("causal", "causal:1", "forward"),
                            ("mha", None, "future"), ("mha", "mha:0", "future"), ("mha", "mha:1", "future")]
