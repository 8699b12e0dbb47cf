"""A module checked on the student's own dependency: when that dependency fails, say to fix it first.

``check`` (the public suite ships no reference) and ``grade`` (an assignment whose references are
private) both grade a module with the student's own modules it builds on; a mistake there shows
up in the module's checks too, and the message should point at where it lives.
"""

from __future__ import annotations

from grader.model import Report


def dependency_first(report: Report, dependencies: dict[str, dict]) -> None:
    """Where a module's failing checks ran on a dependency that fails its own checks, say to fix that
    module first (the first one down the chain that fails), not what the dependency's mistake looks
    like in this module: those checks' messages say so, their hints and the module's diagnosis go."""
    by_name = {exercise.name: exercise for exercise in report.exercises}

    def fails(name: str) -> bool:
        return name in by_name and any(t.status != "passed" for t in by_name[name].tests)

    def first_to_fix(name: str, trail: tuple[str, ...] = ()) -> str | None:
        for deeper in dependencies.get(name, {}):
            if deeper not in trail and (found := first_to_fix(deeper, trail + (name,))):
                return found
        return name if fails(name) else None

    for exercise in report.exercises:
        if exercise.not_attempted:  # the module itself is still the template's stub
            continue
        for dependency, tests in dependencies.get(exercise.name, {}).items():
            first = first_to_fix(dependency)
            affected = [t for t in exercise.tests if t.status != "passed"
                        and (tests == "all" or t.name.split("[")[0] in tests)]
            if first is None or not affected:
                continue
            why = f"fix {first}.py first: this check runs on your {first}.py, which fails its own checks"
            for test in affected:
                test.message = f"{why} ({test.message})" if test.message else why
                if test.feedback is not None:
                    test.feedback.hint = ""
            exercise.message = (f"fix {first}.py first: {exercise.name}.py is checked with your {first}.py, "
                                f"which fails its own checks")
            exercise.diagnosis = None
            break
