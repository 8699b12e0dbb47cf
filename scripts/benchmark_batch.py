"""Grading a class: ``python -m grader batch`` next to ``nbgrader autograde``.

    .venv/bin/python scripts/benchmark_batch.py [-n 20] [--assignment ch03] [--jobs 2] [--runs 3]

Both grade N copies of the reference solutions, in the same run:

- ``batch``: N folders holding ``exercises/<assignment>/*.py``, graded with the hidden suite
  (with ``--jobs 1``, ``--jobs 2`` and ``--jobs J``). A later copy's checks see the values the
  first copies' checks passed on, so they are not run again (``grader/batch/passes.py``): the best
  case. ``--jobs 2 --no-reuse`` runs every check for every copy, as for a class in which no
  two students' values are the same: the worst case;
- nbgrader: a minimal course in a temporary folder. The source notebook has one solution
  cell per exercise module (the reference code) and one autograder test cell per hidden
  test item, worth the rubric's points. Each test cell makes the same calls into student
  code as its hidden test (the test's probe, with the same arguments, from the test's
  ``probe`` marker) and compares the result with the reference solution's on those
  arguments (``torch.allclose``, 1e-4), which is what most hidden tests check.
  ``nbgrader generate_assignment``, N submitted copies of the notebook, then the timed
  ``nbgrader autograde --force``.

``batch`` runs with each of those options, each also on a class of one,
which measures the start-up every run pays once (importing torch, starting the sandbox,
collecting the suite), ``--runs`` times (the variants in turn, so that the machine's load drifts
alike for all); the medians are shown, and each further submission's time run by run. A further
submission is the difference of two runs of a few seconds each, so one run alone can be some 10%
off either way. Prints the wall time of each, per submission and per further submission
(start-up left out), the CPU time likewise (the command and every process it started, the
sandbox included), and the ratios. Every submission must get
full marks from both, or the script stops.
"""

from __future__ import annotations

import argparse
import csv
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from grader import rubric as rubrics  # noqa: E402

BIN = Path(sys.executable).parent
ENV = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}  # nbgrader needs alembic

CHECKS = '''"""Autograder helpers for the benchmark notebook (see scripts/benchmark_batch.py)."""
import importlib
import importlib.util
import sys
import types

import torch

sys.path[:0] = [{solutions!r}, {suite!r}, {project!r}]
from grader.sandbox.worker import BUILTIN_PROBES  # noqa: E402

CASES = torch.load({cases!r}, weights_only=True)
_probes = {{}}


def _probe(stem, name):
    if name in BUILTIN_PROBES:
        return BUILTIN_PROBES[name]
    if stem not in _probes:
        spec = importlib.util.spec_from_file_location(f"probes_{{stem}}", {suite!r} + f"/probes/{{stem}}.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        _probes[stem] = module
    return getattr(_probes[stem], name)


def same(actual, expected, what="result"):
    if isinstance(expected, torch.Tensor):
        assert isinstance(actual, torch.Tensor), f"{{what}}: not a tensor"
        assert actual.shape == expected.shape, f"{{what}}: shape {{tuple(actual.shape)}} != {{tuple(expected.shape)}}"
        assert torch.allclose(actual.double(), expected.double(), atol=1e-4, rtol=1e-4, equal_nan=True), what
    elif isinstance(expected, dict):
        assert isinstance(actual, dict) and actual.keys() == expected.keys(), f"{{what}}: keys differ"
        for key in expected:
            same(actual[key], expected[key], f"{{what}}[{{key!r}}]")
    elif isinstance(expected, (list, tuple)):
        assert isinstance(actual, (list, tuple)) and len(actual) == len(expected), f"{{what}}: length differs"
        for i, (a, e) in enumerate(zip(actual, expected)):
            same(a, e, f"{{what}}[{{i}}]")
    elif isinstance(expected, float):
        assert abs(actual - expected) <= 1e-4, what
    else:
        assert actual == expected, what


def check(case_id, namespace):
    """Run the hidden test's probe on the notebook's code and on the reference; compare."""
    case = CASES[case_id]
    probe = _probe(case["stem"], case["probe"])
    student = types.SimpleNamespace(**namespace)
    reference = importlib.import_module(case["stem"])
    same(probe(student, **case["kwargs"]), probe(reference, **case["kwargs"]))
'''


