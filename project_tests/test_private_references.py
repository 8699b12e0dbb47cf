"""``references = "private"``: a module is graded on the student's own dependency, never next to a
reference, and a mistake in the dependency still costs points once where the catalog knows it.

The assignment is ``project_tests/private_assignment.py``'s ``vault``: ``attend`` uses ``scores``.
(That no reference reaches what grading shows, against a hostile module:
``adversarial/test_hostile_references.py``.)
"""

from __future__ import annotations

import pytest

from grader.rubric import RubricError, load
from project_tests import private_assignment as vault
from project_tests.helpers import exercise


def scores_of(report: dict) -> dict[str, float]:
    return {e["name"]: e["score"] for e in report["exercises"]}


def test_the_rubric_says_whether_references_are_private(tmp_path):
    suite = tmp_path / "tests" / "vault"
    suite.mkdir(parents=True)
    (suite / "test_scores.py").write_text(vault.TEST_SCORES)
    (suite / "test_attend.py").write_text(vault.TEST_ATTEND)
    (suite / "test_combine.py").write_text(vault.TEST_COMBINE)
    for references, private in (("private", True), ("published", False)):
        (suite / "rubric.toml").write_text(vault.RUBRIC.replace("@REFERENCES@", references))
        assert load(suite, "vault").private is private
    (suite / "rubric.toml").write_text(vault.RUBRIC.replace('references = "@REFERENCES@"\n', ""))
    assert load(suite, "vault").references == "published"  # the books' assignments: as before
    (suite / "rubric.toml").write_text(vault.RUBRIC.replace("@REFERENCES@", "secret"))
    with pytest.raises(RubricError, match="published.*private"):
        load(suite, "vault")


@pytest.mark.end_to_end
def test_a_mistake_in_the_dependency_costs_once_where_the_catalog_knows_it(tmp_path):
    repo = vault.build(tmp_path / "repo", vault.new_mark())
    students = {
        "honest": {"scores": vault.HONEST_SCORES, "attend": vault.HONEST_ATTEND},
        "known": {"scores": vault.UNSCALED_SCORES, "attend": vault.HONEST_ATTEND},
        "unknown": {"scores": vault.DOUBLED_SCORES, "attend": vault.HONEST_ATTEND},
        "own_mistake": {"scores": vault.HONEST_SCORES, "attend": vault.WRONG_AXIS_ATTEND},
        "both": {"scores": vault.UNSCALED_SCORES, "attend": vault.WRONG_AXIS_ATTEND},
    }
    for modules in students.values():
        modules["combine"] = vault.HONEST_COMBINE
    roots = {who: vault.submission(tmp_path / who, **modules) for who, modules in students.items()}
    reports = vault.grade_many(repo, list(roots.values()))
    got = {who: scores_of(reports[root]) for who, root in roots.items()}

    assert got["honest"] == {"scores": 3, "attend": 4, "combine": 1}
    # The catalog's mistake in scores costs scores' points; attend, right on top of it, keeps all of its own,
    # and so does combine, two floors up (attend's checks failed only through scores: attend is right).
    assert got["known"] == {"scores": 0, "attend": 4, "combine": 1}
    known = exercise(reports[roots["known"]], "scores")
    assert known["diagnosis"]["concepts"] == ["Divide the scores by sqrt(d), the size of a query: without it the softmax saturates."]
    # A mistake the catalog does not know cannot be told apart from attend's own: the checks that run on
    # scores cost their points again, and say to fix scores.py first; the check that needs no scores passes.
    assert got["unknown"] == {"scores": 0, "attend": 1, "combine": 0}
    attend = exercise(reports[roots["unknown"]], "attend")
    assert attend["message"].startswith("fix scores.py first") and attend["diagnosis"] is None
    assert all(t["message"].startswith("fix scores.py first") for t in attend["tests"] if t["status"] != "passed")
    # attend's own mistake costs attend's points, on a right scores and on a known wrong one alike; combine,
    # right on top of it, then costs again: the catalog knows no mistake of attend (it has no catalog).
    assert got["own_mistake"] == {"scores": 3, "attend": 1, "combine": 0}
    assert got["both"] == {"scores": 0, "attend": 1, "combine": 0}
    for report in reports.values():
        assert not report["grader_errors"], report["grader_errors"]
