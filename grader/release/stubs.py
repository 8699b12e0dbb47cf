"""Make student stubs from reference solutions, following nbgrader's marker rules.

nbgrader strips solutions from notebooks only; for ``.py`` modules we apply the same rule:
every region from ``### BEGIN SOLUTION`` to ``### END SOLUTION`` (markers included) becomes
a TODO and ``raise NotImplementedError``, at the marker's indentation.
"""

from __future__ import annotations

import re
from pathlib import Path

from grader.release import markers

DEFINITION = re.compile(r"^(\s*)(?:def|class)\s+(\w+)")


def make_stub(source: str, filename: str = "<solution>") -> str:
    """The stub for one solution module's source."""
    out: list[str] = []
    scope: list[tuple[int, str]] = []  # (indent, name) of enclosing defs and classes
    for kind, _, line in markers.lines(source.splitlines(keepends=True), filename):
        indent = len(line) - len(line.lstrip())
        if kind == markers.CODE:
            match = DEFINITION.match(line)
            if match:
                while scope and scope[-1][0] >= len(match.group(1)):
                    scope.pop()
                scope.append((len(match.group(1)), match.group(2)))
            out.append(line)
        elif kind == markers.REGION:
            while scope and scope[-1][0] >= indent:
                scope.pop()
            name = ".".join(n for _, n in scope) or "this part"
            pad = line[:indent]
            out.append(f"{pad}# TODO: write this part (see the docstring).\n")
            out.append(f'{pad}raise NotImplementedError("{name} is not written yet")\n')
    return "".join(out)


def stub_files(solutions_dir: Path) -> dict[str, str]:
    """Every stub of an assignment, by file name."""
    return {p.name: make_stub(p.read_text(), str(p)) for p in sorted(solutions_dir.glob("*.py"))}


def write_stubs(solutions_dir: Path, exercises_dir: Path) -> list[Path]:
    """Write the stubs of ``solutions_dir`` into ``exercises_dir``; return the files written."""
    exercises_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for name, text in stub_files(solutions_dir).items():
        target = exercises_dir / name
        target.write_text(text)
        written.append(target)
    return written
