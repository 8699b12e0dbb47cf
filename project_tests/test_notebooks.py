"""Every released notebook runs headless in a real Jupyter kernel (nbclient), as a student runs it.

Each assignment is released through the real command line; then each of its notebooks runs
three times, two at a time (two cores):

- ``stubs``: the template as released. Every part says "not written yet", nothing is drawn,
  and no cell stops the run.
- ``solutions``: the reference solutions copied into ``exercises/``, and the notebooks made from
  the sources with their explorations solved (``grader.release.notebooks.to_notebook``). No error, every
  comparison with the book agrees, every heatmap is drawn.
- ``errors``: one module with a syntax error, the others raising ValueError where the stubs
  raise NotImplementedError. Each error is shown in the cell that met it, and the run goes on.
"""

from __future__ import annotations

import ast
import itertools
import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

from grader.release.notebooks import to_notebook
from project_tests.helpers import ROOT, assignments, solution_sources, stub_sources
from project_tests.test_release import fresh_copy

ASSIGNMENTS = assignments()
KINDS = ("stubs", "solutions", "errors")
SYNTAX_ERROR = "def broken(:\n"
_RUNS: dict[tuple[str, str], dict[str, list[dict]]] = {}


def prepare(assignment: str, kind: str, template: Path) -> None:
    """Make ``template`` (a fresh release) the ``kind`` of run described in the module docstring."""
    exercises = template / "exercises" / assignment
    if kind == "solutions":
        for stem, text in solution_sources(assignment).items():
            (exercises / f"{stem}.py").write_text(text)
        for source in (ROOT / "course" / "source" / assignment).glob("*.py"):
            nbformat.write(to_notebook(source), template / "notebooks" / f"{source.stem}.ipynb")
    elif kind == "errors":
        stubs = stub_sources(assignment)
        for index, (stem, text) in enumerate(stubs.items()):
            broken = SYNTAX_ERROR if index == 0 else text.replace("raise NotImplementedError(", "raise ValueError(")
            (exercises / f"{stem}.py").write_text(broken)


def execute(path: Path) -> list[dict]:
    """Run one notebook headless in a fresh kernel, from its folder; every code cell's outputs, in order."""
    notebook = nbformat.read(path, as_version=4)
    client = NotebookClient(notebook, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}})
    client.execute(env={**os.environ, "MPLBACKEND": "module://matplotlib_inline.backend_inline", "OMP_NUM_THREADS": "1"})
    return [output for cell in notebook.cells if cell.cell_type == "code" for output in cell.outputs]


def notebooks_of(tmp_path_factory, assignment: str, kind: str) -> dict[str, list[dict]]:
    """The ``kind`` runs of ``assignment``: one per notebook source, none missing, by notebook name."""
    notebooks = runs(tmp_path_factory).get((assignment, kind), {})
    assert sorted(notebooks) == sorted(f"{p.stem}.ipynb" for p in (ROOT / "course" / "source" / assignment).glob("*.py"))
    return notebooks


def runs(tmp_path_factory) -> dict[tuple[str, str], dict[str, list[dict]]]:
    """Every notebook of every assignment, run once per kind (all of them on the first call)."""
    if not _RUNS:
        jobs = {}
        for assignment, kind in itertools.product(ASSIGNMENTS, KINDS):
            template = fresh_copy(assignment, tmp_path_factory, tmp_path_factory.mktemp(f"notebooks-{assignment}-{kind}"))
            prepare(assignment, kind, template)
            for path in sorted((template / "notebooks").glob("*.ipynb")):
                jobs[(assignment, kind, path.name)] = path
        with ThreadPoolExecutor(max_workers=2) as pool:
            done = dict(zip(jobs, pool.map(execute, jobs.values()), strict=True))
        for (assignment, kind, name), outputs in done.items():
            _RUNS.setdefault((assignment, kind), {})[name] = outputs
    return _RUNS


