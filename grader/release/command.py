"""``release``: build the student template repository of one assignment (a Classroom starter).

    python -m grader release --assignment ch03 --out DIR

The steps, in order: stubs from ``solutions/<assignment>/`` (``grader.release.stubs``); the public
suite ``public_tests/<assignment>/``; the grader package without the instructor-only modules;
the student notebooks, made from the jupytext sources ``course/source/<assignment>/*.py`` by
the real ``nbgrader generate_assignment`` (``grader.release.notebooks``); the files of ``template/``
(README, pytest.ini, requirements, the notebooks' helpers, the Classroom workflow), rendered for
this assignment. Then ``grader.release.leaks.scan`` reads everything in
DIR back: a solution line, a solution or hidden-test marker, a hidden suite file or an
instructor folder makes the release fail, and DIR must not be published. Only a clean
release gets ``.grader/template.json`` (:mod:`grader.manifest`), which the instructor's
bulk regrade uses to tell template files from files a student added or changed.

Exit codes of the command: 0 released, 1 the scan found something secret, 2 bad arguments
(unknown assignment, DIR not empty), 3 a build step failed (nbgrader, a template file).
"""

from __future__ import annotations

import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from grader import environment, manifest
from grader.assignment import Assignment, AssignmentNotFound
from grader import rubric as rubrics
from grader.release.leaks import INSTRUCTOR_FOLDERS, scan
from grader.release.notebooks import NotebookError, generate_notebooks
from grader.reports.classroom import runner_name
from grader.errors import CommandError
from grader.settings import PROJECT_ROOT
from grader.release.stubs import write_stubs

# Grader modules that only the instructor's repository needs (stub making holds the markers).
INSTRUCTOR_ONLY = frozenset({"release", "batch", "demo.py"})  # whole packages and modules students never run
# What a student installs besides grader/requirements.txt (the grading list, which the template
# ships inside grader/ and the Classroom job installs from the grader's own checkout); pins read
# from the instructor's requirements.txt. template/requirements.txt adds Jupyter.
STUDENT_PACKAGES = ("matplotlib",)
PLACEHOLDER = re.compile(r"__[A-Z][A-Z_]*[A-Z]__")


class ReleaseError(CommandError):
    """The release could not be built; ``exit_code`` says why (see the module docstring)."""

    exit_code = 3


class LeakError(ReleaseError):
    """The built template holds something secret; ``problems`` names each find."""

    def __init__(self, out: Path, problems: list[str]):
        shown = "\n".join(f"  {p}" for p in problems[:50])
        more = f"\n  ... and {len(problems) - 50} more" if len(problems) > 50 else ""
        super().__init__(
            f"{out} holds instructor material and must not be published "
            f"({len(problems)} problem{'s' * (len(problems) != 1)}):\n{shown}{more}",
            exit_code=1,
        )
        self.problems = problems


@dataclass
class Released:
    """What :func:`build` wrote."""

    out: Path
    assignment: str
    runners: list[str]
    notebooks: list[str]
    warnings: list[str] = field(default_factory=list)


# -- building ---------------------------------------------------------------------------------
def build(assignment: str, out: Path, *, project_root: Path | None = None, force: bool = False) -> Released:
    """Build the template of ``assignment`` in ``out``; raise ReleaseError (LeakError) on failure.

    ``project_root`` is the instructor repository (default: the one this grader belongs to).
    """
    root = (project_root or PROJECT_ROOT).resolve()
    out = out.resolve()
    paths = Assignment.at(assignment, root)
    solutions, public = paths.solutions, paths.public_suite
    if not solutions.is_dir():
        solved = root / "solutions"
        raise AssignmentNotFound(assignment, [p.name for p in solved.iterdir() if p.is_dir()] if solved.is_dir() else [])
    if not (public / "rubric.toml").is_file():
        raise ReleaseError(f"no public tests for {assignment!r}: {public / 'rubric.toml'} is missing", exit_code=2)
    if out == root or root in out.parents and out.parts[len(root.parts)] in INSTRUCTOR_FOLDERS | {"grader", "template"}:
        raise ReleaseError(f"{out} is inside the instructor's material; release somewhere else", exit_code=2)
    stems, warnings = graded_exercises(paths)
    public_rubric = rubrics.load(public, assignment)
    prepare_out(out, force)

    write_stubs(solutions, out / "exercises" / assignment)
    copy_tree(public, out / "public_tests" / assignment)
    copy_tree(root / "grader", out / "grader", skip_top=INSTRUCTOR_ONLY)
    try:
        notebooks = generate_notebooks(root, assignment, out / "notebooks")
    except NotebookError as exc:
        raise ReleaseError(str(exc)) from None
    if not notebooks:
        warnings.append(f"no source notebook in course/source/{assignment}/: the template has no notebooks")
    values = template_values(root, assignment, public_rubric, stems, notebooks)
    render_template(paths.template, out, values)

    problems = scan(out, root)
    if problems:
        raise LeakError(out, problems)
    manifest.write(out, assignment)
    return Released(out, assignment, [runner_name(s) for s in stems], notebooks, warnings)


