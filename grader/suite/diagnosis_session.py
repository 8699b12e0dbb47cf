"""The advice after a submission's checks have run: which failed only on the student's own
dependency (``references = "private"``), one diagnosis per module with a failing check (the sandbox
runs its failed traced probes again, with steps), and never two stories about one module.

Advice only: the grade stands whatever happens here; what fails is logged in ``errors`` for the
instructor. The grading plugin (:mod:`grader.suite.plugin`) opens one session per submission, once
pytest-json-report has its JSON (:meth:`DiagnosisSession.judge`).
"""

from __future__ import annotations

import dataclasses
import functools
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from grader.assignment import Assignment
from grader.diagnosis import catalog
from grader.diagnosis.diagnose import diagnose
from grader.diagnosis.live_reference import Reference
from grader.diagnosis.sent import ProbeRun
from grader.model import Diagnosis
from grader.sandbox.client import PlanResult
from grader.sandbox.protocol import ModulePlan, is_failure, is_traced, unwrap
from grader.settings import Settings
from grader.suite import verdicts
from grader.suite.suite_probes import Call


@dataclass
class DiagnosisSession:
    """One submission's run, as the advice reads it, and what it finds."""

    assignment: Assignment
    settings: Settings
    submission_dir: Path
    missing: dict[str, str]  # module stem -> why it could not be taken from the submission
    modules: dict[str, ModulePlan]  # the modules the graded run ran
    calls: dict[str, Call]  # test id -> the probe it asked for
    result: PlanResult  # what the graded run gave
    rerun: Callable[[dict[str, ModulePlan]], PlanResult]  # the sandbox, for the failed probes again with steps
    # Test id -> the student's modules it ran on that fail their own checks, for tests that failed only
    # because of them (:meth:`excuse`); the report counts them as passed.
    excused: dict[str, str] = field(default_factory=dict)
    diagnoses: dict[str, Diagnosis] = field(default_factory=dict)  # module stem -> its diagnosis
    errors: list[str] = field(default_factory=list)  # where the advice failed (the grade stands)

    @property
    def rubric(self):
        return self.assignment.rubric

    def judge(self, json_report: dict) -> None:
        """Excuse, diagnose and keep one story (each failure logged, the grade standing)."""
        try:
            self.excused = self.excuse(json_report)
        except Exception:  # noqa: BLE001 - then nothing is excused: the checks' own verdicts stand
            self.excused = {}
            self.errors.append(f"judging checks on the student's own dependencies failed:\n"
                               f"{traceback.format_exc(limit=3)}")
        try:
            self.diagnoses = self.diagnose(json_report)
        except Exception:  # noqa: BLE001 - advice only: the grade stands without a diagnosis
            self.diagnoses = {}
            self.errors.append(f"the diagnosis failed:\n{traceback.format_exc(limit=3)}")
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
                self.errors.append(f"the diagnosis of {stem} failed:\n{traceback.format_exc(limit=3)}")
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
            outcomes = self.rerun(modules).outcomes
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
