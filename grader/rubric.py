"""The rubric: which exercises an assignment has, in which order, and the points of each test.

A suite folder holds ``rubric.toml`` (titles, teaching order, dependencies)::

    title = "Coding attention mechanisms"
    references = "published"   # or "private": no reference module ever runs next to student code

    [exercises.mha]
    title = "Multi-head attention (3.6)"
    uses = ["causal"]          # graded against the reference causal.py

``references = "private"`` keeps the reference solutions away from student code: a module is then
graded with the student's own modules it uses, never with the reference's (see
docs/adding-an-assignment.md, *References that stay unseen*).

and the tests, each with its points next to it::

    @pytest.mark.points(2)
    @pytest.mark.probe("forward", ...)
    def test_wrapper_textbook(probed): ...

A parametrized test is worth its points once per case, and its cases are listed literally
(``@pytest.mark.parametrize("x", [a, b, c])``: three cases, each worth the points; or
``CASES = [a, b, c]`` at module level and ``@pytest.mark.parametrize("x", CASES)``), so the
rubric counts them too; cases made by a function (a table two exercises' tests share) are
counted in the points marker, ``@pytest.mark.points(1, cases=3)``. Tests that two exercises
share are written once, in a module of the suite folder, and each test file takes them, by
assignment (``test_forward_other = both_versions.test_forward_other``, where it should stand in
the file's order) or by ``from both_versions import test_forward_other``: pytest collects them
there, and the rubric reads their points from that module. The points and the cases are read
from ``test_<exercise>.py`` with :mod:`ast` (nothing is imported), so the rubric, and every
total, is known without running pytest; the grading plugin checks at collection that every test
carries its points and runs as many cases as were counted. The exercise names are the module stems, the same in
solutions/, exercises/ and tests/.
"""

from __future__ import annotations

import ast
import tomllib
import dataclasses
from dataclasses import dataclass, field
from pathlib import Path


class RubricError(ValueError):
    """The rubric is missing or malformed (an instructor's mistake, not a student's)."""


@dataclass(frozen=True)
class Exercise:
    """One exercise module and the points of its tests."""

    name: str
    title: str
    points: dict[str, float]  # test function -> what each of its cases is worth
    uses: tuple[str, ...] = ()
    cases: dict[str, int] = field(default_factory=dict)  # test function -> its cases, where more than one
    # Public suites, and hidden ones with ``references = "private"``: module it is checked with (the
    # student's own) -> its checks that run on it (test names, or "all"; hidden: all of ``uses`` when
    # not given); the report says "fix that module first" on those that fail while that module fails.
    builds_on: dict[str, list[str] | str] = field(default_factory=dict)

    def cases_of(self, function: str) -> int:
        """How many cases (test items) ``function`` runs: 1 unless it is parametrized."""
        return self.cases.get(function, 1)

    @property
    def max_score(self) -> float:
        """The exercise's points: every case of every test."""
        return sum(points * self.cases_of(function) for function, points in self.points.items())


REFERENCES = ("published", "private")


@dataclass(frozen=True)
class Rubric:
    """All exercises of an assignment, in the order they are taught."""

    assignment: str
    title: str
    exercises: tuple[Exercise, ...] = field(default_factory=tuple)
    # "published": a module is graded with the reference modules it uses loaded beside it (the
    # books' code, which students may read anyway); "private": never, it runs on the student's own.
    references: str = "published"

    @property
    def private(self) -> bool:
        """Whether no reference module may run next to student code (``references = "private"``)."""
        return self.references == "private"

    def phase(self, name: str) -> int:
        """When ``name``'s workers may run in a plan (:func:`grader.sandbox.schedule.phases`): 0 for a
        module that holds no reference, else one more than the latest of the modules it uses, so
        that each reference's own module has run before any worker holds that reference."""
        uses = () if self.private else self.exercise(name).uses
        return max((self.phase(dependency) + 1 for dependency in uses), default=0)

    def exercise(self, name: str) -> Exercise:
        """The exercise called ``name``."""
        for exercise in self.exercises:
            if exercise.name == name:
                return exercise
        raise KeyError(name)

    @property
    def max_score(self) -> float:
        """Total points over all exercises."""
        return sum(e.max_score for e in self.exercises)


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
        points, cases = tests_of(suite_dir / f"test_{name}.py")
        exercises.append(Exercise(name, spec.get("title", name), points, tuple(spec.get("uses", ())), cases,
                                  dict(spec.get("builds_on", {}))))
    if not exercises:
        raise RubricError(f"{path}: no exercises")
    declared = {e.name: e.uses for e in exercises}
    exercises = [dataclasses.replace(e, uses=dependencies(e.name, declared, path)) for e in exercises]
    references = data.get("references", "published")
    if references not in REFERENCES:
        raise RubricError(f"{path}: references = {references!r}: say \"published\" (reference modules run next to "
                          f"student code that builds on them) or \"private\" (never)")
    return Rubric(assignment, data.get("title", assignment), tuple(exercises), references)


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


