"""Grade one submission: take it, run the hidden suite against it, build the report.

The steps, each small: ``submission.take`` copies the exercise modules; ``run_suite`` runs
pytest (with the grader's own configuration, never the submission's) and the grading plugin,
which sends student code to the sandbox; ``build_report`` turns pytest-json-report's JSON
and the rubric into a :class:`~grader.model.Report`.
"""

from __future__ import annotations

import contextlib
import io
import os
import sys
from collections import Counter
from pathlib import Path

from grader import rubric as rubrics
from grader import pytest_environment, submission
from grader.assignment import Assignment
from grader.dependencies import dependency_first
from grader.sandbox import seeding
from grader.hygiene import BLOCK, clean, clean_report
from grader.model import NOT_ATTEMPTED, ExerciseResult, Feedback, Report, TestResult
from grader.sandbox.client import Sandbox
from grader.settings import Settings


def grade(root: Path, assignment: Assignment, settings: Settings, sandbox: Sandbox, *, known=frozenset()) -> Report:
    """Grade the submission in ``root`` for ``assignment``; always returns a report."""
    rubric = assignment.rubric
    workdir = sandbox.new_submission_dir()
    taken = submission.take(root, assignment.name, [e.name for e in rubric.exercises], workdir, known=known)
    import torch

    from grader.suite.plugin import GradingPlugin

    # The checks compare tiny tensors while the sandbox (and, in a batch, other submissions'
    # checks) use the other cores: torch's default of a thread per core only makes them
    # contend. One thread made a batch of 10 on 2 cores 22% (1 job) to 34% (2 jobs) faster.
    torch.set_num_threads(1)
    seeding.seed_cpu_only()  # the tests seed dozens of times: the CPU's generator is all there is to seed

    plugin = GradingPlugin(assignment=assignment, settings=settings)
    plugin.start(sandbox, workdir, taken.missing)
    log = run_suite(assignment.suite, assignment.solutions, plugin)
    return report_of_run(rubric, plugin, taken, log)


def report_of_run(rubric: rubrics.Rubric, plugin, taken: submission.Taken, log: str) -> Report:
    """The report of one submission's finished pytest run (alone, or forked from a class session)."""
    report = build_report(rubric, excused(plugin.json_report, plugin.excused), taken,
                          plugin.result.output, plugin.diagnoses)
    if rubric.private:  # modules graded on the student's own dependencies: say which to fix first
        dependency_first(report, {e.name: e.builds_on or dict.fromkeys(e.uses, "all") for e in rubric.exercises})
    report.isolation = clean("; ".join(sorted(set(plugin.result.isolation.values()))), 500)
    for error in plugin.diagnosis_errors:  # advice only: logged, the grade stands
        report.diagnosis_errors.append(clean(error, BLOCK, one_line=False))
        print(f"grader (the grade stands): {report.diagnosis_errors[-1]}", file=sys.stderr)
    if plugin.json_report is None:
        report.grader_errors.append(f"pytest did not produce a report:\n{log[-3000:]}")
    return report


def excused(json_report: dict | None, tests: dict[str, str]) -> dict | None:
    """``json_report`` with the tests that failed only on the student's dependency (``references =
    "private"``: ``GradingPlugin.excuse``) counted as passed. A copy: the run's own JSON keeps their
    verdicts (a batch reuses only passes a probe value earned by itself, ``grader.batch.passes``)."""
    if not json_report or not tests:
        return json_report
    return {**json_report, "tests": [{**test, "outcome": "passed"} if test["nodeid"] in tests else test
                                     for test in json_report.get("tests", [])]}


def run_suite(suite: Path, solutions: Path, plugin, *others) -> str:
    """Run pytest on ``suite`` in this process with only the grader's plugins (and ``others``); return its log."""
    import pytest

    args = [
        str(suite),
        "-c", os.devnull,  # the grader's configuration: none from any folder
        "--rootdir", str(suite),
        "--confcutdir", str(suite),
        "-p", "no:cacheprovider",
        # Built-in plugins the grader's own checks do not need: unraisableexception runs a full
        # gc.collect at the end (about 0.2 s with torch loaded), logging wraps every test in
        # capture handlers; threadexception and faulthandler watch for what the checks never do.
        "-p", "no:unraisableexception", "-p", "no:threadexception", "-p", "no:logging", "-p", "no:faulthandler",
        # Every plugin registered is called at every hook of every test: those the checks never use
        # (their only fixture is ``probed``; warnings are not graded) are left out.
        *[arg for name in ("warnings", "debugging", "unittest", "tmpdir", "monkeypatch", "recwarn",
                           "pastebin", "junitxml", "doctest", "setuponly", "setupplan", "stepwise", "subtests")
          for arg in ("-p", f"no:{name}")],
        "-p", "pytest_jsonreport.plugin",
        "-p", "pytest_timeout",
        "--json-report", "--json-report-file", "none", "--json-report-omit", "collectors", "log", "streams",
        "--timeout", "120",  # the grader's own checks; student code has the sandbox's limits
        "--import-mode", "importlib",
        "-q", "--no-header", "--tb", "no",
        # No capture per test (a tenth of each test's cost): the checks are the grader's own code and
        # print nothing, and this process's output goes to the log below anyway.
        "--capture", "no",
    ]
    # Tests import the reference modules by their stems, and helpers beside them.
    sys.path[:0] = [str(solutions), str(suite)]
    log = io.StringIO()
    try:
        with pytest_environment.graders_own(), contextlib.redirect_stdout(log), contextlib.redirect_stderr(log):
            pytest.main(args, plugins=[plugin, *others])
    finally:
        sys.path.remove(str(solutions))
        sys.path.remove(str(suite))
    return log.getvalue()


