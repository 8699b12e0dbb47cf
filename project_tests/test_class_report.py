"""``batch`` over a class as GitHub Classroom hands it over: ``<slug>-submissions/<slug>-<login>``
git repositories, a ``--deadline`` between two commits of one student, a student whose only
commit is late, a folder that is not a repository and has a hostile name. Checks the CSV, the
class report (rendered in headless Chromium, its pictures loaded) and the feedback files."""

from __future__ import annotations

import csv
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from project_tests.helpers import ROOT, make_submission, mutate, solution_sources

ASSIGNMENT = "ch03"
SLUG = "attention-ch03"
DEADLINE = "2026-03-02T00:00:00+00:00"
HOSTILE = '<img src=x onerror=alert(1)>*_[x](y)|'
UNSCALED = ("torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)", "torch.softmax(attn_scores, dim=-1)")


def commit(repo: Path, when: str, message: str) -> str:
    env = {**os.environ, "GIT_COMMITTER_DATE": when, "GIT_AUTHOR_DATE": when, "GIT_CONFIG_GLOBAL": "/dev/null",
           "GIT_CONFIG_NOSYSTEM": "1"}
    git = ["git", "-C", str(repo), "-c", "user.name=s", "-c", "user.email=s@example.org"]
    subprocess.run(git + ["add", "-A"], check=True, env=env)
    subprocess.run(git + ["commit", "-q", "-m", message], check=True, env=env)
    return subprocess.run(git + ["rev-parse", "HEAD"], check=True, env=env, capture_output=True, text=True).stdout.strip()


@pytest.fixture(scope="module")
def klass(tmp_path_factory):
    base = tmp_path_factory.mktemp("classroom")
    root = base / f"{SLUG}-submissions"
    # alice: an unscaled v1 before the deadline, fixed after it: the first commit is graded.
    alice = root / f"{SLUG}-alice"
    make_submission(alice, ASSIGNMENT, {"self_attention_v1": mutate(solution_sources(ASSIGNMENT)["self_attention_v1"], *UNSCALED)})
    shutil.copy(ROOT / "template" / "pytest.ini", alice / "pytest.ini")  # the template's own: not flagged
    subprocess.run(["git", "init", "-q", str(alice)], check=True)
    first = commit(alice, "2026-03-01T10:00:00+00:00", "before the deadline")
    make_submission(alice, ASSIGNMENT)
    (alice / "conftest.py").write_text("import os\n")
    commit(alice, "2026-03-03T10:00:00+00:00", "after the deadline")
    # bob: one commit, after the deadline: not graded.
    bob = make_submission(root / f"{SLUG}-bob", ASSIGNMENT)
    subprocess.run(["git", "init", "-q", str(bob)], check=True)
    commit(bob, "2026-03-04T10:00:00+00:00", "late")
    # a folder with a hostile name, not a repository: graded as it is, said so.
    make_submission(root / f"{SLUG}-{HOSTILE}", ASSIGNMENT, {"mha": None})
    out = base / "out"
    proc = subprocess.run(
        [sys.executable, "-m", "grader", "batch", str(root), "--assignment", ASSIGNMENT, "--csv", str(out / "grades.csv"),
         "--deadline", DEADLINE, "--probe-timeout", "5", "--jobs", "2"],
        cwd=ROOT, capture_output=True, text=True, timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    with open(out / "grades.csv", newline="") as handle:
        rows = {row["student_id"]: row for row in csv.DictReader(handle)}
    return {"root": root, "out": out, "rows": rows, "first": first, "log": proc.stdout + proc.stderr}


def test_students_are_named_by_login_and_the_folder_kept(klass):
    rows = klass["rows"]
    assert sorted(rows) == sorted(["alice", "bob", HOSTILE])
    assert rows["alice"]["folder"] == f"{SLUG}-alice"
    assert rows[HOSTILE]["folder"] == f"{SLUG}-{HOSTILE}"


def test_the_last_commit_before_the_deadline_is_graded(klass):
    alice = klass["rows"]["alice"]
    assert alice["commit"] == klass["first"]
    assert alice["committed_at"] == "2026-03-01T10:00:00+00:00"
    assert float(alice["self_attention_v1"]) < 10 and float(alice["causal"]) == 15.0  # the unscaled v1, not the fix
    assert alice["flags"] == ""  # the later commit's conftest.py is not in the graded commit; pytest.ini is the template's


def test_a_submission_with_no_commit_before_the_deadline_is_not_graded(klass):
    bob = klass["rows"]["bob"]
    assert float(bob["score"]) == 0.0 and bob["commit"] == ""
    assert "no commit at or before the deadline" in bob["flags"] and "2026-03-04T10:00:00+00:00" in bob["flags"]
    assert "1 not graded" in klass["log"]


def test_a_folder_that_is_not_a_repository_is_graded_as_it_is_and_said_so(klass):
    row = klass["rows"][HOSTILE]
    assert float(row["score"]) == 60.0 and "not a git repository" in row["commit"]


def test_feedback_files(klass):
    reports = klass["out"] / f"{ASSIGNMENT}-reports"
    alice = (reports / f"{SLUG}-alice" / "FEEDBACK.md").read_text()
    assert alice.startswith("# Feedback for alice")
    assert klass["first"][:12] in alice and "sqrt" in alice and "### What to fix" in alice
    bob = (reports / f"{SLUG}-bob" / "FEEDBACK.md").read_text()
    assert "Not graded: no commit at or before the deadline" in bob
    hostile = (reports / f"{SLUG}-{HOSTILE}" / "FEEDBACK.md").read_text()
    assert "<img" not in hostile and "&lt;img src=x onerror=alert(1)>\\*\\_[x]\\(y)\\|" in hostile
    # Raw, it reads as written: dates, module names and values without backslashes.
    assert "(committed 2026-03-01T10:00:00+00:00)" in alice and "#### self_attention_v1.py" in alice
    assert "\\_" not in alice and "\\-" not in alice and "\\:" not in alice
    # Beside each FEEDBACK.md, the page the class report links to: rendered, the hostile name inert.
    page = (reports / f"{SLUG}-alice" / "FEEDBACK.html").read_text()
    assert page.startswith("<!DOCTYPE html>") and "<h1>Feedback for alice</h1>" in page and "<table>" in page
    hostile_page = (reports / f"{SLUG}-{HOSTILE}" / "FEEDBACK.html").read_text()
    assert "<img" not in hostile_page and "&lt;img src=x onerror=alert(1)&gt;*_[x](y)|" in hostile_page


def test_markdown_report_is_inert(klass):
    text = (klass["out"] / "grades-report.md").read_text()
    assert "<img" not in text and "](y)" not in text
    assert "![grades-scores](grades-scores.svg)" in text.replace("\\-", "-")
    assert "The scores are not scaled" in text and "| 1 | self_attention_v1 |" in text
    assert f"[feedback]({ASSIGNMENT}-reports/{SLUG}-alice/FEEDBACK.md)" in text  # Markdown links to Markdown
    page = (klass["out"] / "grades-report.html").read_text()
    assert f'href="{ASSIGNMENT}-reports/{SLUG}-alice/FEEDBACK.html"' in page  # the page to a page


CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHECKER = """<script>window.addEventListener('load', () => {
  const images = [...document.images].map(i => i.getAttribute('src') + '=' + i.naturalWidth + 'x' + i.naturalHeight);
  document.body.setAttribute('data-images', images.join(' '));
});</script>"""


def chromium(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    profile = cwd / "chromium-profile"
    return subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         f"--user-data-dir={profile}", *args],
        cwd=cwd, capture_output=True, text=True, timeout=120,
    )