def graded_exercises(assignment: Assignment) -> tuple[list[str], list[str]]:
    """The exercises the Classroom job grades (one reporter runner each), and warnings.

    They are the hidden rubric's (``tests/<assignment>/rubric.toml``): the workflow must name
    exactly the runners the graded run reports. Without a hidden rubric, the public one's.
    """
    warnings = []
    hidden = assignment.suite
    if (hidden / "rubric.toml").is_file():
        rubric = rubrics.load(hidden, assignment.name)
    else:
        rubric = rubrics.load(assignment.public_suite, assignment.name)
        warnings.append(f"no hidden rubric {hidden / 'rubric.toml'}: the workflow lists the public rubric's exercises")
    stems = [e.name for e in rubric.exercises]
    solved = {p.stem for p in assignment.solutions.glob("*.py")}
    if missing := [s for s in stems if s not in solved]:
        raise ReleaseError(f"the rubric grades {', '.join(missing)}, which solutions/{assignment.name}/ does not have")
    if ungraded := sorted(solved - set(stems)):
        warnings.append(f"not graded on GitHub (missing from the rubric): {', '.join(ungraded)}")
    runners = [runner_name(s) for s in stems]
    if len(set(runners)) != len(runners):
        raise ReleaseError(f"two exercises share a runner name: {runners}")
    return stems, warnings


def prepare_out(out: Path, force: bool) -> None:
    """An empty ``out`` (a ``.git`` folder in it is kept, so a clone can be re-released)."""
    if out.exists() and not out.is_dir():
        raise ReleaseError(f"{out} is not a folder", exit_code=2)
    out.mkdir(parents=True, exist_ok=True)
    entries = [p for p in out.iterdir() if p.name != ".git"]
    if entries and not force:
        raise ReleaseError(f"{out} is not empty; pass --force to replace its contents (.git is kept)", exit_code=2)
    for entry in entries:
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry)
        else:
            entry.unlink()


def copy_tree(source: Path, target: Path, *, skip_top: frozenset[str] = frozenset()) -> None:
    """Copy ``source`` without caches; names in ``skip_top`` are left out of its top level."""

    def ignore(folder: str, names: list[str]) -> set[str]:
        skipped = {n for n in names if n in ("__pycache__", ".ipynb_checkpoints", ".pytest_cache") or n.endswith(".pyc")}
        if Path(folder) == source:
            skipped |= {n for n in names if n in skip_top}
        return skipped

    shutil.copytree(source, target, ignore=ignore, symlinks=False, dirs_exist_ok=True)


# -- the template's own files -----------------------------------------------------------------
def pins(root: Path) -> dict[str, str]:
    """``name==version`` of every package pinned in the instructor's requirements.txt or the grading list, by name."""
    found = {}
    for path in (root / "requirements.txt", root / "grader" / "requirements.txt"):
        found |= {name: f"{name}=={version}" for name, version in environment.pins(path).items()}
    return found


def template_values(root: Path, assignment: str, public: rubrics.Rubric, stems: list[str], notebooks: list[str]) -> dict[str, str]:
    """What each ``__PLACEHOLDER__`` of ``template/`` becomes for this assignment."""
    pinned = pins(root)
    if missing := [p for p in STUDENT_PACKAGES if p not in pinned]:
        raise ReleaseError(f"requirements.txt does not pin {', '.join(missing)}")
    runners = [runner_name(s) for s in stems]
    return {
        "ASSIGNMENT": assignment,
        "TITLE": public.title.removesuffix(" (public tests)"),
        "EXERCISES": "\n".join(f"{i}. `exercises/{assignment}/{e.name}.py`: {e.title}" for i, e in enumerate(public.exercises, 1)),
        "NOTEBOOKS": "\n".join(f"- `{n}`" for n in notebooks),
        "A_MODULE": public.exercises[-1].name,  # the example of checking one module
        "GRADED": ", ".join(f"`{s}.py`" for s in stems),
        "REQUIREMENTS": "\n".join(pinned[p] for p in STUDENT_PACKAGES),
        "CPU_INDEX": environment.CPU_INDEX,
        "RUNNERS": ",".join(runners),
        "RUNNER_ENV": "\n".join(f'{r.upper()}_RESULTS: "${{{{ steps.grade.outputs.{r} }}}}"' for r in runners),
    }


def render(text: str, values: dict[str, str], where: str) -> str:
    """Fill the placeholders of ``text``; a multi-line value keeps its placeholder's indentation."""
    out = []
    for line in text.splitlines(keepends=True):
        stripped = line.strip()
        if PLACEHOLDER.fullmatch(stripped) and "\n" in values.get(stripped.strip("_"), ""):
            indent = line[: len(line) - len(line.lstrip())]
            out.append("".join(f"{indent}{v}\n" if v else "\n" for v in values[stripped.strip("_")].split("\n")))
            continue
        out.append(PLACEHOLDER.sub(lambda m: values.get(m.group(0).strip("_"), m.group(0)), line))
    rendered = "".join(out)
    if left := sorted(set(PLACEHOLDER.findall(rendered)) - {"__init__", "__main__"}):
        raise ReleaseError(f"{where}: unknown placeholder {', '.join(left)}")
    return rendered


def render_template(template: Path, out: Path, values: dict[str, str]) -> None:
    """Copy every file of ``template/`` into ``out``, placeholders filled."""
    for path in sorted(template.rglob("*")):
        if not path.is_file() or "__pycache__" in path.parts:
            continue
        relative = path.relative_to(template)
        target = out / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(render(path.read_text(), values, f"template/{relative.as_posix()}"))
