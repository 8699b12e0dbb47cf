"""``python -m grader release``: the student template holds no secret and works as shipped."""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import nbformat
import pytest

from grader import cli, environment
from grader.release import leaks
from grader.release import markers
from grader.release import command as release
from grader import manifest as manifests
from grader.release.notebooks import sources as notebook_sources
from grader.release.stubs import make_stub
from project_tests.helpers import ROOT, assignments, solution_sources

ASSIGNMENTS = assignments()  # every assignment with a hidden suite
PYTHON = sys.executable
_RELEASES: dict[str, tuple[subprocess.CompletedProcess, Path]] = {}


def released(assignment: str, tmp_path_factory) -> tuple[subprocess.CompletedProcess, Path]:
    """The release of ``assignment``, made through the real command line once per run.

    The first call releases every assignment at once (nbgrader's start-up dominates). Under
    pytest-xdist the workers share it: the first to ask makes it in the run's temporary folder,
    holding a lock there, and the others wait for it and read it.
    """
    if not _RELEASES:
        base = tmp_path_factory.getbasetemp()
        shared = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base  # the run's own folder
        folder, made = shared / "releases", shared / "releases" / "made.json"
        folder.mkdir(exist_ok=True)
        with open(shared / "releases.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if not made.exists():
                running = {}
                for name in ASSIGNMENTS:
                    out = folder / name / "template"
                    command = [PYTHON, "-m", "grader", "release", "--assignment", name, "--out", str(out)]
                    running[name] = (command, subprocess.Popen(command, cwd=ROOT, text=True, stdout=subprocess.PIPE,
                                                               stderr=subprocess.PIPE))
                runs = {}
                for name, (command, proc) in running.items():
                    stdout, stderr = proc.communicate(timeout=600)
                    runs[name] = [command, proc.returncode, stdout, stderr]
                made.write_text(json.dumps(runs))
        for name, (command, returncode, stdout, stderr) in json.loads(made.read_text()).items():
            _RELEASES[name] = (subprocess.CompletedProcess(command, returncode, stdout, stderr), folder / name / "template")
    return _RELEASES[assignment]


def fresh_copy(assignment: str, tmp_path_factory, tmp_path: Path) -> Path:
    """A private copy of the release (tests that write into it must not share it)."""
    proc, out = released(assignment, tmp_path_factory)
    assert proc.returncode == 0, proc.stderr
    copy = tmp_path / "copy"
    shutil.copytree(out, copy)
    return copy


def text_files(folder: Path) -> dict[str, str]:
    """Every UTF-8 file under ``folder`` by relative path."""
    found = {}
    for path in folder.rglob("*"):
        if path.is_file():
            try:
                found[path.relative_to(folder).as_posix()] = path.read_text()
            except UnicodeDecodeError:
                pass
    return found


def solution_region_lines(assignment: str) -> list[str]:
    """Lines inside solution regions, at least 20 characters long (an independent, crude check)."""
    lines = []
    for text in solution_sources(assignment).values():
        inside = False
        for line in text.splitlines():
            if line.strip() == markers.BEGIN:
                inside = True
            elif line.strip() == markers.END:
                inside = False
            elif inside and len(line.strip()) >= 20:
                lines.append(line.strip())
    return lines


# -- what the release holds -------------------------------------------------------------------
@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_release_holds_no_solution_marker_or_hidden_test(assignment, tmp_path_factory):
    proc, out = released(assignment, tmp_path_factory)
    assert proc.returncode == 0, proc.stderr
    assert f"released {assignment}" in proc.stdout
    assert leaks.scan(out, ROOT) == []
    files = text_files(out)
    everything = "\n".join(files.values())
    for marker in ("BEGIN SOLUTION", "END SOLUTION", "BEGIN HIDDEN TESTS"):
        assert marker not in everything
    # Independent of the scan: no longer solution line is a line of any file (lines the stubs
    # keep outside the regions aside; docstrings may name an attribute, so not substrings).
    kept = {line.strip() for text in solution_sources(assignment).values() for line in markers.solution_regions(text.splitlines())[1]}
    shipped = {line.strip() for text in files.values() for line in text.splitlines()}
    leaked = [line for line in solution_region_lines(assignment) if line not in kept and line in shipped]
    assert leaked == []
    hidden = {hashlib.sha256(p.read_bytes()).hexdigest() for p in (ROOT / "tests").rglob("*") if p.is_file() and p.stat().st_size > 20}
    assert not [p for p in out.rglob("*") if p.is_file() and hashlib.sha256(p.read_bytes()).hexdigest() in hidden]
    assert not (out / "solutions").exists() and not (out / "tests").exists()
    # The instructor-only packages and modules stay home, whole; what a student runs ships whole.
    assert sorted(p.name for p in (out / "grader").iterdir() if p.name in {"release", "batch", "demo.py"}) == []
    shipped_packages = {p.name for p in (out / "grader").iterdir() if p.is_dir()}
    assert shipped_packages == {"suite", "sandbox", "diagnosis", "reports"}
    for package in shipped_packages:
        ours = {q.relative_to(ROOT / "grader" / package) for q in (ROOT / "grader" / package).rglob("*.py")}
        assert {q.relative_to(out / "grader" / package) for q in (out / "grader" / package).rglob("*.py")} == ours
    assert not list(out.rglob("__pycache__"))


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_release_has_stubs_public_tests_grader_and_manifest(assignment, tmp_path_factory):
    _, out = released(assignment, tmp_path_factory)
    stubs = {p.stem: p.read_text() for p in (out / "exercises" / assignment).glob("*.py")}
    assert stubs == {stem: make_stub(text) for stem, text in solution_sources(assignment).items()}
    public = ROOT / "public_tests" / assignment
    for path in public.rglob("*.py"):
        assert (out / "public_tests" / assignment / path.relative_to(public)).read_text() == path.read_text()
    for name in ("README.md", "requirements.txt", "pytest.ini", ".gitignore", "public_tests/test_public.py",
                 ".github/workflows/classroom.yml", "grader/__main__.py", "grader/check.py"):
        assert (out / name).is_file(), name
    readme = (out / "README.md").read_text()
    assert "python -m grader check" in readme and "hidden tests" in readme.lower()
    assert not re.search(r"__[A-Z][A-Z_]*[A-Z]__", readme)
    manifest = json.loads((out / manifests.MANIFEST).read_text())
    assert manifest["assignment"] == assignment
    assert manifest["files"] == manifests.hash_folder(out)
    assert manifests.read(out) == manifest["files"]
    assert f"exercises/{assignment}/{next(iter(stubs))}.py" in manifest["files"]
    assert manifests.MANIFEST not in manifest["files"]


def test_one_list_of_grading_needs_for_the_project_and_every_template(tmp_path_factory):
    """grader/requirements.txt is what grading needs; the project and each template install it."""
    grading = environment.pins()
    assert grading["torch"] == "2.13.0" and set(environment.MODULES) == set(grading)
    assert "-r grader/requirements.txt" in (ROOT / "requirements.txt").read_text().splitlines()
    for assignment in ASSIGNMENTS:
        _, out = released(assignment, tmp_path_factory)
        lines = (out / "requirements.txt").read_text().splitlines()
        assert "-r grader/requirements.txt" in lines and f"--extra-index-url {environment.CPU_INDEX}" in lines
        assert not [line for line in lines if line.split("==")[0] in grading]  # no second copy of a pin
        assert release.pins(ROOT)["matplotlib"] in lines
        assert (out / "grader" / "requirements.txt").read_bytes() == environment.REQUIREMENTS.read_bytes()


def test_public_rubrics_cover_every_exercise_without_reference_modules():
    for assignment in ASSIGNMENTS:
        folder = ROOT / "public_tests" / assignment
        rubric = tomllib.loads((folder / "rubric.toml").read_text())
        assert set(rubric["exercises"]) == set(solution_sources(assignment))
        for stem, spec in rubric["exercises"].items():
            assert (folder / f"test_{stem}.py").is_file()
            assert not spec.get("uses"), "the template has no reference modules to use"
        # Public tests compare with printed values, never with the reference solution.
        for path in folder.rglob("*.py"):
            assert not re.search(r"^\s*(import|from)\s+(" + "|".join(rubric["exercises"]) + r")\b", path.read_text(), re.MULTILINE), path


# -- grading the release ----------------------------------------------------------------------
@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_release_stubs_score_zero_with_the_hidden_tests(assignment, tmp_path_factory, tmp_path):
    if not (ROOT / "tests" / assignment / "rubric.toml").is_file():
        pytest.skip(f"no hidden suite for {assignment} yet")
    _, out = released(assignment, tmp_path_factory)
    report_path = tmp_path / "report.json"
    proc = subprocess.run([PYTHON, "-m", "grader", "grade", str(out), "--assignment", assignment, "--json", str(report_path)],
                          cwd=ROOT, capture_output=True, text=True, timeout=600, check=False)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(report_path.read_text())
    assert report["max_score"] > 0 and report["score"] == 0
    assert all(e["message"] == "not attempted yet" for e in report["exercises"])


# -- the scan ---------------------------------------------------------------------------------
def test_scan_finds_planted_solution_lines_markers_and_hidden_files(tmp_path_factory, tmp_path):
    out = fresh_copy("ch03", tmp_path_factory, tmp_path)
    secrets = leaks.secret_lines(ROOT)
    line = "return inputs @ query"
    assert secrets.get(line) == "solutions/ch03/simple_attention.py"
    readme = out / "README.md"
    readme.write_text(readme.read_text() + f"\n    {line}  # a hint that gives it away\n")
    problems = leaks.scan(out, ROOT)
    assert len(problems) == 1 and problems[0].startswith("README.md (line ") and "solutions/ch03/simple_attention.py" in problems[0]

    notebook = next((out / "notebooks").glob("*.ipynb"))
    nb = nbformat.read(notebook, as_version=4)
    nb.cells[-1].source += "\n" + "        attn_scores = queries @ keys.transpose(1, 2)"
    # An exploration's solution (a source notebook's solution region) given away in its cell:
    explored = 'print("row sums:", short_weights.sum(dim=-1))'
    assert secrets.get(explored) == "course/source/ch03/ch03_attention.py" and 'book = setup("ch03")' not in secrets
    exploration = next(i for i, c in enumerate(nb.cells) if "explore_shorter_sequence" in str(c.metadata))
    nb.cells[exploration].source += "\n" + explored
    nbformat.write(nb, notebook)
    (out / "public_tests" / "ch03" / "extra.txt").write_text("### BEGIN " + "HIDDEN TESTS\n")
    shutil.copy(ROOT / "tests" / "ch03" / "test_simple_attention.py", out / "public_tests" / "renamed.py")
    (out / "tests").mkdir()
    (out / "tests" / "note.md").write_text("nothing secret, but an instructor folder\n")
    problems = leaks.scan(out, ROOT)
    joined = "\n".join(problems)
    assert f"{notebook.relative_to(out).as_posix()} (cell {len(nb.cells) - 1}, line" in joined
    assert re.search(rf"\(cell {exploration}, line \d+\): a solution line from course/source/ch03/ch03_attention.py", joined), joined
    assert "extra.txt: contains the marker 'BEGIN HIDDEN TESTS'" in joined
    assert "renamed.py: a copy of the hidden suite file tests/ch03/test_simple_attention.py" in joined
    assert "tests/note.md: the instructor folder tests/" in joined


def test_scan_ignores_lines_the_stubs_keep():
    secrets = leaks.secret_lines(ROOT)
    assert "super().__init__()" not in secrets  # outside every solution region
    assert "import torch" not in secrets
    assert all(len(key) >= leaks.MIN_SECRET_CHARS for key in secrets)


def project_copy(tmp_path: Path) -> Path:
    """The instructor material a release reads, copied (to plant a leak in it)."""
    copy = tmp_path / "project"
    for name in ("grader", "solutions", "tests", "public_tests", "course", "template"):
        shutil.copytree(ROOT / name, copy / name, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "requirements.txt", copy / "requirements.txt")
    return copy


def test_release_command_fails_on_a_planted_solution_line(tmp_path, tmp_path_factory, monkeypatch, capsys):
    project = project_copy(tmp_path)
    readme = project / "template" / "README.md"
    readme.write_text(readme.read_text() + "\nHint: `return torch.cat([head(x) for head in self.heads], dim=-1)`\n"
                      "\n    return torch.cat([head(x) for head in self.heads], dim=-1)\n")
    _, good = released("ch03", tmp_path_factory)

    def notebooks_of_the_real_release(root, assignment, target):  # nbgrader itself runs in other tests
        shutil.copytree(good / "notebooks", target)
        return ["notebooks/ch03_attention.ipynb"]

    monkeypatch.setattr(release, "PROJECT_ROOT", project)
    monkeypatch.setattr(release, "generate_notebooks", notebooks_of_the_real_release)
    out = tmp_path / "out"
    assert cli.main(["release", "--assignment", "ch03", "--out", str(out)]) == 1
    err = capsys.readouterr().err
    assert "must not be published" in err and "README.md (line" in err and "solutions/ch03/mha.py" in err
    assert not (out / manifests.MANIFEST).exists()


def test_release_refuses_unknown_assignment_and_non_empty_folder(tmp_path, capsys):
    assert cli.main(["release", "--assignment", "nope", "--out", str(tmp_path / "a")]) == 2
    assert "no assignment 'nope'" in capsys.readouterr().err
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "keep.txt").write_text("mine")
    assert cli.main(["release", "--assignment", "ch03", "--out", str(tmp_path / "b")]) == 2
    assert "not empty" in capsys.readouterr().err and (tmp_path / "b" / "keep.txt").exists()
    assert cli.main(["release", "--assignment", "ch03", "--out", str(ROOT / "solutions" / "x")]) == 2


