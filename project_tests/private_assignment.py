"""A small assignment of its own whose references are unpublished (``references = "private"``):
``scores`` (scaled dot-product scores), ``attend``, which builds on it, and ``combine``, which
builds on ``attend`` (and so, through it, on ``scores``). Both reference
solutions carry a secret marker, in a comment, a docstring and a constant their code uses, so a
test can look for it in everything grading shows (the hostile case:
``project_tests/adversarial/test_hostile_references.py``; the costs: ``test_private_references.py``).
"""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
from pathlib import Path

from grader.release.stubs import make_stub
from project_tests.helpers import copy_repository

NAME = "vault"

SCORES = '''"""Scaled dot-product scores."""

import math

import torch

# @MARK@: this solution is not published.
TAG = "@MARK@"


def scaled_scores(queries: torch.Tensor, keys: torch.Tensor) -> torch.Tensor:
    """Every query against every key, divided by sqrt(d). (@MARK@)"""
    ### BEGIN SOLUTION
    label = TAG + "@MARK@"
    assert label, "@MARK@"
    return queries @ keys.transpose(-2, -1) / math.sqrt(queries.shape[-1])
    ### END SOLUTION
'''

ATTEND = '''"""Attention on top of the scores."""

import torch

from scores import scaled_scores

# @MARK@: this solution is not published either.


def attend(queries: torch.Tensor, keys: torch.Tensor, values: torch.Tensor) -> torch.Tensor:
    """softmax(scores) @ values. (@MARK@)"""
    ### BEGIN SOLUTION
    assert "@MARK@"
    return torch.softmax(scaled_scores(queries, keys), dim=-1) @ values
    ### END SOLUTION


def average(values: torch.Tensor) -> torch.Tensor:
    """The mean of the values over the sequence (needs no scores). (@MARK@)"""
    ### BEGIN SOLUTION
    return values.mean(dim=-2)
    ### END SOLUTION
'''

COMBINE = '''"""One number per query, on top of attention."""

from attend import attend

# @MARK@


def combine(queries, keys, values):
    """The sum of each query's attention output."""
    ### BEGIN SOLUTION
    return attend(queries, keys, values).sum(dim=-1)
    ### END SOLUTION
'''

TEST_COMBINE = '''import pytest
import torch

import combine as ref
from grader.suite.comparisons import close
from grader.suite.plugin import calls

torch.manual_seed(3)
Q, K, V = torch.randn(2, 3, 4), torch.randn(2, 5, 4), torch.randn(2, 5, 3)
EXPECTED = ref.combine(Q, K, V)


@pytest.mark.points(1)
@calls("combine", Q, K, V)
def test_combine_values(probed):
    close(probed, EXPECTED, what="combine(queries (2, 3, 4), keys (2, 5, 4), values (2, 5, 3))")
'''

TEST_SCORES = '''import pytest
import torch

import scores as ref
from grader.suite.comparisons import close
from grader.suite.plugin import calls

torch.manual_seed(1)
Q, K = torch.randn(2, 3, 4), torch.randn(2, 5, 4)
WIDE_Q, WIDE_K = torch.randn(1, 2, 9), torch.randn(1, 6, 9)
EXPECTED, WIDE = ref.scaled_scores(Q, K), ref.scaled_scores(WIDE_Q, WIDE_K)


@pytest.mark.points(2)
@calls("scaled_scores", Q, K)
def test_scores_values(probed):
    close(probed, EXPECTED, what="scaled_scores(queries (2, 3, 4), keys (2, 5, 4))")


@pytest.mark.points(1)
@calls("scaled_scores", WIDE_Q, WIDE_K)
def test_scores_wide(probed):
    close(probed, WIDE, what="scaled_scores on (1, 2, 9) and (1, 6, 9)")
'''

TEST_ATTEND = '''import pytest
import torch

import attend as ref
from grader.suite.comparisons import close
from grader.suite.plugin import calls

torch.manual_seed(2)
Q, K, V = torch.randn(2, 3, 4), torch.randn(2, 5, 4), torch.randn(2, 5, 3)
WIDE_Q, WIDE_K, WIDE_V = torch.randn(1, 2, 9), torch.randn(1, 6, 9), torch.randn(1, 6, 2)
EXPECTED, WIDE, MEAN = ref.attend(Q, K, V), ref.attend(WIDE_Q, WIDE_K, WIDE_V), ref.average(V)


@pytest.mark.points(2)
@calls("attend", Q, K, V)
def test_attend_values(probed):
    close(probed, EXPECTED, what="attend(queries (2, 3, 4), keys (2, 5, 4), values (2, 5, 3))")


@pytest.mark.points(1)
@calls("attend", WIDE_Q, WIDE_K, WIDE_V)
def test_attend_wide(probed):
    close(probed, WIDE, what="attend on (1, 2, 9), (1, 6, 9), (1, 6, 2)")


@pytest.mark.points(1)
@calls("average", V)
def test_average(probed):
    close(probed, MEAN, what="average(values (2, 5, 3))")
'''