def printed(outputs: list[dict], stream: str | None = None) -> str:
    """Everything the cells printed (to ``stream`` only, if given)."""
    return "".join(o.get("text", "") for o in outputs if o.get("output_type") == "stream" and stream in (None, o.get("name")))


def images(outputs: list[dict]) -> int:
    """How many figures the cells drew."""
    return len([o for o in outputs if "image/png" in o.get("data", {})])


def stopped(outputs: list[dict]) -> list[dict]:
    """Error outputs: a cell that raised (which would stop "Run All")."""
    return [o for o in outputs if o.get("output_type") == "error"]


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_notebooks_on_stubs_say_not_written_and_draw_nothing(assignment, tmp_path_factory):
    notebooks = notebooks_of(tmp_path_factory, assignment, "stubs")
    for name, outputs in notebooks.items():
        text = printed(outputs)
        assert not stopped(outputs), f"{name}: {text[-2000:]}"
        assert "not written yet" in text, name
        assert printed(outputs, "stderr") == "", f"{name}: the stubs met an error that is not theirs:\n{text[-3000:]}"
        assert images(outputs) == 0 and "✓" not in text, name


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_notebooks_on_solutions_match_the_book_and_draw_every_heatmap(assignment, tmp_path_factory):
    for name, outputs in notebooks_of(tmp_path_factory, assignment, "solutions").items():
        text = printed(outputs)
        assert not stopped(outputs) and printed(outputs, "stderr") == "", f"{name}: {text[-3000:]}"
        assert "not written yet" not in text and "✗" not in text and "✓" in text, f"{name}: {text[-3000:]}"
        assert "no heatmap" not in text and images(outputs) >= 1, f"{name}: {text[-3000:]}"


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_notebooks_show_each_error_in_its_cell_and_carry_on(assignment, tmp_path_factory):
    broken = next(iter(solution_sources(assignment)))  # the module with the syntax error
    notebooks = notebooks_of(tmp_path_factory, assignment, "errors")
    for name, outputs in notebooks.items():
        text, errors = printed(outputs), printed(outputs, "stderr")
        assert not stopped(outputs), f"{name}: {text[-2000:]}"
        assert images(outputs) == 0 and "✓" not in text and "not written yet:" not in text, f"{name}: {text[-3000:]}"
        assert "✗ your code raised an error" in errors or "could not be imported" in errors, f"{name}: {text[-3000:]}"
        assert "Traceback (most recent call last)" in errors, errors[-3000:]
        assert "attention_helpers.py" not in errors and "importlib" not in errors, errors[-3000:]  # the student's frames only
    everything = "".join(printed(outputs) for outputs in notebooks.values())
    assert "✗ your code raised an error" in everything and "ValueError: " in everything
    assert f"✗ {broken}.py could not be imported" in everything and "SyntaxError: invalid syntax" in everything
    assert f"not run: {broken}.py did not import" in everything


def test_seq2seq_notebook_learns_the_reversal_and_its_alignment(tmp_path_factory):
    """The trained decoder reverses every example and its attention is an anti-diagonal."""
    outputs = runs(tmp_path_factory)[("d2l_attention", "solutions")]["seq2seq_attention.ipynb"]
    text = printed(outputs)
    assert text.count("✓") == 6 and text.count("bleu 1.000") == 5, text[-3000:]  # every greedy reversal is right
    assert images(outputs) == 2  # the alignment, and the exploration's
    where = "where each output step looks (weighted mean source position):"
    looks = ast.literal_eval(text.split(where)[1].splitlines()[0].strip())
    letters = looks[:-1]  # the last row writes <eos>
    assert len(letters) == 8 and all(a > b for a, b in itertools.pairwise(letters)), looks
    assert letters[0] > 6 and letters[-1] < 1.5, looks
    stubs = printed(runs(tmp_path_factory)[("d2l_attention", "stubs")]["seq2seq_attention.ipynb"])
    assert "not written yet: Seq2SeqAttentionDecoder.__init__ is not written yet" in stubs
    assert "not written yet: bleu is not written yet" in stubs and "No heatmap" in stubs