# -- notebooks --------------------------------------------------------------------------------
@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_release_notebooks_are_valid_nbgrader_output_without_solutions(assignment, tmp_path_factory):
    _, out = released(assignment, tmp_path_factory)
    notebooks = sorted((out / "notebooks").glob("*.ipynb"))
    assert [p.stem for p in notebooks] == [p.stem for p in notebook_sources(ROOT, assignment)]
    assert (out / "notebooks" / "attention_helpers.py").read_text() == (ROOT / "template" / "notebooks" / "attention_helpers.py").read_text()
    assert not list((out / "notebooks").glob("*.py"))[1:]  # the sources are not shipped, only the helpers
    for path in notebooks:
        nb = nbformat.read(path, as_version=4)
        nbformat.validate(nb)
        source = "\n".join(cell.source for cell in nb.cells)
        assert f'setup("{assignment}")' in source and "from attention_helpers import" in source
        assert [c.id for c in nb.cells] == [f"{path.stem}-{i:02d}" for i in range(len(nb.cells))]  # stable ids
        explorations = [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("solution")]
        assert explorations, "at least one exploration cell"
        for cell in explorations:
            assert cell.source.strip() == "# YOUR CODE HERE"
            assert "checksum" in cell.metadata["nbgrader"]  # written by nbgrader, not copied
        assert all(not cell.get("outputs") for cell in nb.cells if cell.cell_type == "code")
