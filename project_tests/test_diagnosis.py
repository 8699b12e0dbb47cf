"""Diagnoses of mistakes nobody wrote the catalog for (project_tests/student_mistakes.py):
each gets its concept, or no concept and a localization; none gets a wrong concept; correct
code in unusual styles keeps full marks."""

from __future__ import annotations

import pytest

from project_tests.helpers import assignments, exercise, grade_many, make_submission, mutate, solution_sources
from project_tests.student_mistakes import CORRECT, MISTAKES


@pytest.fixture(scope="module", params=assignments())
def graded(request, tmp_path_factory):
    """Every student mistake and correct style of one assignment, graded in one run."""
    assignment = request.param
    base = tmp_path_factory.mktemp(f"students-{assignment}")
    solutions = solution_sources(assignment)
    cases = [(*m, False) for m in MISTAKES if m[0] == assignment]
    cases += [(*c, "", True) for c in CORRECT if c[0] == assignment]
    roots = {}
    for number, (_, stem, description, old, new, concept, correct) in enumerate(cases):
        source = mutate(solutions[stem], old, new)
        roots[number] = (make_submission(base / str(number), assignment, {stem: source}), stem, description, concept, correct)
    reports = grade_many([root for root, *_ in roots.values()], assignment, "--probe-timeout", "5")
    return [(reports[root], stem, description, concept, correct) for root, stem, description, concept, correct in roots.values()]


def test_the_project_keeps_at_least_60_mistakes_across_both_assignments():
    assert len(MISTAKES) >= 60
    assert {m[0] for m in MISTAKES} == set(assignments())  # every assignment has student-style mistakes


def test_each_mistake_gets_its_concept_or_a_localization_and_never_a_wrong_concept(graded):
    problems = []
    for report, stem, description, concept, correct in graded:
        if correct:
            continue
        module = exercise(report, stem)
        diagnosis = module["diagnosis"] or {}
        concepts = diagnosis.get("concepts", [])
        if module["score"] == module["max_score"]:
            problems.append((description, "lost no points"))
        if concept and concepts != [concept]:
            problems.append((description, "expected", concept, "got", concepts))
        if not concept and concepts:
            problems.append((description, "named a concept", concepts))
        if not concept and not (diagnosis.get("stage") or diagnosis.get("error")):
            problems.append((description, "no localization", diagnosis))
        others = [e["name"] for e in report["exercises"] if e["name"] != stem and e["score"] < e["max_score"]]
        if others or report["grader_errors"]:
            problems.append((description, "cost points elsewhere", others, report["grader_errors"]))
    assert problems == [], "\n".join(map(str, problems))


def test_correct_code_in_any_style_keeps_every_point(graded):
    lost = [(description, [(t["name"], t["message"]) for t in exercise(report, stem)["tests"] if t["status"] != "passed"])
            for report, stem, description, _, correct in graded
            if correct and exercise(report, stem)["score"] < exercise(report, stem)["max_score"]]
    assert lost == []


def test_a_cut_graph_hint_is_given_only_when_the_other_gradients_are_the_references(monkeypatch):
    """"No gradient reached W_value" has many causes (the weights returned, another matrix used);
    ".detach() or .data" is named only when every other parameter got the reference's gradient."""
    import torch

    from grader.suite.comparisons import Mismatch
    from project_tests.helpers import ROOT

    monkeypatch.syspath_prepend(str(ROOT / "tests" / "ch03"))
    from behaviour import check_every_gradient

    expected = {"W_query": torch.ones(2, 3), "W_key": torch.full((2, 3), 2.0), "W_value": torch.full((2, 3), 3.0)}
    for others_right, hinted in ((True, True), (False, False)):
        probed = {"W_query": torch.ones(2, 3) * (1 if others_right else 5), "W_key": torch.full((2, 3), 2.0),
                  "W_value": None}
        with pytest.raises(Mismatch, match="no gradient reached W_value") as failed:
            check_every_gradient(probed, expected, what="gradients", layers="")
        assert (".detach()" in failed.value.feedback.hint) is hinted


def test_the_job_summary_shows_each_failing_checks_message_under_the_diagnosis():
    from grader.model import Diagnosis, ExerciseResult, TestResult
    from grader.reports.summary import exercise_feedback, md

    failing = TestResult("test_qkv_bias", "failed", 0, 1, message="self.W_query has no bias although qkv_bias=True")
    exercise = ExerciseResult("self_attention_v2", 0, 1, tests=[failing],
                              diagnosis=Diagnosis(stage="the queries", expected="1", actual="2"))
    text = "\n".join(exercise_feedback(exercise))
    assert "the queries" in text and md("self.W_query has no bias although qkv_bias=True") in text
