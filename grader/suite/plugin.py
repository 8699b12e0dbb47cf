"""The pytest plugin behind every grading suite.

Tests declare what they need from student code with a marker, and receive it, already
validated, as plain values::

    @pytest.mark.points(2)                       # what the test is worth (every test has points)
    @pytest.mark.probe("forward", seed=123)      # runs probes/<stem>.py:forward in the sandbox
    def test_forward_textbook(probed):           # the probe's return value, decoded
        close(probed["context"], TEXTBOOK, what="...")

At collection the plugin checks every probe marker against its probe file and every test's
points (a mistake there is a grader error for that test, ``SuiteMistake``), then sends every
probe of the session to the sandbox in one plan, so
student code runs in a few forked workers (one per module) while the tests themselves, and
every comparison, stay in this trusted process. For each test it adds a ``grading`` entry
(status, message, feedback) to pytest-json-report's metadata; ``grader.grade`` builds the
report from that JSON.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from grader.assignment import Assignment
from grader.diagnosis.live_reference import Reference
from grader.model import Diagnosis
from grader.rubric import exercise_of
from grader.sandbox.client import PlanResult, Sandbox
from grader.sandbox.protocol import ModulePlan, Plan, is_failure, unwrap
from grader.settings import Settings
from grader.suite import verdicts
from grader.suite.comparisons import Mismatch, StudentCodeFailed
from grader.suite.diagnosis_session import DiagnosisSession, catalog_source
from grader.suite.suite_probes import Call, SuiteProbes


class GradingPlugin:
    """Registered per grading session: the probes of the suite (:class:`SuiteProbes`, found once),
    what is known of one submission's run once it is started (its copy, what it lacks, what the
    sandbox gave), and, once the checks have run, the advice (:class:`DiagnosisSession`).

    Before :meth:`start` it grades no one: a batch's collecting process only finds the suite's
    probes with it, and each grading process forked from it starts its own submission's run."""

    def __init__(self, *, assignment: Assignment, settings: Settings):
        self.assignment = assignment  # its suite, solutions and rubric
        self.settings = settings
        self.suite: SuiteProbes | None = None  # found at the first collection (a batch: once for every submission)
        self._begin(None, None, {})

    def start(self, sandbox: Sandbox, submission_dir: Path, missing: dict[str, str]) -> None:
        """Begin a submission's run: nothing known of it yet but its copy and what it lacks. (A
        batch's grading process, forked from the process that collected the suite, starts its
        submission's here, then runs its probes: :meth:`run_probes`.)"""
        self._begin(sandbox, submission_dir, missing)

    def _begin(self, sandbox: Sandbox | None, submission_dir: Path | None, missing: dict[str, str]) -> None:
        self.sandbox = sandbox  # None: no submission's run started
        self.submission_dir = submission_dir
        self.missing = missing  # module stem -> why it could not be taken from the submission
        self.json_report: dict | None = None
        self.result = PlanResult()
        self.calls: dict[str, Call] = {}  # test id -> the probe it asks for (the modules the submission has)
        self.modules: dict[str, ModulePlan] = {}  # module stem -> its part of the plan
        # In a batch: tests left out of this run because their probe value already passed (grader.batch.passes),
        # put back in their place in the collection order.
        self.known_passes: list[str] = []
        self.diagnoses: dict[str, Diagnosis] = {}  # module stem -> its diagnosis
        # Where the advice failed (the grade stands; logged for the instructor).
        self.diagnosis_errors: list[str] = []
        # references = "private": the tests counted as passed (DiagnosisSession.excuse).
        self.excused: dict[str, str] = {}

    # -- collection: gather every probe and run them all -------------------------------------
    def pytest_configure(self, config: pytest.Config) -> None:
        config.addinivalue_line("markers", "probe(name, **kwargs): run a probe on the student's module")
        config.addinivalue_line("markers", "points(n): the points a test is worth (every test has them)")

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, session, config, items) -> None:
        """Send this submission's probes to the sandbox: those of every module it has (none started:
        only find the suite's)."""
        if self.sandbox is None:
            self.suite = SuiteProbes.found(self.assignment, items)
        else:
            self.run_probes(items)

    def run_probes(self, items: list) -> None:
        """Find the suite's probes in ``items`` (unless found there already) and run those of
        the modules this submission has."""
        if self.suite is None or self.suite.items is not items:
            self.suite = SuiteProbes.found(self.assignment, items)
        self.modules, self.calls = self.suite.of_submission(self.missing)
        if self.modules:
            self.result = self.run_plan(self.modules, steps=False)  # steps are asked for later, where a diagnosis needs them

    def run_plan(self, modules: dict[str, ModulePlan], *, steps: bool) -> PlanResult:
        """Run ``modules``' probes in the sandbox (``steps``: with the recorded steps of traced probes)."""
        plan = Plan(str(self.submission_dir), modules, self.settings.sandbox_limits(), steps)
        # Enough for every module to use its whole budget, workers at a time, and a margin.
        timeout = self.settings.module_budget * (len(modules) / self.settings.workers + 1) + 60
        return self.sandbox.run(plan, timeout=timeout)

    def pytest_runtest_setup(self, item) -> None:
        """A test whose probe marker or points are wrong is the suite's mistake: a grader error."""
        if self.suite is not None and item.nodeid in self.suite.mistakes:
            raise verdicts.SuiteMistake(self.suite.mistakes[item.nodeid])

    # -- what tests receive ---------------------------------------------------------------------
    @pytest.fixture
    def probed(self, request):
        """The decoded value returned by this test's probe (see the module docstring)."""
        stem = exercise_of(request.node)
        if stem in self.missing:
            raise StudentCodeFailed(self.missing[stem], status="error")
        outcome = self.result.outcomes.get(request.node.nodeid)
        if outcome is None:
            raise RuntimeError(f"no probe outcome for {request.node.nodeid}")
        if outcome.outcome == "error" and outcome.error.grader_fault and self.probe_fails_alone(request.node.nodeid):
            raise verdicts.SuiteMistake(verdicts.probe_bug(stem, self.calls[request.node.nodeid][1], outcome.error))
        if outcome.outcome != "ok":
            raise verdicts.student_failure(stem, outcome, request.node.name)
        return unwrap(outcome.value)

    def probe_fails_alone(self, nodeid: str) -> bool:
        """Whether a failure the sandbox puts down to the probe's own code (the worker is not
        trusted to say so) is the probe's: it fails the same way on the reference solution, run
        here. Without the solutions (a student's template) the sandbox's word is taken."""
        stem, probe, kwargs = self.calls[nodeid]
        source = catalog_source(self.assignment)
        if not isinstance(source, Reference):
            return True
        reference = source.result(stem, None, probe, kwargs)
        return isinstance(reference, dict) and bool(reference.get("grader_fault"))

    @pytest.hookimpl(wrapper=True)
    def pytest_pyfunc_call(self, pyfuncitem):
        """A check that raises on what the student's code gave (a value of a type, shape or size it
        cannot use) is the student's failed check; it is the grader's error only when the same
        check fails on the reference's value for the same probe, run here."""
        try:
            return (yield)
        except (Mismatch, StudentCodeFailed, verdicts.SuiteMistake, AssertionError,
                pytest.skip.Exception, pytest.xfail.Exception, pytest.fail.Exception):
            raise
        except Exception as exc:  # noqa: BLE001 - judged against the reference below
            if self.check_passes_on_reference(pyfuncitem):
                raise verdicts.unusable(exc) from exc
            raise

    def check_passes_on_reference(self, item) -> bool:
        """Whether ``item``'s check passes when its probe value is the reference's (run here)."""
        call = self.calls.get(item.nodeid)
        if call is None or "probed" not in item.funcargs:
            return False
        stem, probe, kwargs = call
        source = catalog_source(self.assignment)
        if source is None:
            return False
        try:
            value = source.result(stem, None, probe, kwargs)
            if is_failure(value):
                return False
            arguments = {name: item.funcargs[name] for name in item._fixtureinfo.argnames if name in item.funcargs}
            item.obj(**{**arguments, "probed": unwrap(value)})
        except Exception:  # noqa: BLE001 - the check fails on the reference too: the grader's
            return False
        return True

    # -- results into pytest-json-report -------------------------------------------------------
    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_makereport(self, item, call):
        """A failed check's report with its exception in one line instead of pytest's formatted
        traceback (source, arguments' reprs: some 10 ms a check), which nobody reads: the verdict
        comes from ``call.excinfo`` (:meth:`pytest_json_runtest_metadata`) and pytest's own output
        is not shown. Set-up and tear-down failures, and skips, keep pytest's report."""
        excinfo = call.excinfo
        if call.when != "call" or excinfo is None or excinfo.errisinstance((pytest.skip.Exception, BaseExceptionGroup)):
            return None
        try:
            said = f"{excinfo.typename}: {str(excinfo.value)[:1000]}"
        except Exception:  # noqa: BLE001 - an exception whose message cannot be made: its type is enough here
            said = excinfo.typename
        return pytest.TestReport(item.nodeid, item.location, dict.fromkeys(item.keywords, 1), "failed", said, call.when,
                                 [(f"Captured {key} {when}", text) for when, key, text in item._report_sections],
                                 call.duration, call.start, call.stop, user_properties=item.user_properties)

    def pytest_json_runtest_metadata(self, item, call):
        """Turn how a test phase ended into the ``grading`` entry of the JSON report."""
        if call.excinfo is None:
            return None
        return {"grading": verdicts.grading_entry(item.nodeid, call.excinfo, self.result.outcomes.get(item.nodeid))}

    def pytest_json_modifyreport(self, json_report):
        if self.sandbox is None:  # no submission's run: nothing to report on
            return
        if self.known_passes:  # passed, as they did on the same value for an earlier student of the batch
            order = self.suite.order
            tests = json_report.get("tests", []) + [{"nodeid": nodeid, "outcome": "passed", "reused": True}
                                                    for nodeid in self.known_passes]
            json_report["tests"] = sorted(tests, key=lambda test: order.get(test["nodeid"], len(order)))
        self.json_report = json_report
        advice = DiagnosisSession(self.assignment, self.settings, self.submission_dir, self.missing, self.modules,
                                  self.calls, self.result, rerun=lambda modules: self.run_plan(modules, steps=True))
        advice.judge(json_report)
        self.excused, self.diagnoses = advice.excused, advice.diagnoses
        self.diagnosis_errors += advice.errors


def calls(function: str, *args, seed: int | None = None):
    """Marker for the built-in probe: call the student's ``function(*args)`` (seeded if asked)."""
    return pytest.mark.probe("call", function=function, args=list(args), seed=seed)
