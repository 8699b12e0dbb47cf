"""The report: schema, arithmetic, and the committed sample documented in docs/report.md."""

from __future__ import annotations

import json

import jsonschema
import pytest

from grader.assignment import Assignment
from grader.demo import build_submission, sample_mistakes
from grader.model import Report
from grader.settings import Settings
from project_tests.helpers import ROOT, grade_cli

SCHEMA = json.loads((ROOT / "docs" / "report.schema.json").read_text())


SAMPLES = sorted(p.stem for p in (ROOT / "samples").glob("*.toml"))


@pytest.fixture(scope="module")
def sample_reports(tmp_path_factory):
    """Every demo sample (samples/<assignment>.toml) graded once through the real CLI, by assignment."""
    reports = {}
    for assignment in SAMPLES:
        resolved = Assignment.resolve(assignment, Settings())
        root = build_submission(tmp_path_factory.mktemp("sample") / "s", resolved, sample_mistakes(resolved))
        proc, reports[assignment] = grade_cli(root, assignment)
        assert proc.returncode == 0, proc.stderr
    return reports


@pytest.fixture(scope="module")
def sample_report(sample_reports):
    """The ch03 sample: the one docs/sample-report.json shows."""
    return sample_reports["ch03"]


def test_report_follows_the_schema(sample_report):
    jsonschema.validate(sample_report, SCHEMA)


def test_scores_add_up(sample_report):
    assert sample_report["score"] == sum(e["score"] for e in sample_report["exercises"])
    assert sample_report["max_score"] == sum(e["max_score"] for e in sample_report["exercises"])
    for ex in sample_report["exercises"]:
        assert ex["score"] == sum(t["score"] for t in ex["tests"])
        assert ex["max_score"] == sum(t["max_score"] for t in ex["tests"])
        for test in ex["tests"]:
            assert (test["status"] == "passed") == (test["score"] == test["max_score"])
            assert (test["status"] == "passed") == (test["message"] == "")


@pytest.mark.parametrize("assignment", SAMPLES)
def test_demo_samples_cost_points_exactly_where_their_mistakes_are(sample_reports, assignment):
    report = sample_reports[assignment]
    mistakes = {m["module"] for m in sample_mistakes(Assignment.resolve(assignment, Settings()))}
    assert report["exercises"] and not report["grader_errors"]
    for ex in report["exercises"]:
        assert (ex["score"] < ex["max_score"]) == (ex["name"] in mistakes), ex["name"]


def test_report_round_trips_through_the_model(sample_report):
    assert Report.from_dict(sample_report).to_dict() == sample_report


def test_committed_sample_report_is_valid_and_current(sample_report):
    committed = json.loads((ROOT / "docs" / "sample-report.json").read_text())
    jsonschema.validate(committed, SCHEMA)
    shape = lambda r: [(e["name"], e["score"], [(t["name"], t["status"]) for t in e["tests"]]) for e in r["exercises"]]  # noqa: E731
    assert shape(committed) == shape(sample_report), "regenerate docs/sample-report.json (see docs/report.md)"


@pytest.mark.parametrize("assignment", SAMPLES)
def test_every_demo_mistake_is_diagnosed_with_a_confirmed_concept(sample_reports, assignment):
    started = {m["module"] for m in sample_mistakes(Assignment.resolve(assignment, Settings())) if not m.get("stub")}
    for ex in sample_reports[assignment]["exercises"]:
        if ex["name"] in started:
            assert ex["diagnosis"] and len(ex["diagnosis"]["concepts"]) == 1, (ex["name"], ex["diagnosis"])
        else:
            assert not (ex["diagnosis"] or {}).get("concepts"), ex["name"]
