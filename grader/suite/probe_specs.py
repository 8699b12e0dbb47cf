"""Check a suite's probe markers against its probe files when the suite is collected.

``@pytest.mark.probe("forward", seed=1, x=X)`` names a function of ``probes/<stem>.py`` and the
arguments it is called with, next to the student's module. A misspelt name or an argument the
function does not take is the suite's mistake: the grading plugin reports it as a grader error
naming the test, the probe file and what is wrong, and never sends it to the sandbox. The probe
files are read with :mod:`ast` (signatures only; nothing of them runs in this process).
"""

from __future__ import annotations

import ast
import difflib
import functools
import inspect
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Signature:
    """What a probe function accepts after its first parameter (the student's module)."""

    names: tuple[str, ...]  # parameters that may be given by keyword
    required: tuple[str, ...]  # of those, the ones without a default
    any_keyword: bool = False  # it takes **kwargs
    takes_student: bool = True  # it has a first positional parameter for the student's module


def of_function(function) -> Signature:
    """The :class:`Signature` of a Python function (the built-in probes)."""
    parameters = list(inspect.signature(function).parameters.values())
    first, rest = (parameters[0], parameters[1:]) if parameters else (None, [])
    keyword = [p for p in rest if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    return Signature(
        names=tuple(p.name for p in keyword),
        required=tuple(p.name for p in keyword if p.default is p.empty),
        any_keyword=any(p.kind == p.VAR_KEYWORD for p in rest),
        takes_student=first is not None and first.kind in (first.POSITIONAL_ONLY, first.POSITIONAL_OR_KEYWORD),
    )


def _of_definition(node: ast.FunctionDef) -> Signature:
    args = node.args
    positional = [*args.posonlyargs, *args.args]
    with_default = set(map(id, positional[len(positional) - len(args.defaults):]))
    keyword = [a for a in args.args if a is not (positional[0] if positional else None)]  # not positional-only
    required = [a.arg for a in positional[1:] if id(a) not in with_default]  # a positional-only one cannot be given
    required += [a.arg for a, default in zip(args.kwonlyargs, args.kw_defaults) if default is None]
    return Signature(
        names=tuple(a.arg for a in [*keyword, *args.kwonlyargs]),
        required=tuple(required),
        any_keyword=args.kwarg is not None,
        takes_student=bool(positional),
    )


@functools.lru_cache(maxsize=64)
def _read(path: str, stamp: float) -> dict[str, Signature] | str:
    try:
        tree = ast.parse(Path(path).read_text(), filename=path)
    except (OSError, SyntaxError, ValueError) as exc:
        return f"cannot be read: {type(exc).__name__}: {exc}"
    return {node.name: _of_definition(node) for node in tree.body if isinstance(node, ast.FunctionDef)}


def probes_in(path: Path) -> dict[str, Signature] | str:
    """The top-level functions of a probe file by name, or why the file cannot be read."""
    try:
        stamp = path.stat().st_mtime
    except OSError:
        return "does not exist"
    return _read(str(path), stamp)


def problem(name, args: tuple, kwargs: dict, path: Path, builtins: dict, shown: str = "") -> str:
    """What is wrong with ``probe(name, *args, **kwargs)`` against the probe file ``path`` (named
    ``shown`` in the message, default its path; ``builtins``: the built-in probes by name); "" when nothing."""
    if not isinstance(name, str):
        return f"the probe marker's first argument should be a probe's name, not {name!r}"
    if args:
        return f"probe {name!r} takes its arguments by keyword only, but the marker passes {len(args)} positional"
    file = shown or str(path)
    if name in builtins:
        signature = of_function(builtins[name])
    else:
        found = probes_in(path)
        if isinstance(found, str):
            return f"probe {name!r}: the probe file {file} {found}"
        if name not in found:
            near = difflib.get_close_matches(name, [n for n in found if not n.startswith("_")], n=1)
            return f"the probe file {file} has no function {name!r}" + (f" (did you mean {near[0]!r}?)" if near else "")
        signature = found[name]
    if not signature.takes_student:
        return f"probe {name!r} in {file} must take the student's module as its first positional parameter"
    unknown = [k for k in kwargs if k not in signature.names] if not signature.any_keyword else []
    missing = [k for k in signature.required if k not in kwargs]
    parts = []
    if unknown:
        parts.append(f"takes no argument {', '.join(map(repr, unknown))}")
    if missing:
        parts.append(f"needs {', '.join(map(repr, missing))}, which the marker does not give")
    return f"probe {name!r} in {file} {' and '.join(parts)}" if parts else ""