CATALOG_SCORES = '''[[mistake]]
description = "no scaling"
old = " / math.sqrt(queries.shape[-1])"
new = ""
concept = "Divide the scores by sqrt(d), the size of a query: without it the softmax saturates."
'''

RUBRIC = '''title = "Vault: an assignment whose solutions are not published"
references = "@REFERENCES@"

[exercises.scores]
title = "Scaled scores"

[exercises.attend]
title = "Attention on the scores"
uses = ["scores"]

[exercises.combine]
title = "One number per query"
uses = ["attend"]
'''

# Student modules: the reference with the mark taken out, and three mistakes.
HONEST_SCORES = '''import math

import torch


def scaled_scores(queries, keys):
    return torch.matmul(queries, keys.transpose(1, 2)) / math.sqrt(queries.shape[2])
'''
HONEST_ATTEND = '''import torch

from scores import scaled_scores


def attend(queries, keys, values):
    return scaled_scores(queries, keys).softmax(dim=2) @ values


def average(values):
    return values.sum(dim=1) / values.shape[1]
'''
UNSCALED_SCORES = HONEST_SCORES.replace(" / math.sqrt(queries.shape[2])", "")  # the catalog's mistake
DOUBLED_SCORES = HONEST_SCORES.replace("/ math.sqrt", "* 2 / math.sqrt")  # a mistake the catalog does not know
WRONG_AXIS_ATTEND = HONEST_ATTEND.replace("softmax(dim=2)", "softmax(dim=1)")
HONEST_COMBINE = '''from attend import attend


def combine(queries, keys, values):
    return attend(queries, keys, values).sum(dim=2)
'''


def new_mark() -> str:
    """A marker no file of the project holds: only the references will."""
    return "VAULT-" + "SECRET-" + secrets.token_hex(8)


def build(repo_target: Path, mark: str, references: str = "private") -> Path:
    """A copy of the repository with the ``vault`` assignment added (its stubs made)."""
    repo = copy_repository(repo_target)
    files = {
        f"solutions/{NAME}/scores.py": SCORES, f"solutions/{NAME}/attend.py": ATTEND,
        f"tests/{NAME}/test_scores.py": TEST_SCORES, f"tests/{NAME}/test_attend.py": TEST_ATTEND,
        f"solutions/{NAME}/combine.py": COMBINE, f"tests/{NAME}/test_combine.py": TEST_COMBINE,
        f"tests/{NAME}/catalog/scores.toml": CATALOG_SCORES, f"tests/{NAME}/rubric.toml": RUBRIC,
    }
    for relative, text in files.items():
        (repo / relative).parent.mkdir(parents=True, exist_ok=True)
        (repo / relative).write_text(text.replace("@MARK@", mark).replace("@REFERENCES@", references))
    for stem in ("scores", "attend", "combine"):
        (repo / "exercises" / NAME).mkdir(parents=True, exist_ok=True)
        (repo / "exercises" / NAME / f"{stem}.py").write_text(make_stub((repo / "solutions" / NAME / f"{stem}.py").read_text()))
    return repo


def submission(folder: Path, **modules: str) -> Path:
    """A student's folder holding ``exercises/vault/<stem>.py`` for each of ``modules``."""
    target = folder / "exercises" / NAME
    target.mkdir(parents=True)
    for stem, text in modules.items():
        (target / f"{stem}.py").write_text(text)
    return folder


def grade_many(repo: Path, roots: list[Path], *extra: str, timeout: float = 600) -> dict[Path, dict]:
    """Grade ``roots`` in one run of the copy's own grader (one sandbox, as the bulk regrade does)."""
    script = (
        "import json, sys; from pathlib import Path; from grader.batch.pool import grade_many; "
        "from grader.assignment import Assignment; from grader.cli import build_parser, settings_from; "
        "args = build_parser().parse_args(['grade', '.', '--assignment', sys.argv[1], *sys.argv[3:]]); "
        "roots = [Path(p) for p in json.loads(sys.argv[2])]; settings = settings_from(args); "
        "print(json.dumps({str(r): rep.to_dict() for r, rep in grade_many(roots, Assignment.resolve(sys.argv[1], settings), settings)}))"
    )
    proc = subprocess.run([sys.executable, "-c", script, NAME, json.dumps([str(r) for r in roots]), *extra],
                          cwd=repo, capture_output=True, text=True, timeout=timeout, env={**os.environ, "PYTHONPATH": ""})
    assert proc.returncode == 0, proc.stderr[-3000:]
    return {Path(k): v for k, v in json.loads(proc.stdout.splitlines()[-1]).items()}
