"""The catalog for the public checks, precomputed: what ships to students instead of solutions.

A student's template has no reference solutions and no catalog source (its ``old`` texts
are solution lines). So ``public_tests/<assignment>/catalog.json`` holds, for every public
probe (the book's inputs), the reference's result with its recorded steps, and the result of
each catalog mistake that changes it, with the mistake's concept. Only values and concept
texts: the final values are already public in ``book_values.py``; no line of code ships.
``check`` confirms concepts and localizes with it exactly as grading does
(:class:`Table` answers like :class:`grader.diagnosis.live_reference.Reference`).

    .venv/bin/python -m grader.diagnosis.public_catalog ASSIGNMENT   # rewrite the table
"""

from __future__ import annotations

import contextlib
import io
import json
import subprocess
import sys
from pathlib import Path

from grader import pytest_environment
from grader.diagnosis import catalog
from grader.diagnosis.live_reference import Reference
from grader.diagnosis.sent import numbers_of
from grader.sandbox import trace, wire
from grader.sandbox.protocol import is_traced, traced, unwrap


class _Concept:
    """What :func:`grader.diagnosis.catalog.confirm` reads of a mistake."""

    def __init__(self, concept: str, random: bool):
        self.concept, self.random = concept, random


class Table:
    """Reference and mistake results read from ``catalog.json`` (see the module docstring)."""

    FILE = "catalog.json"

    def __init__(self, path: Path):
        data = json.loads(Path(path).read_text())
        self.names = {stem: [(e["name"], _Concept(e["concept"], e["random"])) for e in entries]
                      for stem, entries in data["concepts"].items()}
        self.results = data["results"]
        self._decoded: dict = {}

    def concepts(self, stem: str):
        """``(name, mistake)`` for the mistakes of ``stem`` that name a concept."""
        return self.names.get(stem, [])

    def numbers(self, stem: str, mistake: str | None, probe: str, kwargs: dict) -> list[float]:
        """The stored Python numbers of the reference (``mistake`` None) or of a mistake on one probe."""
        entry = self.results.get(catalog.probe_key(probe, wire.encode_args(kwargs)))
        if entry is None:
            return []
        if mistake is None:
            return numbers_of(entry["reference"])
        return [float(n) for n in (entry.get("numbers") or {}).get(mistake, [])]

    def result(self, stem: str, mistake: str | None, probe: str, kwargs: dict):
        """The stored result of the reference (``mistake`` None) or of a mistake on one probe."""
        key = catalog.probe_key(probe, wire.encode_args(kwargs))
        entry = self.results.get(key)
        if entry is None:
            return catalog.failure("Missing", "this probe is not in the public catalog")
        which = entry["mistakes"].get(mistake, "reference") if mistake else "reference"
        raw = entry["reference"] if which == "reference" else which
        cached = self._decoded.get((key, mistake if which != "reference" else None))
        if cached is None:
            cached = wire.decode(raw)
            self._decoded[(key, mistake if which != "reference" else None)] = cached
        return cached


