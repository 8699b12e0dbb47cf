"""The release's student notebooks: jupytext sources turned into notebooks, stripped by nbgrader.

The sources are ``course/source/<assignment>/*.py`` in jupytext's percent format (``# %%``
starts a code cell, ``# %% [markdown]`` a text cell, and ``# %% nbgrader={...}`` gives a cell
nbgrader's metadata), so they are diffed, reviewed and linted as Python. At release each one
becomes ``<name>.ipynb`` in a scratch copy of the course; then the real ``nbgrader
generate_assignment`` replaces the code of every solution cell (an exploration) with its stub,
and the released notebooks are copied into the template. Other files of the source folder go
through nbgrader unchanged; the notebooks' shared helpers are the template's
``notebooks/attention_helpers.py``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import jupytext
import nbformat

KERNEL = {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"},
          "language_info": {"name": "python"}}


class NotebookError(Exception):
    """A notebook source could not be converted, or nbgrader failed."""


def sources(root: Path, assignment: str) -> list[Path]:
    """The notebook sources of ``assignment`` (``course/source/<assignment>/*.py``), sorted."""
    return sorted((root / "course" / "source" / assignment).glob("*.py"))


def to_notebook(source: Path) -> nbformat.NotebookNode:
    """The notebook of one percent-format source: stable cell ids, a Python kernel, no jupytext metadata."""
    try:
        notebook = jupytext.read(source, fmt="py:percent")
    except Exception as exc:  # noqa: BLE001 - jupytext raises many kinds; each is the source's fault
        raise NotebookError(f"{source}: not a jupytext percent-format notebook: {exc}") from None
    notebook.metadata = nbformat.from_dict(KERNEL)
    for index, cell in enumerate(notebook.cells):
        cell["id"] = f"{source.stem[:50]}-{index:02d}"  # the same on every release
    nbformat.validate(notebook)
    return notebook


def generate_notebooks(root: Path, assignment: str, target: Path) -> list[str]:
    """Convert the sources, run the real ``nbgrader generate_assignment``, copy its release to ``target``.

    Returns the released notebooks' paths relative to ``target``'s parent ([] when the
    assignment has no notebook source). nbgrader runs offline in a scratch copy of the course
    folder (so its gradebook and release folders never land in the repository), with this
    interpreter's ``bin`` on PATH (it shells out to ``alembic``) and the user's Jupyter
    configuration kept out.
    """
    found = sources(root, assignment)
    if not found:  # notebooks are optional: an assignment may have none
        return []
    with tempfile.TemporaryDirectory(prefix="release-nbgrader-") as scratch:
        work = Path(scratch) / "course"
        folder = work / "source" / assignment
        shutil.copytree(root / "course" / "source" / assignment, folder,
                        ignore=shutil.ignore_patterns("*.py", "__pycache__", ".ipynb_checkpoints"))
        shutil.copy2(root / "course" / "nbgrader_config.py", work / "nbgrader_config.py")
        for source in found:
            nbformat.write(to_notebook(source), folder / f"{source.stem}.ipynb")
        released = run_nbgrader(work, assignment, Path(scratch))
        shutil.copytree(released, target, dirs_exist_ok=True)
    return sorted(p.relative_to(target.parent).as_posix() for p in target.rglob("*.ipynb"))


def run_nbgrader(work: Path, assignment: str, scratch: Path) -> Path:
    """``nbgrader generate_assignment`` in the course folder ``work``; the release folder it wrote."""
    env = {
        **os.environ,
        "PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]),
        "JUPYTER_CONFIG_DIR": str(scratch / "jupyter-config"),
        "JUPYTER_DATA_DIR": str(scratch / "jupyter-data"),
        "JUPYTER_RUNTIME_DIR": str(scratch / "jupyter-runtime"),
    }
    command = [sys.executable, "-m", "nbgrader", "generate_assignment", assignment, "--force", f"--CourseDirectory.root={work}"]
    try:
        proc = subprocess.run(command, cwd=work, env=env, capture_output=True, text=True, timeout=600, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise NotebookError(f"nbgrader generate_assignment could not run: {exc}") from None
    released = work / "release" / assignment
    if proc.returncode != 0 or not any(released.glob("*.ipynb")):
        log = (proc.stdout + proc.stderr)[-4000:]
        raise NotebookError(f"nbgrader generate_assignment failed (exit {proc.returncode}):\n{log}")
    return released