def tests_of(test_file: Path) -> tuple[dict[str, float], dict[str, int]]:
    """``({test function: points of each case}, {parametrized test function: its cases})``, read
    from the ``@pytest.mark.points(N)`` and ``@pytest.mark.parametrize`` decorators of a test file
    and of the shared tests it takes from a module beside it (see :func:`suite_tests`)."""
    points, cases = {}, {}
    for name, function, lists, where in suite_tests(test_file):
        points.pop(name, None)  # a later binding of a name replaces the earlier one, as in pytest
        cases.pop(name, None)
        for decorator in function.decorator_list if function else ():
            if ast.unparse(getattr(decorator, "func", decorator)) != "pytest.mark.points":
                continue
            value = decorator.args[0] if isinstance(decorator, ast.Call) and len(decorator.args) == 1 else None
            number = value.value if isinstance(value, ast.Constant) else None
            declared = {k.arg: k.value.value if isinstance(k.value, ast.Constant) else None
                        for k in getattr(decorator, "keywords", [])}
            if (type(number) not in (int, float) or not number > 0 or set(declared) - {"cases"}
                    or ("cases" in declared and (type(declared["cases"]) is not int or declared["cases"] < 1))):
                raise RubricError(f"{where}:{decorator.lineno}: {function.name}: points should be one positive "
                                  f"number, as in @pytest.mark.points(1) (or @pytest.mark.points(1, cases=3))")
            points[name] = float(number)
            count = declared["cases"] if "cases" in declared else case_count(function, lists, where)
            if count != 1:
                cases[name] = count
    if not points:
        raise RubricError(f"{test_file}: no test carries @pytest.mark.points(N)")
    return points, cases


def parsed(path: Path) -> ast.Module:
    """The syntax tree of a suite's file; a missing or broken file is the rubric's error."""
    try:
        return ast.parse(path.read_text(), filename=str(path))
    except FileNotFoundError:
        raise RubricError(f"no tests at {path}") from None
    except SyntaxError as exc:
        raise RubricError(f"{path}: {exc}") from None


def suite_tests(test_file: Path):
    """Each module-level binding of a ``test*`` name in a test file, in order, as
    ``(the name, the function's syntax tree or None, the module-level lists of the file that
    defines it, that file)``. A test defined in the file is its own function. A test taken from a
    module of the same folder, ``shared.py``, by ``from shared import test_x`` or by
    ``test_x = shared.test_x`` (after ``import shared``, or ``import shared as s``), is the last
    ``test_x`` that module defines. Any other binding (data, say) gives None: no test the rubric
    counts, as pytest collects no test from it."""
    tree, folder, modules, read = parsed(test_file), test_file.parent, {}, {}

    def shared(module: str, attribute: str, name: str, line: int):
        path = folder / f"{module}.py"
        if not path.is_file():
            raise RubricError(f"{test_file}:{line}: {name}: take shared tests from a module of this folder, "
                              f"not from {module}")
        if module not in read:  # each shared module parsed once: (its functions, the last of each name; its lists)
            module_tree = parsed(path)
            read[module] = ({f.name: f for f in module_tree.body if isinstance(f, ast.FunctionDef)},
                            module_lists(module_tree))
        functions, shared_lists = read[module]
        if attribute not in functions:
            raise RubricError(f"{test_file}:{line}: {name}: {path.name} defines no test {attribute}")
        return name, functions[attribute], shared_lists, path

    lists = module_lists(tree)
    for node in tree.body:
        if isinstance(node, ast.Import):
            modules.update({alias.asname or alias.name: alias.name for alias in node.names if "." not in alias.name})
        elif isinstance(node, ast.ImportFrom):
            for alias in node.names:
                if (alias.asname or alias.name).startswith("test"):
                    yield shared(node.module or "", alias.name, alias.asname or alias.name, node.lineno)
        elif isinstance(node, ast.FunctionDef) and node.name.startswith("test"):
            yield node.name, node, lists, test_file
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                if not (isinstance(target, ast.Name) and target.id.startswith("test")):
                    continue
                value = node.value
                if (isinstance(value, ast.Attribute) and isinstance(value.value, ast.Name)
                        and value.value.id in modules):
                    yield shared(modules[value.value.id], value.attr, target.id, node.lineno)
                else:
                    yield target.id, None, lists, test_file


def module_lists(tree: ast.Module) -> dict[str, ast.expr]:
    """What each module-level name is assigned (``CASES = [...]``), for parametrize to name."""
    return {target.id: node.value for node in tree.body if isinstance(node, ast.Assign)
            for target in node.targets if isinstance(target, ast.Name)}


def case_count(test: ast.FunctionDef, lists: dict[str, ast.expr], test_file: Path) -> int:
    """How many cases the ``@pytest.mark.parametrize`` decorators of ``test`` make (stacked ones
    multiply). Their cases are a list or tuple written in the decorator, or in a module-level
    assignment (``lists``: name -> the value assigned to it) that the decorator names."""
    count = 1
    for decorator in test.decorator_list:
        if not isinstance(decorator, ast.Call) or ast.unparse(decorator.func) != "pytest.mark.parametrize":
            continue
        values = decorator.args[1] if len(decorator.args) > 1 else next(
            (keyword.value for keyword in decorator.keywords if keyword.arg == "argvalues"), None)
        if isinstance(values, ast.Name):
            values = lists.get(values.id)
        if (not isinstance(values, (ast.List, ast.Tuple)) or not values.elts
                or any(isinstance(value, ast.Starred) for value in values.elts)):
            raise RubricError(f"{test_file}:{decorator.lineno}: {test.name}: list its cases literally, as in "
                              f"@pytest.mark.parametrize(\"x\", [1, 2, 3]), or say how many in its points, as in "
                              f"@pytest.mark.points(1, cases=3): each case is worth the test's points, "
                              f"and the rubric counts them without running the suite")
        count *= len(values.elts)
    return count


def exercise_of(item) -> str:
    """The exercise stem a collected test belongs to: ``tests/ch03/test_causal.py`` -> ``causal``."""
    return Path(str(item.path)).stem.removeprefix("test_")
