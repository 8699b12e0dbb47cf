"""The grading plugin in this process (grader/suite/plugin.py), with pytester and a fake runner in
place of the sandbox: what a suite's tests receive, how each ends in the report's ``grading`` entry,
which plans the runner is sent, and what is known of a suite once (``SuiteProbes``), reused for
every submission as ``batch`` reuses it."""

from __future__ import annotations

import os

import pytest

from grader.assignment import Assignment
from grader.sandbox.client import PlanResult, ProbeOutcome
from grader.sandbox.protocol import TIMEOUT, ErrorAccount
from grader.settings import Settings
from grader.suite.plugin import GradingPlugin

pytest_plugins = ["pytester"]

RUBRIC = 'title = "A tiny assignment"\n\n[exercises.tiny]\ntitle = "Tiny"\n'
TESTS = '''
import os

import pytest


@pytest.mark.points(1)
@pytest.mark.probe("value", x=1)
def test_right(probed):
    assert probed == 2, "should be two"


@pytest.mark.points(1)
@pytest.mark.probe("value", x=2)
def test_wrong(probed):
    assert probed == 4, "should be four"


@pytest.mark.points(1)
@pytest.mark.probe("value", x=3)
def test_raises(probed):
    pass


@pytest.mark.points(1)
@pytest.mark.probe("value", x=4)
def test_hangs(probed):
    pass


@pytest.mark.points(1)
@pytest.mark.probe("valeu", x=5)
def test_misspelt(probed):
    pass
'''
PROBES = "def value(student, x):\n    return student.f(x)\n"

# What the fake sandbox answers for each argument of the probe ``value``.
ANSWERS = {
    1: lambda: ProbeOutcome("ok", raw=2),
    2: lambda: ProbeOutcome("ok", raw=3),
    3: lambda: ProbeOutcome("error", ErrorAccount("ValueError", "bad x", where="tiny.py, line 2, in f")),
    4: lambda: ProbeOutcome("timeout", ErrorAccount(TIMEOUT, "this check did not finish within 5 s (infinite loop?)")),
}


class FakeRunner:
    """The sandbox's interface; answers each probe from ANSWERS and keeps every plan it was sent."""

    def __init__(self):
        self.plans = []

    def run(self, plan, timeout: float) -> PlanResult:
        self.plans.append(plan)
        result = PlanResult()
        for stem, module in plan.modules.items():
            result.spent[stem] = 1.0
            for probe in module.probes:
                result.outcomes[probe.id] = ANSWERS[probe.kwargs["x"]]()
        return result


@pytest.fixture
def suite(pytester, monkeypatch):
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")  # the plugins grading loads, alone (grade.run_suite)
    folder = pytester.mkdir("tiny_suite")
    (folder / "rubric.toml").write_text(RUBRIC)
    (folder / "test_tiny.py").write_text(TESTS)
    (folder / "probes").mkdir()
    (folder / "probes" / "tiny.py").write_text(PROBES)
    submission = pytester.mkdir("submission")
    (submission / "tiny.py").write_text("def f(x):\n    raise ValueError('bad x')\n")
    return Assignment.at("tiny", pytester.path, suite=folder), submission


def graded(pytester, assignment, submission, missing=None):
    runner = FakeRunner()
    plugin = GradingPlugin(assignment=assignment, settings=Settings())
    plugin.start(runner, submission, missing or {})
    run_suite_in_process(pytester, assignment, plugin)
    entries = {test["nodeid"].split("::")[-1]: (test.get("metadata") or {}).get("grading") or {"status": test["outcome"]}
               for test in plugin.json_report["tests"]}
    return plugin, runner, entries


def run_suite_in_process(pytester, assignment, plugin):
    pytester.runpytest_inprocess(str(assignment.suite), "-p", "pytest_jsonreport.plugin", "--json-report",
                                 "--json-report-file", "none", "--import-mode", "importlib", "-p", "no:cacheprovider",
                                 plugins=[plugin])


