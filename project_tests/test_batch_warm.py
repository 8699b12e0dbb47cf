"""A batch computes a failing module's diagnosis results once, in its collecting process, and
every later grading process forked from it uses them: their reports must be what ``grade``
gives alone (the same scores, messages and diagnoses)."""

from __future__ import annotations


import os
from types import SimpleNamespace

import pytest

from grader.diagnosis import catalog
from grader.batch.class_session import ForkPerSubmission, Warmer, failing_modules
from grader.assignment import Assignment
from grader.demo import build_submission, sample_mistakes
from grader.settings import Settings
from project_tests.helpers import grade_cli, grade_many


@pytest.mark.end_to_end
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


def _found(calls: dict) -> SimpleNamespace:
    """What the collecting process found of a suite, as far as the warm-up reads it: its probe calls."""
    return SimpleNamespace(calls=calls)


def test_the_collector_that_found_no_suite_warms_nothing(monkeypatch):
    import grader.suite.diagnosis_session

    source = _Counting()
    monkeypatch.setattr(grader.suite.diagnosis_session, "catalog_source", lambda assignment: source)
    assert not Warmer(SimpleNamespace(assignment=None, suite=None)).step() and source.asked == []


class _Counting:
    """A catalog source that counts what it is asked (each result once, as the real ones keep them)."""

    def __init__(self):
        self.asked: list[tuple] = []

    def concepts(self, stem):
        return [(f"{stem}:0", None), (f"{stem}:1", None)]

    def result(self, stem, mistake, probe, kwargs):
        if (stem, mistake, probe) not in self.asked:
            self.asked.append((stem, mistake, probe))
        return mistake  # a mistake changes the reference's result


def test_warming_asks_for_the_reference_and_every_concept_mistake_of_each_call_one_at_a_time():
    source = _Counting()
    steps = catalog.warming(source, [("causal", "forward", {}), ("mha", "future", {})])
    assert next(steps) == "causal" and source.asked == [("causal", None, "forward")]  # nothing more until asked
    assert list(steps) == ["causal", "causal", "mha", "mha", "mha"]
    assert source.asked == [("causal", None, "forward"), ("causal", "causal:0", "forward"), ("causal", "causal:1", "forward"),
                            ("mha", None, "future"), ("mha", "mha:0", "future"), ("mha", "mha:1", "future")]


def test_the_collector_warms_the_modules_that_lost_points_first_then_every_other_one_result_per_step(monkeypatch):
    import grader.suite.diagnosis_session

    source = _Counting()
    monkeypatch.setattr(grader.suite.diagnosis_session, "catalog_source", lambda assignment: source)
    plugin = SimpleNamespace(assignment=None, suite=_found({"a": ("causal", "forward", {}), "b": ("mha", "future", {}), "c": ("scoring", "score", {})}))
    warmer = Warmer(plugin)
    warmer.prefer({"mha"})  # a report showed mha losing points
    assert warmer.step() and source.asked == [("mha", None, "future")]
    assert warmer.step() and warmer.step() and [stem for stem, _, _ in source.asked] == ["mha"] * 3
    warmer.prefer({"scoring"})  # while nothing else is warmed: scoring goes next
    while warmer.step():
        pass
    assert [stem for stem, _, _ in source.asked] == ["mha"] * 3 + ["scoring"] * 3 + ["causal"] * 3
    warmer.prefer({"mha", "causal"})  # warmed once: nothing more
    assert not warmer.step() and len(source.asked) == 9


def test_the_collector_with_nobody_failing_yet_warms_every_module(monkeypatch):
    import grader.suite.diagnosis_session

    source = _Counting()
    monkeypatch.setattr(grader.suite.diagnosis_session, "catalog_source", lambda assignment: source)
    warmer = Warmer(SimpleNamespace(assignment=None, suite=_found({"a": ("mha", "future", {}), "b": ("causal", "forward", {})})))
    assert warmer.step() and source.asked == [("causal", None, "forward")]
    while warmer.step():
        pass
    assert [stem for stem, _, _ in source.asked] == ["causal"] * 3 + ["mha"] * 3


def test_warming_that_fails_stops_without_failing_the_batch(monkeypatch):
    import grader.suite.diagnosis_session

    def broken(assignment):
        raise RuntimeError("a broken catalog")

    monkeypatch.setattr(grader.suite.diagnosis_session, "catalog_source", broken)
    warmer = Warmer(SimpleNamespace(assignment=None, suite=_found({"a": ("causal", "forward", {})})))
    assert not warmer.step() and not warmer.step()


def test_the_collector_does_spare_work_only_while_no_report_is_ready_and_students_remain():
    read_end, write_end = os.pipe()
    done = []

    def spare():  # the third piece of spare work sees a grading process finish
        done.append(1)
        if len(done) == 3:
            os.write(write_end, b"x")
        return True

    forker = ForkPerSubmission([], 1, None, None, spare=spare)
    assert forker.wait([read_end], forks_to_come=True) == [read_end] and len(done) == 3
    assert forker.wait([read_end], forks_to_come=False) == [read_end] and len(done) == 3  # nobody left to inherit it
    os.close(read_end)
    os.close(write_end)

