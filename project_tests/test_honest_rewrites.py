"""Correct code in another style than the reference (``honest_rewrites.toml``), graded as students
meet it: in the hidden grade and in the public check of a released template.

The feedback must never flag a correct solution: every rewrite gets full points in the hidden grade,
passes every public check, and breaks nothing in the grader.
"""

from __future__ import annotations

import tomllib

import pytest

from project_tests.helpers import ROOT, mutate, solution_sources
from project_tests.test_unseen_mistakes import graded_as_students, unseen

DATA = ROOT / "project_tests" / "honest_rewrites.toml"


def load() -> list[dict]:
    """The rewrites, each checked: its ``old`` occurs exactly once in its module."""
    rewrites = tomllib.loads(DATA.read_text())["rewrite"]
    for r in rewrites:
        mutate(solution_sources(r["assignment"])[r["module"]], r["old"], r["new"])
    return rewrites


REWRITES = load()


def test_the_rewrites_are_many_distinct_and_cover_every_module():
    ids = [r["id"] for r in REWRITES]
    assert len(ids) == len(set(ids)) >= 14
    for assignment in ("ch03", "d2l_attention"):
        assert {r["module"] for r in REWRITES if r["assignment"] == assignment} == set(solution_sources(assignment))


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    return graded_as_students(REWRITES, tmp_path_factory, "rewrites")


@pytest.mark.parametrize("where", ["hidden", "public"])
def test_every_rewrite_gets_full_points_and_breaks_nothing(graded, where):
    flagged = {}
    for r in REWRITES:
        report = graded[where][r["id"]]
        view = unseen.module_view(report, r["module"])
        failing = [f"{t['name']}: {t['message'][:200]}" for t in view["failing"]]
        if view["score"] < view["max_score"] or failing or view["grader_errors"] or view["other_modules_failing"]:
            flagged[r["id"]] = failing or view["grader_errors"] or view["other_modules_failing"] or view["message"]
    assert flagged == {}
