"""The reference's results for the public checks on inputs no book printed.

A student's template has no reference solutions, so a public test whose expected value is not
one of the book's takes the fixture ``reference``: what the reference solution gave on the test's
own probe (the same probe name and arguments), read from the suite's precomputed
``catalog.json`` (:mod:`grader.diagnosis.public_catalog`; values only, no code ships). A suite
makes the fixture available with ``from grader.suite.public_reference import reference`` in its
``conftest.py``; :func:`same` compares a probe's whole result with it, naming the part that
differs.
"""

from __future__ import annotations

import functools
from pathlib import Path

import pytest
import torch

from grader.diagnosis.public_catalog import Table
from grader.diagnosis.tolerance import ATOL
from grader.rubric import exercise_of
from grader.sandbox.protocol import FAILED, is_failure, unwrap
from grader.suite import verdicts
from grader.suite.comparisons import close, require


@functools.cache
def _table(path: str) -> Table:
    return Table(Path(path))


@pytest.fixture
def reference(request):
    """The reference solution's result on this test's probe, from the public catalog."""
    marker = request.node.get_closest_marker("probe")
    suite = Path(str(request.node.path)).parent
    rebuild = f"rebuild it: python -m grader.diagnosis.public_catalog {suite.name}"
    if marker is None or not marker.args:
        raise verdicts.SuiteMistake("a test that takes `reference` needs a probe marker")
    if not (suite / Table.FILE).is_file():
        raise verdicts.SuiteMistake(f"no {Table.FILE} beside the public tests: {rebuild}")
    value = _table(str(suite / Table.FILE)).result(exercise_of(request.node), None, marker.args[0], dict(marker.kwargs))
    if is_failure(value):
        raise verdicts.SuiteMistake(f"the public catalog has no reference result for this check "
                                    f"({value[FAILED]}: {value['message']}): {rebuild}")
    return unwrap(value)


def same(actual, expected, *, what: str, grid: bool = False, atol: float = ATOL) -> None:
    """``actual`` has the structure of ``expected`` (dicts, lists, tensors, numbers, text) and the same
    values: tensors within ``atol``, numbers within ``atol``, everything else equal. A failure names
    the part (``what``, then the key or index)."""
    if isinstance(expected, torch.Tensor):
        close(actual, expected, what=what, atol=atol, grid=grid and expected.dim() >= 2)
    elif isinstance(expected, dict):
        require(isinstance(actual, dict) and set(actual) == set(expected),
                f"{what}: expected the entries {sorted(expected)}", what=what,
                expected=", ".join(sorted(expected)), actual=", ".join(sorted(actual)) if isinstance(actual, dict)
                else type(actual).__name__)
        for key in expected:
            same(actual[key], expected[key], what=f"{what}, {key}", grid=grid, atol=atol)
    elif isinstance(expected, list):
        got = f"{len(actual)} items" if isinstance(actual, list) else f"a {type(actual).__name__}"
        require(isinstance(actual, list) and len(actual) == len(expected),
                f"{what}: expected {len(expected)} items, got {got.removesuffix(' items')}",
                what=what, expected=f"{len(expected)} items", actual=got)
        for index, (mine, theirs) in enumerate(zip(actual, expected)):
            same(mine, theirs, what=f"{what} [{index}]", grid=grid, atol=atol)
    elif isinstance(expected, float) or isinstance(actual, float):
        require(type(actual) in (int, float) and type(expected) in (int, float) and abs(actual - expected) <= atol,
                f"{what}: expected {expected!r}, got {actual!r}"[:300], what=what,
                expected=repr(expected), actual=repr(actual)[:80])
    else:
        require(type(actual) is type(expected) and actual == expected, f"{what}: expected {expected!r}, got {actual!r}"[:300],
                what=what, expected=repr(expected)[:80], actual=repr(actual)[:80])
