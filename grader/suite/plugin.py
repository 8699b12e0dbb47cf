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

import dataclasses
import functools
import traceback
from collections import Counter
from pathlib import Path

import pytest

from grader.assignment import Assignment
from grader.diagnosis import catalog
from grader.diagnosis.diagnose import diagnose
from grader.diagnosis.live_reference import Reference
from grader.diagnosis.sent import ProbeRun
from grader.model import Diagnosis
from grader.rubric import exercise_of
from grader.sandbox import wire
from grader.sandbox.client import PlanResult, Sandbox
from grader.sandbox.protocol import ModulePlan, Plan, ProbeCall, is_failure, is_traced, unwrap
from grader.sandbox.worker import BUILTIN_PROBES
from grader.settings import Settings
from grader.suite import probe_specs, verdicts
from grader.suite.comparisons import Mismatch, StudentCodeFailed


class GradingPlugin:
    """Registered per grading session with what it needs to run student code."""

    def __init__(
        self,
        *,
        assignment: Assignment,
        settings: Settings,
        sandbox: Sandbox,
        submission_dir: Path,
        missing: dict[str, str],
    ):
        self.assignment = assignment  # its suite, solutions and rubric
        self.rubric = assignment.rubric
        self.settings = settings
        self.sandbox = sandbox
        self.submission_dir = submission_dir
        self.missing = missing  # module stem -> why it could not be taken from the submission
        self.json_report: dict | None = None
        self.result = PlanResult()
        self.calls: dict[str, tuple[str, str, dict]] = {}  # test id -> (module stem, probe, its arguments)
        self.modules: dict[str, ModulePlan] = {}  # module stem -> its part of the plan
        # What find_probes found in the suite, for every module (a submission's are those it has):
        self.suite_calls: dict[str, tuple[str, str, dict]] = {}
        self.suite_modules: dict[str, ModulePlan] = {}
        self.probed_items: list | None = None  # the items they were found in
        self.diagnoses: dict[str, Diagnosis] = {}  # module stem -> its diagnosis
        # Where a diagnosis failed (advice only: the grade stands; logged for the instructor).
        self.diagnosis_errors: list[str] = []
        self.suite_mistakes: dict[str, str] = {}  # test id -> what is wrong with its probe marker
        # In a batch: tests left out of this run because their probe value already passed (grader.batch.passes),
        # put back in their place in the collection order (found with the probes).
        self.known_passes: list[str] = []
        self.order: dict[str, int] = {}
        # references = "private": test id -> the student's modules it ran on that fail their own checks,
        # for tests that failed only because of them (``excuse``); the report counts them as passed.
        self.excused: dict[str, str] = {}

    # -- collection: gather every probe and run them all -------------------------------------
    def pytest_configure(self, config: pytest.Config) -> None:
        config.addinivalue_line("markers", "probe(name, **kwargs): run a probe on the student's module")
        config.addinivalue_line("markers", "points(n): the points a test is worth (every test has them)")

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, session, config, items) -> None:
        """Send this submission's probes to the sandbox: those of every module it has."""
        if self.probed_items is not items:  # in a batch's grading process, the collector found them already
            self.find_probes(items)
        self.modules = {stem: spec for stem, spec in self.suite_modules.items() if stem not in self.missing}
        self.calls = {nodeid: call for nodeid, call in self.suite_calls.items() if call[0] not in self.missing}
        if self.modules:
            self.result = self.run_plan(self.modules, steps=False)  # steps are asked for later, where a diagnosis needs them

    def find_probes(self, items) -> None:
        """Every probe the suite's tests ask for, module by module, with its arguments as plain data,
        and what is wrong with any test's points or probe marker (the same for every submission)."""
        suite = self.assignment.suite
        probes: dict[str, list[ProbeCall]] = {}
        cases = Counter((exercise_of(item), item.originalname) for item in items)
        for item in items:
            if wrong := self.points_mistake(item, cases[exercise_of(item), item.originalname]):
                self.suite_mistakes[item.nodeid] = wrong
                continue
            marker = item.get_closest_marker("probe")
            stem = exercise_of(item)
            if marker is None:
                continue
            try:
                self.rubric.exercise(stem)
            except KeyError:  # build_report names the test as a grader error
                continue
            probes_file = suite / "probes" / f"{stem}.py"
            wrong = probe_specs.problem(marker.args[0] if marker.args else None, marker.args[1:], marker.kwargs,
                                        probes_file, BUILTIN_PROBES, shown=f"{suite.parent.name}/{suite.name}/probes/{stem}.py")
            if wrong:  # the suite's mistake: never sent to the sandbox, a grader error for this test
                self.suite_mistakes[item.nodeid] = wrong
                continue
            probes.setdefault(stem, []).append(ProbeCall(item.nodeid, marker.args[0], wire.encode_args(marker.kwargs)))
            self.suite_calls[item.nodeid] = (stem, marker.args[0], dict(marker.kwargs))
        self.suite_modules = {stem: self.module_plan(stem, calls) for stem, calls in probes.items()}
        self.probed_items = items
        self.order = {item.nodeid: index for index, item in enumerate(items)}

    def module_plan(self, stem: str, probes: list[ProbeCall]) -> ModulePlan:
        """``stem``'s part of every plan: its probe file, the references it builds on, its phase, ``probes``."""
        solutions = self.assignment.solutions
        uses = self.rubric.exercise(stem).uses
        # Private references never enter the sandbox: the module imports the student's own.
        return ModulePlan(str(self.assignment.suite / "probes" / f"{stem}.py"),
                          uses={} if self.rubric.private else {dep: str(solutions / f"{dep}.py") for dep in uses},
                          phase=self.rubric.phase(stem), probes=probes)

    def run_plan(self, modules: dict[str, ModulePlan], *, steps: bool) -> PlanResult:
        """Run ``modules``' probes in the sandbox (``steps``: with the recorded steps of traced probes)."""
        plan = Plan(str(self.submission_dir), modules, self.settings.sandbox_limits(), steps)
        # Enough for every module to use its whole budget, workers at a time, and a margin.
        timeout = self.settings.module_budget * (len(modules) / self.settings.workers + 1) + 60
        return self.sandbox.run(plan, timeout=timeout)

    def points_mistake(self, item, cases: int) -> str:
        """What is wrong with a test's points (none, or not where the rubric reads them) or with
        the number of its cases (``cases`` items were collected for its function); "" if nothing."""
        marker = item.get_closest_marker("points")
        if marker is None:
            return "this test has no points: give it @pytest.mark.points(N)"
        try:
            exercise = self.rubric.exercise(exercise_of(item))
        except KeyError:
            return f"{exercise_of(item)} is not an exercise of the rubric"
        declared = exercise.points.get(item.originalname)
        if declared is None or list(marker.args) != [declared]:
            return "write this test's points as @pytest.mark.points(N) right above its function"
        if cases != exercise.cases_of(item.originalname):
            return (f"{item.originalname} runs {cases} cases, but the rubric counted {exercise.cases_of(item.originalname)} "
                    "from its @pytest.mark.parametrize (or its points' cases=): list every case there, literally, "
                    "or say how many in @pytest.mark.points(N, cases=K) (cases made by fixture params or "
                    "pytest_generate_tests are not counted)")
        return ""

    def pytest_runtest_setup(self, item) -> None:
        """A test whose probe marker or points are wrong is the suite's mistake: a grader error."""
        if item.nodeid in self.suite_mistakes:
            raise verdicts.SuiteMistake(self.suite_mistakes[item.nodeid])

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
        if self.known_passes:  # passed, as they did on the same value for an earlier student of the batch
            tests = json_report.get("tests", []) + [{"nodeid": nodeid, "outcome": "passed", "reused": True}
                                                    for nodeid in self.known_passes]
            json_report["tests"] = sorted(tests, key=lambda test: self.order.get(test["nodeid"], len(self.order)))
        self.json_report = json_report
        try:
            self.excused = self.excuse(json_report)
        except Exception:  # noqa: BLE001 - then nothing is excused: the checks' own verdicts stand
            self.excused = {}
            self.diagnosis_errors.append(f"judging checks on the student's own dependencies failed:\n"
                                         f"{traceback.format_exc(limit=3)}")
        try:
            self.diagnoses = self.diagnose(json_report)
        except Exception:  # noqa: BLE001 - advice only: the grade stands without a diagnosis
            self.diagnoses = {}
            self.diagnosis_errors.append(f"the diagnosis failed:\n{traceback.format_exc(limit=3)}")
        self.one_story(json_report)

    def one_story(self, json_report) -> None:
        """Never two stories: where a module's diagnosis tells one (a confirmed concept, the first
        differing step at the student's line, an error explained), the hints of its checks of the
        recorded computation (traced probes: what a check of values guesses about the cause) are
        not shown beside it. Hints of checks of structure, and hints a check proves by an exact
        relation, state what was observed and stay."""
        told = {stem for stem, found in self.diagnoses.items()
                if found.concepts or found.error or (found.stage and found.stage != "result")}
        for test in json_report.get("tests", []):
            call = self.calls.get(test["nodeid"])
            feedback = ((test.get("metadata") or {}).get("grading") or {}).get("feedback")
            if (call is None or call[0] not in told or not isinstance(feedback, dict) or not feedback.get("hint")
                    or feedback.get("proven")):
                continue
            outcome = self.result.outcomes.get(test["nodeid"])
            value = outcome.value if outcome is not None and outcome.outcome == "ok" else None
            if is_traced(value):
                feedback["hint"] = ""

    def diagnose(self, json_report) -> dict[str, Diagnosis]:
        """One diagnosis per module with a failing check (see grader.diagnosis.diagnose)."""
        failed: dict[str, dict] = {}
        for test in json_report.get("tests", []):
            if test["outcome"] != "passed" and test["nodeid"] not in self.excused:
                grading = (test.get("metadata") or {}).get("grading") or {}
                failed[test["nodeid"]] = {**(grading.get("feedback") or {})}
                failed[test["nodeid"]].setdefault("checked", grading.get("message", ""))
        if not failed:
            return {}
        source = catalog_source(self.assignment)
        runs: dict[str, list[ProbeRun]] = {}
        for nodeid, (stem, probe, kwargs) in self.calls.items():
            outcome = self.result.outcomes.get(nodeid)
            student, where, entered, called = self.student_result(nodeid), "", "", ""
            if outcome is not None and outcome.outcome != "ok" and student is not None:
                where, entered, called = outcome.error.where, outcome.error.entered, outcome.error.called_from
            feedback = failed.get(nodeid, {})
            runs.setdefault(stem, []).append(ProbeRun(nodeid, probe, kwargs, student, where, nodeid in failed,
                                                      feedback.get("checked") or "", feedback, entered=entered,
                                                      called=called))
        if source is not None:
            self.add_steps(runs)
        diagnoses = {}
        # The student's modules whose every check ran here and passed: a step made in one of them (their own
        # CausalAttention, which the public check of mha runs) is made as the reference's would be.
        sound = frozenset(f"{stem}.py" for stem, module_runs in runs.items()
                          if module_runs and all(r.student is not None and not r.failed for r in module_runs))
        for stem, module_runs in runs.items():
            try:
                found = diagnose(stem, source, module_runs, self.submission_dir, sound)
            except Exception:  # noqa: BLE001 - advice only: this module's grade stands without it
                self.diagnosis_errors.append(f"the diagnosis of {stem} failed:\n{traceback.format_exc(limit=3)}")
                continue
            if found is not None:
                diagnoses[stem] = found
        for nodeid, (stem, _, _) in self.calls.items():  # a module that does not compile: where, with its line
            outcome = self.result.outcomes.get(nodeid)
            if (outcome is not None and outcome.outcome == "timeout" and stem in diagnoses
                    and diagnoses[stem].error.startswith("too slow") and "running the check" not in diagnoses[stem].error):
                diagnoses[stem].error += f" It was running the check {nodeid.split('::')[-1]}."  # the first that timed out
            kind = outcome.error.type if outcome is not None and outcome.outcome == "module_error" else ""
            if stem not in diagnoses and kind in ("SyntaxError", "IndentationError", "TabError"):
                if found := verdicts.syntax_error_diagnosis(self.submission_dir / f"{stem}.py", kind):
                    diagnoses[stem] = found
        return diagnoses

    def student_result(self, nodeid: str):
        """What the student's code gave on a test's probe, as the catalog compares it: the value, or
        the error it raised (None where it gave nothing to compare: not attempted, the probe's own fault)."""
        outcome = self.result.outcomes.get(nodeid)
        if outcome is not None and outcome.outcome == "ok":
            return outcome.value
        if (outcome is not None and outcome.outcome in ("error", "crash", "timeout")
                and not outcome.error.not_attempted and not outcome.error.grader_fault):
            return catalog.failure(outcome.error.type or outcome.outcome, outcome.error.message)
        return None

    def excuse(self, json_report) -> dict[str, str]:
        """``references = "private"``: one mistake costs points once, without a reference beside student code.

        A module is graded on the student's own modules it uses. Where one of those fails its own
        checks (not counting those it fails only through a module below it), and the catalog's known mistakes explain every result of it that differs from the
        reference's (confirmed as for a diagnosis), each failed check of the module whose probe
        gave what the reference module gives on the reference dependencies *with those mistakes
        made* (run here, in the trusted process: only the instructor's code) failed only because
        of the dependency: ``{test id: the dependencies}``, counted as passed in the report.
        A dependency whose mistake the catalog does not know excuses nothing: those checks cost
        their points, and the report says to fix that module first (``grade.report_of_run``)."""
        if not self.rubric.private:
            return {}
        source = catalog_source(self.assignment)
        if not isinstance(source, Reference):
            return {}
        outcomes = {test["nodeid"]: test["outcome"] for test in json_report.get("tests", [])}
        excused: dict[str, str] = {}

        def fails(stem: str) -> bool:  # by a mistake of its own: a check it fails only through its dependency does not count
            return any(exercise_of_id(nodeid) == stem and outcome != "passed" and nodeid not in excused
                       for nodeid, outcome in outcomes.items())

        # A module's dependencies first (``uses`` holds every module below it, so theirs are fewer).
        for exercise in sorted(self.rubric.exercises, key=lambda exercise: len(exercise.uses)):
            broken = [dependency for dependency in exercise.uses if fails(dependency)]
            if not broken or exercise.name not in self.modules or exercise.name in self.missing:
                continue
            mistaken = []
            for dependency in broken:
                probes = [(probe, kwargs, self.student_result(nodeid))
                          for nodeid, (stem, probe, kwargs) in self.calls.items() if stem == dependency]
                known = [name for name, _ in catalog.confirmed(source, dependency, [p for p in probes if p[2] is not None])]
                if dependency in self.missing or not known:
                    break
                mistaken.append((dependency, tuple(known)))
            else:
                for nodeid, (stem, probe, kwargs) in self.calls.items():
                    if stem != exercise.name or outcomes.get(nodeid, "passed") == "passed":
                        continue
                    student = self.student_result(nodeid)
                    right = source.result_built_on(stem, exercise.uses, tuple(mistaken), probe, kwargs)
                    if (student is not None and not (isinstance(right, dict) and right.get("grader_fault"))
                            and catalog.agree(unwrap(student), unwrap(right))):
                        excused[nodeid] = ", ".join(broken)
        return excused

    def add_steps(self, runs: dict[str, list[ProbeRun]]) -> None:
        """Give the failed traced probes the steps their diagnosis compares: the sandbox runs them
        again, with steps (the graded run sends none). A result that does not come back the same
        (student code that is not deterministic) keeps its value and stays without steps: the
        diagnosis then stops at what differs in the result."""
        again = {run.nodeid: run for module_runs in runs.values() for run in module_runs
                 if run.failed and (is_traced(run.student) or is_failure(run.student))}
        # A module's budget is paid once: the re-run gets what the graded run left of it (its
        # supervisor measured what it used), and a module with nothing left is not run again.
        left = {stem: self.settings.module_budget - self.result.spent.get(stem, self.settings.module_budget)
                for stem in self.modules}
        modules = {stem: dataclasses.replace(module, probes=[p for p in module.probes if p.id in again], budget=left[stem])
                   for stem, module in self.modules.items() if left[stem] >= MIN_RERUN}
        modules = {stem: module for stem, module in modules.items() if module.probes}
        if not modules:
            return
        try:
            outcomes = self.run_plan(modules, steps=True).outcomes
        except Exception:  # noqa: BLE001 - steps only sharpen a diagnosis; the grade stands without them
            return
        for nodeid, run in again.items():
            outcome = outcomes.get(nodeid)
            if is_failure(run.student):  # the same error again: the shapes its steps had until it raised
                if (outcome is not None and outcome.outcome == "error" and outcome.error.shapes
                        and catalog.agree(catalog.failure(outcome.error.type, outcome.error.message), run.student)):
                    run.shapes = outcome.error.shapes
                continue
            if (outcome is not None and outcome.outcome == "ok"
                    and catalog.agree(unwrap(outcome.value), unwrap(run.student))):
                run.student = outcome.value


def exercise_of_id(nodeid: str) -> str:
    """The exercise stem of a test id: ``tests/ch03/test_causal.py::test_x[1]`` -> ``causal``."""
    return Path(nodeid.split("::", 1)[0]).stem.removeprefix("test_")


MIN_RERUN = 0.5  # seconds of a module's budget left below which the diagnosis does not run it again


def calls(function: str, *args, seed: int | None = None):
    """Marker for the built-in probe: call the student's ``function(*args)`` (seeded if asked)."""
    return pytest.mark.probe("call", function=function, args=list(args), seed=seed)




@functools.cache
def catalog_source(assignment: Assignment):
    """Where reference and mistake results come from: the precomputed table beside a public
    suite, else the reference solutions run live, else nowhere (localization only). Read once
    per process (a batch reads it before it forks: every grading process shares it)."""
    from grader.diagnosis.public_catalog import Table

    suite, solutions = assignment.suite, assignment.solutions
    if (suite / Table.FILE).is_file():
        return Table(suite / Table.FILE)
    if solutions.is_dir() and any(solutions.glob("*.py")):
        return Reference(suite, solutions)
    return None