def _encode(value):
    if hasattr(value, "dtype") and hasattr(value, "shape"):
        return wire.encode_tensor(value)
    if isinstance(value, dict):
        return {k: _encode(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_encode(v) for v in value]
    return value


def _strip_steps(value, keep: bool = False):
    """``value`` without its recorded steps, or (``keep``) with them, each without its line (the
    reference's lines are nobody's business): ``[label, tensor, ["", 0, 0], parents]``. The
    diagnosis looks for the student's steps among them, and walks back through their parents."""
    if is_traced(value):
        steps = [[label, tensor, ["", 0, 0], parents] for label, tensor, _, parents in value["steps"]] if keep else []
        if keep and value.get("numbers"):  # a computation without tensors: its numbers, with their names, and for
            # a line only which statement made each (numbered in the order they first appear): whether two
            # numbers come from the same statement, never where it is.
            return traced(unwrap(value), steps, _numbers_without_lines(value["numbers"]))
        return traced(unwrap(value), steps)
    return value


def _numbers_without_lines(numbers: list) -> list:
    """``[name, number, where]`` as ``[name, number, ["", k, 0]]``, k the order in which its statement
    first made a number (a name that is not one is left out, as its number)."""
    statements: dict = {}
    found = []
    for n in numbers[:trace.MAX_NUMBERS]:
        if not (isinstance(n, list) and len(n) >= 2 and type(n[1]) in (int, float)):
            continue
        where = repr(n[2]) if len(n) > 2 else ""
        k = statements.setdefault(where, len(statements) + 1)
        found.append([n[0] if isinstance(n[0], str) else "", n[1], ["", k, 0]])
    return found


def public_probes(suite: Path) -> list[tuple[str, str, dict]]:
    """``(stem, probe, kwargs)`` of every test of the public ``suite``, collected by pytest."""
    import pytest

    from grader.rubric import exercise_of

    found = []

    class Collect:
        @pytest.hookimpl(trylast=True)
        def pytest_collection_modifyitems(self, items):
            for item in items:
                marker = item.get_closest_marker("probe")
                if marker is not None:
                    found.append((exercise_of(item), marker.args[0], dict(marker.kwargs)))

        def pytest_configure(self, config):
            config.addinivalue_line("markers", "probe(name, **kwargs): run a probe on the student's module")

    sys.path.insert(0, str(suite))
    try:
        with pytest_environment.graders_own(), contextlib.redirect_stdout(io.StringIO()) as log:
            code = pytest.main([str(suite), "--collect-only", "-q", "-c", "/dev/null", "--rootdir", str(suite),
                                "-p", "no:cacheprovider", "--import-mode", "importlib"], plugins=[Collect()])
    finally:
        sys.path.remove(str(suite))
    if code != 0:
        raise RuntimeError(f"collecting {suite} failed:\n{log.getvalue()[-3000:]}")
    return found


def build(root: Path, assignment: str) -> dict:
    """The table for ``public_tests/<assignment>``, from the solutions and ``tests/<assignment>/catalog/<stem>.toml``."""
    suite, hidden, solutions = root / "public_tests" / assignment, root / "tests" / assignment, root / "solutions" / assignment
    sys.path.insert(0, str(solutions))
    try:
        source = Reference(suite, solutions, catalog_suite=hidden)
        concepts: dict[str, list] = {}
        results: dict[str, dict] = {}
        for stem, probe, kwargs in public_probes(suite):
            named = source.concepts(stem)
            concepts[stem] = [{"name": name, "concept": m.concept, "random": m.random} for name, m in named]
            reference = source.result(stem, None, probe, kwargs)
            mistakes, numbers = {}, {}
            for name, _ in named:
                wrong = source.result(stem, name, probe, kwargs)
                if not catalog.agree(unwrap(wrong), unwrap(reference)):
                    mistakes[name] = _encode(_strip_steps(wrong))
                    if numbers_of(reference):  # where the mistake's numbers first leave the reference's
                        numbers[name] = source.numbers(stem, name, probe, kwargs)
            results[catalog.probe_key(probe, wire.encode_args(kwargs))] = {
                "reference": _encode(_strip_steps(reference, keep=True)), "mistakes": mistakes,
                **({"numbers": numbers} if numbers else {})}
    finally:
        sys.path.remove(str(solutions))
    return {"assignment": assignment, "concepts": concepts, "results": results}


def main(argv: list[str]) -> int:
    """Rewrite ``public_tests/<assignment>/catalog.json`` for each assignment named (each in
    a fresh process: the suites' helper modules share names)."""
    from grader.settings import PROJECT_ROOT

    if len(argv) > 1:
        return max(subprocess.run([sys.executable, "-m", "grader.diagnosis.public_catalog", a]).returncode for a in argv)
    for assignment in argv:
        table = build(PROJECT_ROOT, assignment)
        path = PROJECT_ROOT / "public_tests" / assignment / Table.FILE
        path.write_text(json.dumps(table, sort_keys=True, separators=(",", ":")) + "\n")
        print(f"{path}: {len(table['results'])} probes, {sum(len(v) for v in table['concepts'].values())} concepts")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