# Skipped on a machine without Chromium; never in CI, where .ci/run installs it (a missing browser fails there).
@pytest.mark.skipif(CHROMIUM is None and not os.environ.get("CI"), reason="chromium is not installed (.ci/run installs it)")
def test_class_report_renders_in_chromium_with_its_pictures(klass):
    assert CHROMIUM is not None, "chromium is not installed: .ci/run installs Debian's chromium"
    out = klass["out"]
    page = out / "grades-report.html"
    text = page.read_text()
    assert "<img src=x" not in text and "&lt;img src=x onerror=alert(1)&gt;" in text  # escaped, never markup
    screenshot = out / "class-report.png"
    proc = chromium(f"--screenshot={screenshot}", "--window-size=1200,2000", page.as_uri(), cwd=out)
    assert screenshot.is_file() and screenshot.stat().st_size > 20_000, proc.stderr[-2000:]
    # The same page with a script that records each picture's decoded size once loaded.
    probe = out / "grades-report-probe.html"
    probe.write_text(text.replace("</body>", CHECKER + "</body>"))
    dom = chromium("--dump-dom", "--virtual-time-budget=5000", probe.as_uri(), cwd=out).stdout
    images = dict(re.findall(r"(\S+\.svg)=(\d+x\d+)", re.search(r'data-images="([^"]*)"', dom).group(1)))
    assert set(images) == {"grades-scores.svg", "grades-exercises.svg"}
    assert all(not size.startswith("0x") for size in images.values()), images
    assert dom.count("<img ") == 2 and "onerror=alert" not in dom.replace("&lt;img src=x onerror=alert(1)&gt;", "")
    for name in ("alice", "bob"):
        assert f'href="{ASSIGNMENT}-reports/{SLUG}-{name}/FEEDBACK.html"' in dom