def hidden_cases(assignment: str) -> list[dict]:
    """Every hidden test item with its probe marker, exercise and points (pytest collection)."""
    import pytest

    rubric = rubrics.load(ROOT / "tests" / assignment, assignment)
    suite, solutions = ROOT / "tests" / assignment, ROOT / "solutions" / assignment
    cases: list[dict] = []

    class Collector:
        def pytest_configure(self, config):
            config.addinivalue_line("markers", "probe(name, **kwargs): run a probe on the student's module")

        def pytest_collection_modifyitems(self, session, config, items):
            for item in items:
                stem = Path(str(item.path)).stem.removeprefix("test_")
                function = item.name.split("[")[0]
                marker = item.get_closest_marker("probe")
                cases.append({
                    "id": item.nodeid, "stem": stem, "points": rubric.exercise(stem).points[function],
                    "probe": marker.args[0] if marker else None, "kwargs": dict(marker.kwargs) if marker else {},
                })

    sys.path[:0] = [str(solutions), str(suite)]
    os.environ["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    import contextlib
    import io

    with contextlib.redirect_stdout(io.StringIO()) as log:
        code = pytest.main(
            [str(suite), "-c", os.devnull, "--rootdir", str(suite), "-p", "no:cacheprovider", "--collect-only", "-q",
             "--import-mode", "importlib"],
            plugins=[Collector()],
        )
    if code != 0:
        raise SystemExit(f"collecting {suite} failed ({code}):\n{log.getvalue()[-3000:]}")
    return cases


def notebook_source(assignment: str, stems: list[str], cases: list[dict], checks_dir: Path):
    """The source notebook: a setup cell, a solution cell per module, a test cell per case."""
    import nbformat
    from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

    def meta(grade_id, *, grade=False, solution=False, locked=False, points=None):
        data = {"grade": grade, "grade_id": grade_id, "locked": locked, "schema_version": 3, "solution": solution,
                "task": False}
        if points is not None:
            data["points"] = points
        return {"nbgrader": data}

    own = "|".join(map(re.escape, stems))
    cells = [
        new_markdown_cell(f"# {assignment}", metadata=meta("intro", locked=True)),
        new_code_cell(f"import sys\nsys.path.insert(0, {str(checks_dir)!r})\nfrom nbcheck import check",
                      metadata=meta("setup", locked=True)),
    ]
    for stem in stems:
        source = (ROOT / "solutions" / assignment / f"{stem}.py").read_text()
        source = re.sub(rf"^(from ({own}) import .*|import ({own}))$", "", source, flags=re.M)  # one namespace
        cells.append(new_code_cell(source, metadata=meta(f"solution_{stem}", solution=True)))
    for i, case in enumerate(cases):
        source = f"# {case['id']}\ncheck({case['id']!r}, globals())" if case["probe"] else f"# {case['id']}: no student code"
        cells.append(new_code_cell(source, metadata=meta(f"test_{i:03d}", grade=True, locked=True, points=case["points"])))
    notebook = new_notebook(cells=cells)
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    return nbformat.writes(notebook)


def timed(command: list[str], cwd: Path) -> tuple[float, float]:
    """Run ``command``; return its wall time and the CPU time (user + system) of it and its children."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(command, cwd=cwd, env=ENV, capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}")
    return elapsed, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def bench_batch(tmp: Path, assignment: str, n: int, options: list[str], max_score: float) -> tuple[float, float]:
    klass = tmp / "class"
    for i in range(n):
        target = klass / f"student{i:02d}" / "exercises" / assignment
        target.mkdir(parents=True, exist_ok=True)
        for source in (ROOT / "solutions" / assignment).glob("*.py"):
            shutil.copy(source, target / source.name)
    grades = tmp / "grades.csv"
    times = timed([sys.executable, "-m", "grader", "batch", str(klass), "--assignment", assignment,
                   "--csv", str(grades), *options], ROOT)
    rows = list(csv.DictReader(open(grades, newline="")))
    assert len(rows) == n and all(float(r["score"]) == max_score for r in rows), "batch: not full marks"
    return times


def bench_nbgrader(tmp: Path, assignment: str, n: int, max_score: float) -> tuple[tuple[float, float], int]:
    stems = [e.name for e in rubrics.load(ROOT / "tests" / assignment, assignment).exercises]
    cases = hidden_cases(assignment)
    import torch

    course, checks = tmp / "course", tmp / "checks"
    checks.mkdir(parents=True)
    torch.save({c["id"]: {"stem": c["stem"], "probe": c["probe"], "kwargs": c["kwargs"]} for c in cases if c["probe"]},
               checks / "cases.pt")
    (checks / "nbcheck.py").write_text(CHECKS.format(
        solutions=str(ROOT / "solutions" / assignment), suite=str(ROOT / "tests" / assignment), project=str(ROOT),
        cases=str(checks / "cases.pt")))
    source = course / "source" / assignment
    source.mkdir(parents=True)
    (course / "nbgrader_config.py").write_text(
        f"c = get_config()\nc.CourseDirectory.root = {str(course)!r}\nc.Execute.timeout = 300\n")
    text = notebook_source(assignment, stems, cases, checks)
    (source / f"{assignment}.ipynb").write_text(text)
    timed(["nbgrader", "generate_assignment", assignment, "--force"], course)
    for i in range(n):
        submitted = course / "submitted" / f"student{i:02d}" / assignment
        submitted.mkdir(parents=True)
        (submitted / f"{assignment}.ipynb").write_text(text)
    times = timed(["nbgrader", "autograde", assignment, "--force"], course)
    timed(["nbgrader", "export", "--to", str(tmp / "nbgrader.csv")], course)
    rows = [r for r in csv.DictReader(open(tmp / "nbgrader.csv", newline="")) if r["assignment"] == assignment]
    assert len(rows) == n, f"nbgrader: {len(rows)} submissions graded"
    bad = [r["student_id"] for r in rows if float(r["score"]) != max_score]
    assert not bad, f"nbgrader: not full marks for {bad} ({rows[0]['score']} / {max_score})"
    return times, len(cases)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-n", type=int, default=20, help="submissions (default 20)")
    parser.add_argument("--assignment", default="ch03")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 2, help="batch --jobs besides 1 and 2 (default: CPUs)")
    parser.add_argument("--no-nbgrader", action="store_true", help="time batch only (while working on it)")
    parser.add_argument("--runs", type=int, default=3, help="runs of each batch variant, medians shown (default 3)")
    args = parser.parse_args()
    rubric = rubrics.load(ROOT / "tests" / args.assignment, args.assignment)
    max_score = rubric.max_score
    load_before = os.getloadavg()[0]
    variants = [f"--jobs {jobs}" for jobs in sorted({1, 2, args.jobs})] + ["--jobs 2 --no-reuse"]
    with tempfile.TemporaryDirectory(prefix="bench-batch-") as name:
        tmp = Path(name)
        runs: dict[str, list] = {variant: [] for variant in variants}
        for run in range(args.runs):
            for index, variant in enumerate(variants):  # a class of one: what every run pays once (start-up), then the class
                single = bench_batch(tmp / f"single-{run}-{index}", args.assignment, 1, variant.split(), max_score)
                klass = bench_batch(tmp / f"class-{run}-{index}", args.assignment, args.n, variant.split(), max_score)
                runs[variant].append((single, klass))
        batches = {variant: (medians([single for single, _ in times]), medians([klass for _, klass in times]))
                   for variant, times in runs.items()}
        nb, tests = (None, len(hidden_cases(args.assignment))) if args.no_nbgrader else \
            bench_nbgrader(tmp / "nb", args.assignment, args.n, max_score)
    n = args.n
    print(f"{n} copies of the {args.assignment} reference solutions, {len(rubric.exercises)} modules, "
          f"{tests} hidden tests, {max_score:g} points; {os.cpu_count()} CPUs, "
          f"load average {load_before:.1f} before, {os.getloadavg()[0]:.1f} after (other work skews the times)")
    print("per submission: total / N; each further one: (the class - a class of one) / (N - 1), the start-up left out")
    print(f"{'':40}{'total':>8}{'per submission':>16}{'each further':>14}{'CPU per submission':>20}{'CPU each further':>18}")
    for variant, ((wall1, cpu1), (wall, cpu)) in batches.items():
        print(f"{f'grader batch {variant}':40}{wall:7.1f}s{wall / n:15.3f}s{(wall - wall1) / (n - 1):13.3f}s"
              f"{cpu / n:19.3f}s{(cpu - cpu1) / (n - 1):17.3f}s")
    print(f"medians of {args.runs} runs; each further submission, run by run: " + ";  ".join(
        f"{variant}: " + " ".join(f"{(klass[0] - single[0]) / (n - 1):.3f}" for single, klass in times) + " s"
        for variant, times in runs.items()))
    if nb is None:
        return
    print(f"{'nbgrader autograde --force':40}{nb[0]:7.1f}s{nb[0] / n:15.3f}s{'':14}{nb[1] / n:19.3f}s")
    print("nbgrader / batch, per submission: " + ";  ".join(
        f"{variant}: {nb[0] / wall:.1f}x (each further: {nb[0] / n / ((wall - wall1) / (n - 1)):.1f}x)"
        for variant, ((wall1, _), (wall, _)) in batches.items()))


def medians(times: list[tuple[float, float]]) -> tuple[float, float]:
    """The median wall time and the median CPU time of ``(wall, cpu)`` runs."""
    return statistics.median(wall for wall, _ in times), statistics.median(cpu for _, cpu in times)


if __name__ == "__main__":
    main()
