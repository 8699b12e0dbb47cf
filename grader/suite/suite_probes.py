"""What is known of a grading suite once, the same for every submission: every probe its tests ask
for, module by module, and what is wrong with any test's points or probe marker.

Found at collection (:meth:`SuiteProbes.found`): by each grading run alone, and once for all the
submissions of a ``batch`` (its collecting process collects the suite once; every grading process it
forks takes the probes of the modules its submission has, :meth:`SuiteProbes.of_submission`).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from grader.assignment import Assignment
from grader.rubric import exercise_of
from grader.sandbox import wire
from grader.sandbox.protocol import ModulePlan, ProbeCall
from grader.sandbox.worker import BUILTIN_PROBES
from grader.suite import probe_specs

Call = tuple[str, str, dict]  # (module stem, probe, its arguments)


@dataclass(frozen=True)
class SuiteProbes:
    """Every probe of a suite's collected tests."""

    calls: dict[str, Call]  # test id -> the probe it asks for
    modules: dict[str, ModulePlan]  # module stem -> its part of every plan
    mistakes: dict[str, str]  # test id -> what is wrong with its points or probe marker (a grader error)
    order: dict[str, int]  # test id -> its place in the collection
    items: list  # the collected items they were found in

    @classmethod
    def found(cls, assignment: Assignment, items: list) -> SuiteProbes:
        """The probes the tests ``items`` ask for, with their arguments as plain data; a test whose
        points or probe marker is wrong is never sent to the sandbox."""
        suite, rubric = assignment.suite, assignment.rubric
        calls: dict[str, Call] = {}
        probes: dict[str, list[ProbeCall]] = {}
        mistakes: dict[str, str] = {}
        cases = Counter((exercise_of(item), item.originalname) for item in items)
        for item in items:
            if wrong := points_mistake(assignment, item, cases[exercise_of(item), item.originalname]):
                mistakes[item.nodeid] = wrong
                continue
            marker = item.get_closest_marker("probe")
            stem = exercise_of(item)
            if marker is None or stem not in {e.name for e in rubric.exercises}:  # build_report names the latter
                continue
            wrong = probe_specs.problem(marker.args[0] if marker.args else None, marker.args[1:], marker.kwargs,
                                        suite / "probes" / f"{stem}.py", BUILTIN_PROBES,
                                        shown=f"{suite.parent.name}/{suite.name}/probes/{stem}.py")
            if wrong:  # the suite's mistake: never sent to the sandbox, a grader error for this test
                mistakes[item.nodeid] = wrong
                continue
            probes.setdefault(stem, []).append(ProbeCall(item.nodeid, marker.args[0], wire.encode_args(marker.kwargs)))
            calls[item.nodeid] = (stem, marker.args[0], dict(marker.kwargs))
        modules = {stem: module_plan(assignment, stem, module_probes) for stem, module_probes in probes.items()}
        return cls(calls, modules, mistakes, {item.nodeid: index for index, item in enumerate(items)}, items)

    def of_submission(self, missing: dict[str, str]) -> tuple[dict[str, ModulePlan], dict[str, Call]]:
        """The modules and calls of a submission that lacks ``missing``'s modules."""
        return ({stem: module for stem, module in self.modules.items() if stem not in missing},
                {nodeid: call for nodeid, call in self.calls.items() if call[0] not in missing})


def module_plan(assignment: Assignment, stem: str, probes: list[ProbeCall]) -> ModulePlan:
    """``stem``'s part of every plan: its probe file, the references it builds on, its phase, ``probes``."""
    rubric = assignment.rubric
    uses = rubric.exercise(stem).uses
    # Private references never enter the sandbox: the module imports the student's own.
    return ModulePlan(str(assignment.suite / "probes" / f"{stem}.py"),
                      uses={} if rubric.private else {dep: str(assignment.solutions / f"{dep}.py") for dep in uses},
                      phase=rubric.phase(stem), probes=probes)


def points_mistake(assignment: Assignment, item, cases: int) -> str:
    """What is wrong with a test's points (none, or not where the rubric reads them) or with
    the number of its cases (``cases`` items were collected for its function); "" if nothing."""
    marker = item.get_closest_marker("points")
    if marker is None:
        return "this test has no points: give it @pytest.mark.points(N)"
    try:
        exercise = assignment.rubric.exercise(exercise_of(item))
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