def build_report(rubric: rubrics.Rubric, json_report: dict | None, taken: submission.Taken, output: dict[str, str],
                 diagnoses: dict | None = None) -> Report:
    """The report for one submission, from pytest-json-report's JSON and the rubric (whose points
    are the tests' ``@pytest.mark.points``)."""
    report = Report(assignment=rubric.assignment, score=0.0, max_score=0.0, flags=list(taken.flags))
    by_exercise: dict[str, list[TestResult]] = {e.name: [] for e in rubric.exercises}
    seen: dict[str, Counter[str]] = {e.name: Counter() for e in rubric.exercises}
    for test in (json_report or {}).get("tests", []):
        path, _, name = test["nodeid"].partition("::")
        stem = Path(path).stem.removeprefix("test_")
        function = name.split("[")[0]
        points = rubric.exercise(stem).points.get(function) if stem in by_exercise else None
        if points is None:
            unscored = f"{test['nodeid']} has no points in the rubric"
        elif seen[stem][function] == rubric.exercise(stem).cases_of(function):  # the totals stay the rubric's
            unscored = f"{test['nodeid']} is a case more than the rubric counted"
        else:
            unscored = ""
        if unscored:
            grading = (test.get("metadata") or {}).get("grading") or {}
            report.grader_errors.append(grading.get("grader_error") or unscored)
            continue
        seen[stem][function] += 1
        by_exercise[stem].append(test_result(name, points, test, report))
    for exercise in rubric.exercises:
        tests = by_exercise[exercise.name]
        for function, points in exercise.points.items():
            if missing := exercise.cases_of(function) - seen[exercise.name][function]:
                report.grader_errors.append(f"{exercise.name}: {function} did not run"
                                            + (f" ({missing} of its {exercise.cases_of(function)} cases)"
                                               if exercise.cases_of(function) > 1 else ""))
                tests.append(TestResult(function, "error", 0.0, points * missing,
                                        "the grader could not run this check (not your fault)"))
        result = ExerciseResult(
            name=exercise.name,
            score=sum(t.score for t in tests),
            max_score=sum(t.max_score for t in tests),
            tests=tests,
            message=exercise_message(exercise.name, tests, taken),
            output=output.get(exercise.name, ""),
            diagnosis=(diagnoses or {}).get(exercise.name),
        )
        report.exercises.append(result)
    report.score = sum(e.score for e in report.exercises)
    report.max_score = sum(e.max_score for e in report.exercises)
    return clean_report(report)  # student text capped here, before any writer or the batch sees it


def test_result(name: str, points: float, test: dict, report: Report) -> TestResult:
    """One test's result from its JSON entry; points only when it passed."""
    grading = (test.get("metadata") or {}).get("grading")
    if test["outcome"] == "passed":
        return TestResult(name, "passed", points, points)
    if not grading:
        grading = {"status": "error", "message": "the grader could not run this check (not your fault)"}
        report.grader_errors.append(f"{test['nodeid']}: ended as {test['outcome']} without a reason")
    if grading.get("grader_error"):
        report.grader_errors.append(grading["grader_error"])
    feedback = Feedback(**grading["feedback"]) if grading.get("feedback") else None
    return TestResult(name, grading["status"], 0.0, points, grading["message"], feedback)


def exercise_message(name: str, tests: list[TestResult], taken: submission.Taken) -> str:
    """One line for a whole exercise that scored nothing for a single reason."""
    if name in taken.missing:
        return taken.missing[name]
    messages = {t.message for t in tests}
    if tests and all(t.status != "passed" for t in tests):
        if all(t.not_attempted for t in tests):
            return NOT_ATTEMPTED
        if len(messages) == 1:
            return messages.pop()
    return ""
