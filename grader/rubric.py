"""The rubric: which exercises an assignment has, and the points of each hidden test.

A suite folder holds ``rubric.toml``::

    title = "Coding attention mechanisms"

    [exercises.mha]
    title = "Multi-head attention (3.6)"
    uses = ["causal"]          # graded against the reference causal.py
    [exercises.mha.points]
    test_wrapper_textbook = 2  # points for every test item of that function

The exercise names are the module stems, the same in solutions/, exercises/ and tests/.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from pathlib import Path


class RubricError(ValueError):
    """The rubric is missing or malformed (an instructor's mistake, not a student's)."""


@dataclass(frozen=True)
class Exercise:
    """One exercise module and the points of its tests."""

    name: str
    title: str
    points: dict[str, float]
    uses: tuple[str, ...] = ()


@dataclass(frozen=True)
class Rubric:
    """All exercises of an assignment, in the order they are taught."""

    assignment: str
    title: str
    exercises: tuple[Exercise, ...] = field(default_factory=tuple)

    def exercise(self, name: str) -> Exercise:
        """The exercise called ``name``."""
        for exercise in self.exercises:
            if exercise.name == name:
                return exercise
        raise KeyError(name)

    @property
    def max_score(self) -> float:
        """Total points over all exercises (test functions counted once each)."""
        return sum(sum(e.points.values()) for e in self.exercises)


def load(suite_dir: Path, assignment: str) -> Rubric:
    """Read ``suite_dir/rubric.toml``."""
    path = suite_dir / "rubric.toml"
    try:
        data = tomllib.loads(path.read_text())
    except FileNotFoundError:
        raise RubricError(f"no rubric at {path}") from None
    except tomllib.TOMLDecodeError as exc:
        raise RubricError(f"{path}: {exc}") from None
    exercises = []
    for name, spec in data.get("exercises", {}).items():
        points = spec.get("points", {})
        if not points or not all(isinstance(p, (int, float)) and p > 0 for p in points.values()):
            raise RubricError(f"{path}: exercise {name} needs positive points for its tests")
        exercises.append(
            Exercise(name, spec.get("title", name), {k: float(v) for k, v in points.items()}, tuple(spec.get("uses", ())))
        )
    if not exercises:
        raise RubricError(f"{path}: no exercises")
    declared = {e.name: e.uses for e in exercises}
    exercises = [Exercise(e.name, e.title, e.points, dependencies(e.name, declared, path)) for e in exercises]
    return Rubric(assignment, data.get("title", assignment), tuple(exercises))


def dependencies(name: str, declared: dict[str, tuple[str, ...]], path: Path) -> tuple[str, ...]:
    """Every module ``name`` builds on, directly or not, each after the modules it needs.

    The sandbox loads the reference modules in this order, so ``multihead`` may declare only
    ``scoring`` and still get the reference ``masked_softmax`` that ``scoring`` imports.
    """
    order: list[str] = []

    def visit(module: str, trail: tuple[str, ...]) -> None:
        if module in trail:
            raise RubricError(f"{path}: circular uses: {' -> '.join(trail + (module,))}")
        if module not in declared:
            raise RubricError(f"{path}: {trail[-1]} uses {module}, which is not an exercise")
        for needed in declared[module]:
            visit(needed, trail + (module,))
        if module not in order:
            order.append(module)

    for needed in declared[name]:
        visit(needed, (name,))
    return tuple(order)
