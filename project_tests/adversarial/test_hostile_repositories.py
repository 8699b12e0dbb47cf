"""Hostile git repositories graded through ``python -m grader batch --deadline`` (the builders:
``repositories.py``), beside an honest classmate, and the memory of the process that reads them.

For the run as a whole: it ends with exit code 0; no command a repository names ran; the secret of
a file a repository's configuration includes reaches no output; each hostile repository costs
only its own grade (graded at its honest commit, or "not graded" with its reason), and the honest
classmate gets full marks. Reading a repository with a 200 MB blob, a 200 MB commit message or a
million-file tree keeps the reading process's memory within a few MiB of what it was.
"""

from __future__ import annotations

import json
import subprocess

import pytest

from project_tests.adversarial import repositories
from project_tests.adversarial.grader_runs import require_isolation, run_grader
from project_tests.adversarial.harness import PYTHON, ROOT, load_json, new_stage
from project_tests.helpers import solution_sources


@pytest.fixture(scope="module")
def graded():
    require_isolation()
    stage = new_stage()
    try:
        klass, out, outside = stage.base / "class", stage.base / "out", stage.base / "instructor"
        for folder in (klass, out, outside):
            folder.mkdir()
        repositories.honest(klass / "victim", solution_sources("ch03"))
        for name, (build, _) in repositories.ATTACKS.items():
            build(klass / name, outside)
        csv, reports = out / "grades.csv", out / "reports"
        run = run_grader(stage, "batch", str(klass), "--assignment", "ch03", "--csv", str(csv), "--reports", str(reports),
                         "--deadline", repositories.DEADLINE, "--jobs", "2", "--probe-timeout", "5", timeout=900)
        outputs = csv.read_text() if csv.exists() else ""
        outputs += "".join(p.read_text(errors="replace") for p in out.rglob("*") if p.is_file())
        yield {"run": run, "outputs": outputs + run.stdout + run.stderr, "ran": (outside / "ran").exists(),
               "reports": {p.parent.name: load_json(p) for p in reports.glob("*/REPORT.json")}}
    finally:
        stage.close()


def test_the_batch_grades_everyone_and_nothing_runs_or_leaks(graded):
    assert graded["run"].returncode == 0, graded["run"].stderr[-3000:]
    assert set(graded["reports"]) == {"victim", *repositories.ATTACKS}
    assert not graded["ran"]
    assert repositories.SECRET not in graded["outputs"]


def test_the_honest_classmate_gets_full_marks(graded):
    victim = graded["reports"]["victim"]
    assert victim["score"] == victim["max_score"], [e["message"] for e in victim["exercises"]]


@pytest.mark.parametrize("name", sorted(repositories.ATTACKS))
def test_each_hostile_repository_costs_only_its_own_grade(graded, name):
    expected = repositories.ATTACKS[name][1]
    not_graded = [f for f in graded["reports"][name]["flags"] if f.startswith("not graded: ")]
    if expected == "graded":
        assert not_graded == []
    else:
        assert len(not_graded) == 1 and expected in not_graded[0], not_graded


READ = r"""
import json, resource, sys
from pathlib import Path
from grader.batch import deadline
template = {"pytest.ini": "0" * 64, ".github/workflows/classroom.yml": "0" * 64}
start = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
found = deadline.at_deadline(Path(sys.argv[1]), "ch03", ["simple_attention", "mha"],
                             deadline.parse(sys.argv[2]), template, compare_with=template)
print(json.dumps({"start": start, "peak": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
                  "problem": found.problem, "flags": found.flags, "sources": sorted(found.sources)}))
"""


@pytest.mark.parametrize("name", ["huge_blobs", "huge_message", "huge_tree"])
def test_reading_a_huge_repository_keeps_memory_bounded(tmp_path, name):
    repo = getattr(repositories, name)(tmp_path / "s", tmp_path)
    done = subprocess.run([PYTHON, "-c", READ, str(repo), repositories.DEADLINE], cwd=ROOT, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    seen = json.loads(done.stdout)
    # ru_maxrss is in KiB: the reading process (git's own processes aside) grew by less than 32 MiB
    assert seen["peak"] - seen["start"] < 32 * 1024, seen
    assert seen["problem"] == "", seen
    if name == "huge_blobs":
        assert "exercises/ch03/simple_attention.py is larger than 256 KiB (refused)" in seen["flags"]
        assert "pytest.ini tries to configure pytest or Python (ignored by the grader)" in seen["flags"]
    elif name == "huge_tree":
        assert any("holds more than 100000 files" in f for f in seen["flags"]), seen["flags"]
        assert seen["sources"] == ["simple_attention"]