def test_a_plugin_with_no_submission_started_finds_the_suite_and_grades_no_one(pytester, suite):
    """A batch's collecting process: it finds the suite's probes once, for the grading processes
    it forks, and neither sends a plan nor judges a report."""
    assignment, _ = suite
    plugin = GradingPlugin(assignment=assignment, settings=Settings())
    run_suite_in_process(pytester, assignment, plugin)
    assert plugin.suite is not None and list(plugin.suite.modules) == ["tiny"] and len(plugin.suite.calls) == 4
    assert plugin.sandbox is None and plugin.calls == {} and plugin.json_report is None and plugin.diagnosis_errors == []


def test_each_outcome_of_the_sandbox_ends_its_test_as_the_report_says(pytester, suite):
    plugin, runner, entries = graded(pytester, *suite)
    assert entries["test_right"] == {"status": "passed"}
    assert entries["test_wrong"] == {"status": "failed", "message": "should be four", "feedback": None}
    assert entries["test_raises"]["status"] == "error"
    assert entries["test_raises"]["message"] == "your code raised ValueError: bad x (tiny.py, line 2, in f)"
    assert entries["test_hangs"]["status"] == "timeout"
    assert entries["test_hangs"]["message"] == "tiny.py: the check test_hangs did not finish within 5 s (infinite loop?)"
    assert entries["test_misspelt"]["status"] == "error" and "has no function 'valeu'" in entries["test_misspelt"]["grader_error"]
    # One plan for the graded run, without steps; the misspelt probe is never sent.
    graded_plan = runner.plans[0]
    assert not graded_plan.steps and graded_plan.limits == Settings().sandbox_limits()
    assert [p.kwargs["x"] for p in graded_plan.modules["tiny"].probes] == [1, 2, 3, 4]
    assert plugin.diagnosis_errors == []


def test_a_module_missing_from_the_submission_runs_nothing_and_costs_its_tests(pytester, suite):
    plugin, runner, entries = graded(pytester, *suite, missing={"tiny": "tiny.py is missing from your submission"})
    assert runner.plans == []
    assert {name: entry["status"] for name, entry in entries.items()} == dict.fromkeys(
        ["test_right", "test_wrong", "test_raises", "test_hangs", "test_misspelt"], "error")
    assert entries["test_right"]["message"] == "tiny.py is missing from your submission"


def test_what_is_known_of_the_suite_is_found_once_and_serves_every_submission(pytester, suite):
    """As in a batch's grading processes: each starts its submission's run on the suite's probes,
    found once by the process that collected the suite."""
    plugin, runner, _ = graded(pytester, *suite)
    found, submission = plugin.suite, suite[1]
    assert set(found.mistakes) == {found.items[4].nodeid} and list(found.modules) == ["tiny"]
    plugin.start(runner, submission, {"tiny": "tiny.py is missing from your submission"})
    plugin.run_probes(found.items)
    assert plugin.suite is found and plugin.modules == {} and plugin.calls == {} and len(runner.plans) == 1
    plugin.start(runner, submission, {})
    plugin.run_probes(found.items)
    assert plugin.suite is found and runner.plans[-1].modules == found.modules and plugin.result.outcomes


def test_the_suite_runs_whole_whatever_pytest_options_and_plugins_the_shell_names(pytester, suite, monkeypatch):
    """``grade.run_suite`` (every grade, check and batch): an instructor's PYTEST_ADDOPTS="-x" once
    stopped the hidden suite at its first failure, and ``-k`` leaves checks out."""
    from grader.grade import run_suite

    assignment, submission = suite
    monkeypatch.setenv("PYTEST_ADDOPTS", "-x -k test_right")
    monkeypatch.setenv("PYTEST_PLUGINS", "no_such_plugin_anywhere")
    plugin = GradingPlugin(assignment=assignment, settings=Settings())
    plugin.start(FakeRunner(), submission, {})
    run_suite(assignment.suite, submission, plugin)
    assert len(plugin.json_report["tests"]) == 5
    assert (os.environ["PYTEST_ADDOPTS"], os.environ["PYTEST_PLUGINS"]) == ("-x -k test_right", "no_such_plugin_anywhere")
