"""The rubric: which exercises an assignment has, in which order, and the points of each test.

A suite folder holds ``rubric.toml`` (titles, teaching order, dependencies)::

    title = "Coding attention mechanisms"

    [exercises.mha]
    title = "Multi-head attention (3.6)"
    uses = ["causal"]          # graded against the reference causal.py

and the tests, each with its points next to it (for every test item of that function)::

    @pytest.mark.points(2)
    @pytest.mark.probe("forward", ...)
    def test_wrapper_textbook(probed): ...

The points are read from ``test_<exercise>.py`` with :mod:`ast` (nothing is imported), so the
rubric is known without running pytest; the grading plugin checks at collection that every test
carries them. The exercise names are the module stems, the same in solutions/, exercises/ and tests/.
"""

from __future__ import annotations

import ast
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
        if "points" in spec:
            raise RubricError(f"{path}: exercise {name}: points belong next to each test, "
                              f"as @pytest.mark.points(N) in test_{name}.py, not in the rubric")
        exercises.append(Exercise(name, spec.get("title", name), points_of(suite_dir / f"test_{name}.py"),
                                  tuple(spec.get("uses", ()))))
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


def points_of(test_file: Path) -> dict[str, float]:
    """``{test function: points}`` from the ``@pytest.mark.points(N)`` decorators of a test file."""
    try:
        tree = ast.parse(test_file.read_text(), filename=str(test_file))
    except FileNotFoundError:
        raise RubricError(f"no tests at {test_file}") from None
    except SyntaxError as exc:
        raise RubricError(f"{test_file}: {exc}") from None
    points = {}
    for node in tree.body:
        if not isinstance(node, ast.FunctionDef) or not node.name.startswith("test"):
            continue
        for decorator in node.decorator_list:
            if ast.unparse(getattr(decorator, "func", decorator)) != "pytest.mark.points":
                continue
            value = decorator.args[0] if isinstance(decorator, ast.Call) and len(decorator.args) == 1 else None
            number = value.value if isinstance(value, ast.Constant) else None
            if type(number) not in (int, float) or not number > 0 or decorator.keywords:
                raise RubricError(f"{test_file}:{decorator.lineno}: {node.name}: points should be one positive "
                                  f"number, as in @pytest.mark.points(1)")
            points[node.name] = float(number)
    if not points:
        raise RubricError(f"{test_file}: no test carries @pytest.mark.points(N)")
    return points
