"""The released seq2seq notebook in a real Jupyter kernel (nbclient), as a student runs it.

test_release.py runs every notebook's code in a plain interpreter; here the one notebook that
trains a model runs headless in a kernel, on the stubs and on the solutions, and the trained
decoder's attention must show the alignment of a reversal (an anti-diagonal).
"""

from __future__ import annotations

import ast
import itertools
import os

import nbformat
from nbclient import NotebookClient

from project_tests.helpers import solution_sources
from project_tests.test_release import fresh_copy

NOTEBOOK = "notebooks/seq2seq_attention.ipynb"
WHERE = "where each output step looks (weighted mean source position):"


def executed(template) -> list[dict]:
    """The outputs of every code cell of the released notebook after a headless run, in order."""
    path = template / NOTEBOOK
    notebook = nbformat.read(path, as_version=4)
    client = NotebookClient(notebook, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}})
    client.execute(env={**os.environ, "MPLBACKEND": "module://matplotlib_inline.backend_inline"})
    return [output for cell in notebook.cells if cell.cell_type == "code" for output in cell.outputs]


def text_of(outputs: list[dict]) -> str:
    """Everything the cells printed."""
    return "".join(o.get("text", "") for o in outputs if o.get("output_type") == "stream")


def test_seq2seq_notebook_on_stubs_says_not_written_and_draws_nothing(tmp_path_factory, tmp_path):
    outputs = executed(fresh_copy("d2l_attention", tmp_path_factory, tmp_path))
    text = text_of(outputs)
    assert not [o for o in outputs if o.get("output_type") == "error"], text[-2000:]
    assert "not written yet: Seq2SeqAttentionDecoder.__init__ is not written yet" in text
    assert "not written yet: bleu is not written yet" in text
    assert "No heatmap" in text and "✓" not in text
    assert not [o for o in outputs if "image/png" in o.get("data", {})]


def test_seq2seq_notebook_on_solutions_learns_the_reversal_and_its_alignment(tmp_path_factory, tmp_path):
    template = fresh_copy("d2l_attention", tmp_path_factory, tmp_path)
    for stem, source in solution_sources("d2l_attention").items():
        (template / "exercises" / "d2l_attention" / f"{stem}.py").write_text(source)
    outputs = executed(template)
    text = text_of(outputs)
    assert not [o for o in outputs if o.get("output_type") == "error"], text[-2000:]
    assert "not written yet" not in text and "✗" not in text and text.count("✓") == 6, text[-3000:]
    assert text.count("bleu 1.000") == 5, text[-2000:]  # every greedy reversal is right
    assert len([o for o in outputs if "image/png" in o.get("data", {})]) == 1  # the heatmap (the exploration is empty)
    looks = ast.literal_eval(text.split(WHERE)[1].splitlines()[0].strip())
    letters = looks[:-1]  # the last row writes <eos>
    assert len(letters) == 8 and all(a > b for a, b in itertools.pairwise(letters)), looks  # the anti-diagonal
    assert letters[0] > 6 and letters[-1] < 1.5, looks
