"""``python -m grader check``: the public tests, run in a released template as a student would."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from grader import rubric as rubrics
from grader.check import NOTE, find_assignment, local_noise
from project_tests.helpers import ROOT, assignments, grade_cli, solution_sources
from project_tests.test_release import fresh_copy

PYTHON = sys.executable


def check(folder: Path, *extra: str, cwd: Path | None = None, env: dict | None = None):
    """Run ``python -m grader check`` in ``folder`` (the template's own grader); return (process, report)."""
    report_path = folder.parent / f"{folder.name}-check.json"
    report_path.unlink(missing_ok=True)
    proc = subprocess.run([PYTHON, "-m", "grader", "check", "--json", str(report_path), *extra],
                          cwd=cwd or folder, capture_output=True, text=True, timeout=300, env=env)
    return proc, json.loads(report_path.read_text()) if report_path.exists() else None


def one_line(text: str) -> str:
    return " ".join(text.split())


def test_check_on_the_release_stubs_scores_zero_with_the_note(tmp_path_factory, tmp_path):
    template = fresh_copy("ch03", tmp_path_factory, tmp_path)
    proc, report = check(template)
    assert proc.returncode == 0, proc.stderr
    assert report["assignment"] == "ch03" and report["score"] == 0 and report["max_score"] > 0
    assert {e["name"] for e in report["exercises"]} == set(solution_sources("ch03"))
    assert all(e["message"] == "not attempted yet" for e in report["exercises"])
    assert report["flags"] == [] and report["grader_errors"] == []  # template files are known
    assert NOTE in one_line(proc.stdout)
    names = [e["name"] for e in report["exercises"]]  # a module not started: one line each
    assert [line.split("  ")[0] for line in proc.stdout.splitlines() if line.startswith("·")] == [f"· {n}" for n in names]
    assert "public checks: 0/" in proc.stdout and "┃" not in proc.stdout


def test_check_on_solutions_passes_every_public_test_and_so_does_plain_pytest(tmp_path_factory, tmp_path):
    template = fresh_copy("ch03", tmp_path_factory, tmp_path)
    for stem, text in solution_sources("ch03").items():
        (template / "exercises" / "ch03" / f"{stem}.py").write_text(text)
    proc, report = check(template)
    assert proc.returncode == 0, proc.stderr
    failing = [(e["name"], t["name"], t["message"]) for e in report["exercises"] for t in e["tests"] if t["status"] != "passed"]
    assert failing == [] and report["score"] == report["max_score"] > 0
    assert NOTE in one_line(proc.stdout)

    plain = subprocess.run([PYTHON, "-m", "pytest", "-q"], cwd=template, capture_output=True, text=True, timeout=300)
    assert plain.returncode == 0, plain.stdout[-3000:]
    assert f"{len(report['exercises'])} passed" in plain.stdout


def plain_pytest_environment(folder: Path) -> Path:
    """A fresh venv that sees this one's packages (a .pth file), with a ``pytest`` script as pip writes
    one: it puts its own bin folder first on sys.path, not the current folder, as a student's does."""
    subprocess.run([PYTHON, "-m", "venv", "--without-pip", str(folder)], check=True)
    site = next((folder / "lib").glob("python3*/site-packages"))
    packages = [p for p in sys.path if p.endswith("site-packages") and Path(p).is_dir()]
    (site / "project-packages.pth").write_text("\n".join(packages) + "\n")
    script = folder / "bin" / "pytest"
    script.write_text(f"#!{folder / 'bin' / 'python'}\nimport sys\nfrom pytest import console_main\nsys.exit(console_main())\n")
    script.chmod(0o755)
    return script


def test_plain_pytest_not_only_python_m_pytest_runs_in_the_template(tmp_path_factory, tmp_path):
    """``pytest`` as a student types it (the console script of a fresh environment, no PYTHONPATH)."""
    template = fresh_copy("ch03", tmp_path_factory, tmp_path)
    sources = solution_sources("ch03")
    (template / "exercises" / "ch03" / "simple_attention.py").write_text(sources["simple_attention"])
    pytest_script = plain_pytest_environment(tmp_path / "venv")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    plain = subprocess.run([str(pytest_script), "-q"], cwd=template, capture_output=True, text=True, timeout=300, env=env)
    assert "No module named" not in plain.stdout + plain.stderr, plain.stdout[-3000:]
    assert plain.returncode == 1 and f"{len(sources) - 1} failed, 1 passed" in plain.stdout, plain.stdout[-3000:]


def test_plain_pytest_fails_per_exercise_with_the_reason(tmp_path_factory, tmp_path):
    template = fresh_copy("d2l_attention", tmp_path_factory, tmp_path)
    sources = solution_sources("d2l_attention")
    for stem in ("masked_softmax", "scoring"):
        (template / "exercises" / "d2l_attention" / f"{stem}.py").write_text(sources[stem])
    (template / ".venv" / "lib").mkdir(parents=True)
    (template / ".venv" / "lib" / "site.pth").write_text("")  # a student's virtual environment: not flagged
    plain = subprocess.run([PYTHON, "-m", "pytest", "-q"], cwd=template, capture_output=True, text=True, timeout=300)
    assert plain.returncode == 1
    public = tomllib.loads((ROOT / "public_tests" / "d2l_attention" / "rubric.toml").read_text())["exercises"]
    assert f"{len(public) - 2} failed, 2 passed" in plain.stdout
    checks = rubrics.load(ROOT / "public_tests" / "d2l_attention", "d2l_attention").exercise("positional_encoding").max_score
    assert f"positional_encoding.py: 0/{checks:g} public points" in plain.stdout and "not attempted yet" in plain.stdout
    proc, report = check(template)
    assert report["flags"] == []


def test_check_flags_edited_template_files_and_finds_the_assignment(tmp_path_factory, tmp_path):
    template = fresh_copy("ch03", tmp_path_factory, tmp_path)
    (template / "pytest.ini").write_text("[pytest]\naddopts = -p no:grader\n")
    (template / "conftest.py").write_text("import os\n")
    proc, report = check(template)
    assert sorted(report["flags"]) == sorted([
        "conftest.py tries to configure pytest or Python (ignored by the grader)",
        "pytest.ini tries to configure pytest or Python (ignored by the grader)",
    ])
    assert find_assignment(template) == "ch03"
    assert local_noise(".venv/lib/x.pth tries to configure pytest or Python (ignored by the grader)")
    assert not local_noise("conftest.py tries to configure pytest or Python (ignored by the grader)")


def test_check_in_the_instructor_repository_needs_an_assignment(tmp_path):
    proc = subprocess.run([PYTHON, "-m", "grader", "check"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "choose one with --assignment" in proc.stderr
    proc = subprocess.run([PYTHON, "-m", "grader", "check", str(tmp_path)], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "no exercises/<assignment>/ folder" in proc.stderr


def test_check_of_a_submission_folder_from_the_instructor_repository(tmp_path):
    submission = tmp_path / "student"
    shutil.copytree(ROOT / "exercises" / "d2l_attention", submission / "exercises" / "d2l_attention")
    proc, report = check(submission, str(submission), cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    assert report["assignment"] == "d2l_attention" and report["score"] == 0
    proc = subprocess.run([PYTHON, "-m", "grader", "check", str(submission), "--assignment", "nope"],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "no assignment 'nope' (known: ch03, d2l_attention)" in proc.stderr


def test_instructor_commands_in_the_template_say_so(tmp_path_factory, tmp_path):
    template = fresh_copy("ch03", tmp_path_factory, tmp_path)
    for command in (["demo"], ["batch", ".", "--assignment", "ch03", "--csv", "g.csv"]):
        proc = subprocess.run([PYTHON, "-m", "grader", *command], cwd=template, capture_output=True, text=True, timeout=120)
        assert proc.returncode == 2, proc.stderr
        assert "instructor command" in proc.stderr and "Traceback" not in proc.stderr


# Python on a platform without fork (Windows): no os.fork, no resource module, no C library
# by name (so no prctl), no O_NOFOLLOW. It applies to every interpreter started with PYTHONPATH.
NO_FORK = '''
import ctypes, os, sys
for name in ("fork", "forkpty", "O_NOFOLLOW"):
    if hasattr(os, name):
        delattr(os, name)
sys.modules["resource"] = None
_load = ctypes.CDLL
def _no_libc(name, *args, **kwargs):
    if name is None:
        raise OSError("no C library here")
    return _load(name, *args, **kwargs)
ctypes.CDLL = _no_libc
'''


def without_fork(tmp_path: Path) -> dict:
    """An environment whose Python processes (but -I ones) run as on a platform without fork."""
    folder = tmp_path / "no-fork"
    folder.mkdir()
    (folder / "sitecustomize.py").write_text(NO_FORK)
    env = {**os.environ, "PYTHONPATH": str(folder)}
    probe = subprocess.run([PYTHON, "-c", "import os, sys; print(hasattr(os, 'fork'), sys.modules['resource'])"],
                           env=env, capture_output=True, text=True)
    assert probe.stdout.split() == ["False", "None"], probe.stderr
    return env


@pytest.mark.parametrize("assignment", assignments())
def test_check_and_plain_pytest_work_without_fork(assignment, tmp_path_factory, tmp_path):
    """A student's Windows or macOS machine: no fork, namespaces, prctl or root are needed."""
    env = without_fork(tmp_path)
    template = fresh_copy(assignment, tmp_path_factory, tmp_path)
    proc, report = check(template, env=env)
    assert proc.returncode == 0, proc.stderr
    assert report["score"] == 0 and all(e["message"] == "not attempted yet" for e in report["exercises"])
    for stem, text in solution_sources(assignment).items():
        (template / "exercises" / assignment / f"{stem}.py").write_text(text)
    proc, report = check(template, env=env)
    assert proc.returncode == 0, proc.stderr
    assert report["score"] == report["max_score"] > 0 and report["flags"] == [] and report["grader_errors"] == []
    plain = subprocess.run([PYTHON, "-m", "pytest", "-q"], cwd=template, capture_output=True, text=True, timeout=300, env=env)
    assert plain.returncode == 0, plain.stdout[-3000:]
    assert f"{len(report['exercises'])} passed" in plain.stdout


def test_without_fork_a_hang_or_a_crash_costs_only_its_module(tmp_path_factory, tmp_path):
    env = without_fork(tmp_path)
    template = fresh_copy("ch03", tmp_path_factory, tmp_path)
    sources = solution_sources("ch03")
    sources["causal"] = "import os\nos._exit(7)\n"
    sources["simple_attention"] = sources["simple_attention"].replace(
        "def attention_scores(inputs, query):", "def attention_scores(inputs, query):\n    while True:\n        pass", 1)
    for stem, text in sources.items():
        (template / "exercises" / "ch03" / f"{stem}.py").write_text(text)
    proc, report = check(template, "--probe-timeout", "5", env=env)
    assert proc.returncode == 0, proc.stderr
    by_name = {e["name"]: e for e in report["exercises"]}
    assert by_name["causal"]["score"] == 0
    assert "exited early with status 7" in by_name["causal"]["message"]
    simple = {t["name"]: t for t in by_name["simple_attention"]["tests"]}
    hung = [t for t in simple.values() if t["status"] == "timeout"]
    assert hung and all("did not finish within 5 s" in t["message"] for t in hung)
    assert any(t["status"] == "passed" for t in simple.values())  # the checks after the hang still ran
    for name in ("self_attention_v1", "self_attention_v2", "weight_transfer"):
        assert by_name[name]["score"] == by_name[name]["max_score"]


def test_grade_does_not_flag_the_templates_own_files(tmp_path_factory, tmp_path):
    """The template's pytest.ini is not the student's doing: the job's report does not flag it."""
    template = fresh_copy("ch03", tmp_path_factory, tmp_path)
    assert (template / "pytest.ini").is_file()
    proc, report = grade_cli(template, "ch03")
    assert proc.returncode == 0, proc.stderr
    assert report["flags"] == []
    (template / "pytest.ini").write_text("[pytest]\naddopts = -p no:grader\n")
    proc, report = grade_cli(template, "ch03")
    assert report["flags"] == ["pytest.ini tries to configure pytest or Python (ignored by the grader)"]


def test_check_names_the_missing_scaling_in_v1_and_v2_and_counts_checks_not_points(tmp_path_factory, tmp_path):
    template = fresh_copy("ch03", tmp_path_factory, tmp_path)
    unscaled = "torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)"
    for stem, text in solution_sources("ch03").items():
        if stem in ("self_attention_v1", "self_attention_v2"):
            text = text.replace(unscaled, "torch.softmax(attn_scores, dim=-1)")
        (template / "exercises" / "ch03" / f"{stem}.py").write_text(text)
    proc, report = check(template)
    assert proc.returncode == 0, proc.stderr
    for exercise in report["exercises"]:
        concepts = (exercise["diagnosis"] or {}).get("concepts", [])
        if exercise["name"] in ("self_attention_v1", "self_attention_v2"):
            assert len(concepts) == 1 and "sqrt(d_k)" in concepts[0], exercise
        else:
            assert exercise["score"] == exercise["max_score"] and not concepts
    total = sum(len(exercise["tests"]) for exercise in report["exercises"])
    failed = sum(t["status"] != "passed" for exercise in report["exercises"] for t in exercise["tests"])
    assert failed == 4  # each version: the book's seed and another seed and size
    assert f"public checks: {total - failed}/{total} passed" in proc.stdout and "sqrt(d_k)" in proc.stdout
    assert f" / {total} points" not in proc.stdout


def test_a_module_checked_with_a_failing_dependency_says_to_fix_that_first(tmp_path_factory, tmp_path):
    # The mistake is in causal.py's CausalAttention; mha.py is correct, but its wrapper runs on it.
    template = fresh_copy("ch03", tmp_path_factory, tmp_path)
    scaled = "torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)\n        attn_weights = self.dropout"
    for stem, text in solution_sources("ch03").items():
        if stem == "causal":
            assert text.count(scaled) == 1
            text = text.replace(scaled, "torch.softmax(attn_scores, dim=-1)\n        attn_weights = self.dropout")
        (template / "exercises" / "ch03" / f"{stem}.py").write_text(text)
    proc, report = check(template)
    assert proc.returncode == 0, proc.stderr
    exercises = {e["name"]: e for e in report["exercises"]}
    assert exercises["causal"]["score"] < exercises["causal"]["max_score"] and exercises["causal"]["diagnosis"]
    mha = exercises["mha"]
    failing = {t["name"]: t["message"] for t in mha["tests"] if t["status"] != "passed"}
    assert failing and set(failing) <= {"test_wrapper_textbook", "test_exercise_3_2", "test_wrapper_other_sizes"}
    assert all(message.startswith("fix causal.py first") for message in failing.values()), failing
    assert mha["message"].startswith("fix causal.py first") and mha["diagnosis"] is None
    assert "fix causal.py first" in one_line(proc.stdout)


def test_dependency_first_names_the_first_module_down_the_chain_and_only_its_checks():
    from grader.dependencies import dependency_first
    from grader.model import Diagnosis, ExerciseResult, Feedback, Report, TestResult

    def exercise(name, *tests):
        return ExerciseResult(name, 0, len(tests), [TestResult(t, status, 0, 1, "differs", Feedback(hint="a hint"))
                                                   for t, status in tests], diagnosis=Diagnosis(concepts=["a concept"]))

    report = Report("d2l", 0, 0, [
        exercise("masked_softmax", ("test_a", "failed")),
        exercise("scoring", ("test_b", "passed")),
        exercise("multihead", ("test_round_trip", "failed"), ("test_values", "failed")),
        exercise("other", ("test_c", "failed")),
    ])
    dependency_first(report, {"scoring": {"masked_softmax": "all"}, "multihead": {"scoring": ["test_values"]},
                              "other": {"scoring": ["test_c"]}})
    by_name = {e.name: e for e in report.exercises}
    multihead = by_name["multihead"]
    assert multihead.message.startswith("fix masked_softmax.py first") and multihead.diagnosis is None
    assert multihead.tests[1].message.startswith("fix masked_softmax.py first") and multihead.tests[1].feedback.hint == ""
    assert multihead.tests[0].message == "differs" and multihead.tests[0].feedback.hint == "a hint"  # runs on no dependency
    assert by_name["masked_softmax"].diagnosis is not None and by_name["masked_softmax"].message == ""
    by_name["masked_softmax"].tests[0].status = "passed"  # once masked_softmax passes, nothing is said
    fresh = Report("d2l", 0, 0, [exercise("scoring", ("test_b", "passed")), exercise("other", ("test_c", "failed"))])
    dependency_first(fresh, {"other": {"scoring": ["test_c"]}})
    assert fresh.exercises[1].message == "" and fresh.exercises[1].diagnosis is not None


def test_check_on_one_module_and_a_half_reads_to_the_end_and_checks_one_module_on_demand(tmp_path_factory, tmp_path):
    """A student one module and a half in: a line per module passed or not started, detail for the failing one."""
    template = fresh_copy("ch03", tmp_path_factory, tmp_path)
    sources = solution_sources("ch03")
    (template / "exercises" / "ch03" / "simple_attention.py").write_text(sources["simple_attention"])
    (template / "exercises" / "ch03" / "self_attention_v1.py").write_text(sources["self_attention_v1"].replace(
        "torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)", "torch.softmax(attn_scores, dim=-1)"))
    env = {**os.environ, "COLUMNS": "80"}
    proc, report = check(template, env=env)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert len(lines) < 60, proc.stdout  # 224 lines before: a table for every module not started
    assert [line.split("  ")[0] for line in lines if line.startswith(("✓", "·"))] == [
        "✓ simple_attention", "· self_attention_v2", "· weight_transfer", "· causal", "· mha"]
    assert "self_attention_v1.py: what to fix first" in proc.stdout and "test_forward_textbook" in proc.stdout
    for chosen in (["causal"], ["--module", "causal"], ["exercises/ch03/causal.py"]):
        proc, _ = check(template, *chosen, env=env)
        assert proc.returncode == 0, proc.stderr
        assert "· causal  0/12: not started yet (12 checks)" in proc.stdout and "simple_attention" not in proc.stdout
        assert "ch03 (causal.py only): public checks: 0/12 passed" in proc.stdout
    proc, _ = check(template, "--module", "casual", env=env)
    assert proc.returncode == 2 and "no module casual in ch03 (its modules: simple_attention," in proc.stderr
