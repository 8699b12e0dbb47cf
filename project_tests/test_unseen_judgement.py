"""The reader's verdicts on the unseen mistakes (``unseen_mistakes_judged.toml``) hold what the
course promises: every mistake of the corpus judged, in the hidden grade and in the public check;
none misleading; none undetected but the textbook's own Exercise 3.1 answer; and at least 90% right
on each side. A new mistake without a verdict, or a verdict that breaks the promise, fails here
(``scripts/grade_unseen_mistakes.py`` writes the feedback a reader judges)."""

from __future__ import annotations

import tomllib

import pytest

from project_tests.helpers import ROOT

CORPUS = tomllib.loads((ROOT / "project_tests" / "unseen_mistakes.toml").read_text())["mistake"]
VERDICTS = tomllib.loads((ROOT / "project_tests" / "unseen_mistakes_judged.toml").read_text())["verdict"]
THE_BOOKS_OWN_ANSWER = {"wt-value-new-parameter"}
KINDS = {"right", "vague", "misleading", "undetected"}


def test_every_mistake_has_one_verdict_per_side():
    assert [v["id"] for v in VERDICTS] == [m["id"] for m in CORPUS]
    assert all(v["hidden"] in KINDS and v["public"] in KINDS and v.get("reason") for v in VERDICTS)


@pytest.mark.parametrize("side", ["hidden", "public"])
def test_no_feedback_misleads_and_nothing_goes_undetected(side):
    assert [v["id"] for v in VERDICTS if v[side] == "misleading"] == []
    assert [v["id"] for v in VERDICTS if v[side] == "undetected" and v["id"] not in THE_BOOKS_OWN_ANSWER] == []


@pytest.mark.parametrize("side", ["hidden", "public"])
def test_at_least_nine_in_ten_get_their_concept_or_their_line(side):
    judged = [v for v in VERDICTS if v["id"] not in THE_BOOKS_OWN_ANSWER]
    right = sum(v[side] == "right" for v in judged)
    assert right >= 0.9 * len(judged), f"{right} of {len(judged)}"
