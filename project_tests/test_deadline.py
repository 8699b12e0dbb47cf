"""``batch --deadline`` reads a hostile git repository without running anything it configures,
following no link out of it, and picks the last commit at or before the deadline."""

from __future__ import annotations

import datetime as dt
import os
import subprocess
from pathlib import Path

import pytest

from grader.batch import deadline
from project_tests.adversarial import repositories

STEMS = ["simple_attention", "mha"]
UTC = dt.timezone.utc


def git(repo: Path, *args: str, when: str = "2026-03-01T10:00:00+00:00") -> str:
    env = {**os.environ, "GIT_COMMITTER_DATE": when, "GIT_AUTHOR_DATE": when, "GIT_CONFIG_GLOBAL": "/dev/null",
           "GIT_CONFIG_NOSYSTEM": "1"}
    return subprocess.run(["git", "-C", str(repo), "-c", "user.name=s", "-c", "user.email=s@example.org", *args],
                          check=True, env=env, capture_output=True, text=True).stdout.strip()


def repository(folder: Path) -> Path:
    (folder / "exercises" / "ch03").mkdir(parents=True)
    (folder / "exercises" / "ch03" / "simple_attention.py").write_text("ANSWER = 1\n")
    (folder / "exercises" / "ch03" / "extra.py").write_text("")
    (folder / "conftest.py").write_text("")
    git(folder, "init", "-q")
    git(folder, "add", "-A")
    git(folder, "commit", "-q", "-m", "one")
    (folder / "exercises" / "ch03" / "simple_attention.py").write_text("ANSWER = 2\n")
    git(folder, "commit", "-q", "-am", "two", when="2026-03-03T10:00:00+00:00")
    return folder


def test_the_last_commit_at_or_before_the_deadline_is_read_as_blobs(tmp_path):
    repo = repository(tmp_path / "s")
    found = deadline.at_deadline(repo, "ch03", STEMS, dt.datetime(2026, 3, 2, tzinfo=UTC))
    assert found.problem == "" and found.commit == git(repo, "rev-parse", "HEAD~1")
    assert found.committed == "2026-03-01T10:00:00+00:00"
    assert found.sources == {"simple_attention": b"ANSWER = 1\n"}  # mha is missing: the intake says so
    assert "conftest.py tries to configure pytest or Python (ignored by the grader)" in found.flags
    assert "exercises/ch03/extra.py is not an exercise module (ignored by the grader)" in found.flags
    exactly = deadline.at_deadline(repo, "ch03", STEMS, dt.datetime(2026, 3, 3, 10, tzinfo=UTC))
    assert exactly.sources == {"simple_attention": b"ANSWER = 2\n"}  # "at or before": the deadline itself counts
    early = deadline.at_deadline(repo, "ch03", STEMS, dt.datetime(2026, 2, 1, tzinfo=UTC))
    assert early.commit == "" and "no commit at or before the deadline" in early.problem and "2026-03-03T10:00:00+00:00" in early.problem


def test_nothing_the_repository_configures_runs(tmp_path):
    repo = repository(tmp_path / "s")
    witness = tmp_path / "ran"
    command = f"sh -c 'echo ran >> {witness}'"
    with open(repo / ".git" / "config", "a") as config:
        config.write(f"[core]\n\tfsmonitor = {command}\n\tpager = {command}\n\thooksPath = {tmp_path}\n"
                     f"[log]\n\tshowSignature = true\n[gpg]\n\tprogram = {command}\n"
                     f"[filter \"x\"]\n\tsmudge = {command}\n\ttextconv = {command}\n[alias]\n\trev-list = !{command}\n"
                     f"[include]\n\tpath = {tmp_path / 'included'}\n")
    (tmp_path / "included").write_text(f"[core]\n\tfsmonitor = {command}\n")
    (repo / ".gitattributes").write_text("*.py filter=x diff=x\n")
    hook = repo / ".git" / "hooks" / "post-checkout"
    hook.write_text(f"#!/bin/sh\n{command}\n")
    hook.chmod(0o755)
    found = deadline.at_deadline(repo, "ch03", STEMS, dt.datetime(2026, 3, 4, tzinfo=UTC))
    assert found.sources == {"simple_attention": b"ANSWER = 2\n"}
    assert not witness.exists()
    assert not (tmp_path / "s" / ".git" / "index.lock").exists()


@pytest.mark.parametrize("how", ["git-file", "git-link", "alternates", "objects-link", "pack-link"])
def test_a_repository_that_points_elsewhere_is_refused(tmp_path, how):
    other = repository(tmp_path / "other")
    repo = repository(tmp_path / "s")
    if how == "git-file":
        os.rename(repo / ".git", tmp_path / "moved")
        (repo / ".git").write_text(f"gitdir: {tmp_path / 'moved'}\n")
    elif how == "git-link":
        os.rename(repo / ".git", tmp_path / "moved")
        (repo / ".git").symlink_to(tmp_path / "moved")
    elif how == "alternates":
        (repo / ".git" / "objects" / "info" / "alternates").write_text(f"{other / '.git' / 'objects'}\n")
    elif how == "objects-link":
        os.rename(repo / ".git" / "objects", tmp_path / "objects")
        (repo / ".git" / "objects").symlink_to(tmp_path / "objects")
    else:
        (repo / ".git" / "objects" / "pack" / "pack-x.pack").symlink_to("/etc/passwd")
    found = deadline.at_deadline(repo, "ch03", STEMS, dt.datetime(2026, 3, 4, tzinfo=UTC))
    assert found.repository and found.commit == "" and found.sources == {}
    assert "symbolic link" in found.problem or "elsewhere" in found.problem or "borrows" in found.problem


def test_a_folder_without_git_is_no_repository(tmp_path):
    (tmp_path / "s").mkdir()
    found = deadline.at_deadline(tmp_path / "s", "ch03", STEMS, dt.datetime(2026, 3, 4, tzinfo=UTC))
    assert not found.repository and found.problem == ""


@pytest.mark.parametrize("text, ok", [("2026-03-01T23:59:00+01:00", True), ("2026-03-01T23:59Z", True),
                                      ("2026-03-01T23:59", False), ("tomorrow", False)])
def test_deadline_parsing(text, ok):
    if ok:
        assert deadline.parse(text).tzinfo is not None
    else:
        with pytest.raises(deadline.DeadlineError):
            deadline.parse(text)


# -- hostile repositories (project_tests/adversarial/repositories.py), read in this process -------


@pytest.mark.parametrize("name", sorted(repositories.ATTACKS))
def test_a_hostile_repository_runs_nothing_reads_nothing_outside_and_costs_only_its_own_grade(tmp_path, name):
    build, expected = repositories.ATTACKS[name]
    outside = tmp_path / "instructor"
    outside.mkdir()
    repo = build(tmp_path / "s", outside)
    found = deadline.at_deadline(repo, "ch03", STEMS, deadline.parse(repositories.DEADLINE))
    assert not (outside / "ran").exists()  # no command the repository names ran
    assert repositories.SECRET not in repr(found)  # nothing it includes from outside was read
    if expected == "graded":
        assert found.problem == "" and found.sources == {"simple_attention": b"ANSWER = 1\n"}, found.problem
        assert found.committed == "2026-03-01T10:00:00+00:00"
    else:
        assert expected in found.problem and found.sources == {}, found.problem


def test_the_date_shown_is_the_one_git_filtered_on(tmp_path):
    found = deadline.at_deadline(repositories.two_committers(tmp_path / "s", tmp_path), "ch03", STEMS,
                                 deadline.parse(repositories.DEADLINE))
    # git reads the first committer line (after the deadline): the honest commit before it is graded
    assert found.committed == "2026-03-01T10:00:00+00:00" and (found.later, found.latest) == (1, "2026-03-03T12:00:00+02:00")
    huge = deadline.at_deadline(repositories.huge_time_after_work(tmp_path / "t", tmp_path), "ch03", STEMS,
                                deadline.parse(repositories.DEADLINE))
    assert huge.problem == "" and huge.later == 1 and "after the year 9999" in huge.latest


def test_any_failure_is_the_students_problem_never_an_exception(tmp_path, monkeypatch):
    repo = repository(tmp_path / "s")

    def broken(*args, **kwargs):
        raise RuntimeError("an unforeseen failure")

    monkeypatch.setattr(deadline, "read_modules", broken)
    found = deadline.at_deadline(repo, "ch03", STEMS, dt.datetime(2026, 3, 4, tzinfo=UTC))
    assert found.problem.startswith("commit ") and "RuntimeError: an unforeseen failure" in found.problem
    assert found.sources == {}


@pytest.mark.parametrize("how", ["packed", "detached", "fifo-head", "linked-refs", "chain", "big-head"])
def test_head_is_resolved_through_real_files_only(tmp_path, how):
    repo = repository(tmp_path / "s")
    head = git(repo, "rev-parse", "HEAD")
    gitdir = repo / ".git"
    if how == "packed":  # as a fresh clone has it
        git(repo, "pack-refs", "--all")
        assert not (gitdir / "refs" / "heads" / git(repo, "branch", "--show-current")).exists()
    elif how == "detached":
        (gitdir / "HEAD").write_text(head + "\n")
    elif how == "fifo-head":
        (gitdir / "HEAD").unlink()
        os.mkfifo(gitdir / "HEAD")
    elif how == "linked-refs":
        os.rename(gitdir / "refs" / "heads", tmp_path / "heads")
        (gitdir / "refs" / "heads").symlink_to(tmp_path / "heads")
    elif how == "chain":
        (gitdir / "HEAD").write_text("ref: refs/heads/a\n")
        for a, b in zip("abcdef", "bcdefg"):
            (gitdir / "refs" / "heads" / a).write_text(f"ref: refs/heads/{b}\n")
    else:
        (gitdir / "HEAD").write_text("ref: refs/heads/" + "x" * 10_000 + "\n")
    found = deadline.at_deadline(repo, "ch03", STEMS, dt.datetime(2026, 3, 4, tzinfo=UTC))
    if how in ("packed", "detached"):
        assert found.problem == "" and found.commit == head
    else:
        assert found.commit == "" and "HEAD could not be resolved" in found.problem, found.problem


# -- GitHub Classroom's history (issue 33): the template's initial commit, commits after the deadline --

BOT = "github-classroom[bot]"
DUE = dt.datetime(2026, 3, 1, 23, 59, tzinfo=dt.timezone(dt.timedelta(hours=1)))


def released_template(folder: Path) -> dict[str, str]:
    """A released template (stubs, workflow, a public test, pytest.ini); its manifest's hashes."""
    from grader import manifest
    from project_tests.helpers import stub_sources

    for stem, text in stub_sources("ch03").items():
        (folder / "exercises" / "ch03").mkdir(parents=True, exist_ok=True)
        (folder / "exercises" / "ch03" / f"{stem}.py").write_text(text)
    (folder / ".github" / "workflows").mkdir(parents=True)
    (folder / ".github" / "workflows" / "classroom.yml").write_text("on: push\n")
    (folder / "public_tests" / "ch03").mkdir(parents=True)
    (folder / "public_tests" / "ch03" / "test_simple_attention.py").write_text("def test_x():\n    pass\n")
    (folder / "pytest.ini").write_text("[pytest]\n")
    return manifest.hash_folder(folder)


def accepted(tmp_path: Path, name: str = "s") -> tuple[Path, dict[str, str]]:
    """A student's repository as ``gh classroom clone`` gives it: one "Initial commit" of the
    template by Classroom's bot, at acceptance (before the deadline)."""
    import shutil

    template = tmp_path / "template"
    if not template.exists():
        template.mkdir()
        released_template(template)
    from grader import manifest

    hashes = manifest.hash_folder(template)
    repo = tmp_path / name
    shutil.copytree(template, repo)
    repositories.git(repo, "init", "-q", "-b", "main")
    repositories.git(repo, "add", "-A")
    repositories.git(repo, "commit", "-q", "-m", "Initial commit", name=BOT, when="2026-02-20T09:00:00+00:00")
    return repo, hashes


def student_commit(repo: Path, when: str, files: dict[str, str]) -> None:
    for relative, text in files.items():
        path = repo / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    repositories.git(repo, "add", "-A")
    repositories.git(repo, "commit", "-q", "-m", "work", when=when)


def test_a_student_who_committed_only_after_the_deadline_is_graded_at_the_template(tmp_path):
    repo, hashes = accepted(tmp_path)
    student_commit(repo, "2026-03-02T10:00:00+00:00", {"exercises/ch03/simple_attention.py": "ANSWER = 1\n"})
    student_commit(repo, "2026-03-04T09:30:00+02:00", {"exercises/ch03/mha.py": "ANSWER = 2\n"})
    found = deadline.at_deadline(repo, "ch03", STEMS, DUE, hashes)
    assert found.problem == "" and found.committed == "2026-02-20T09:00:00+00:00"
    assert found.template_commit and found.later == 2 and found.latest == "2026-03-04T09:30:00+02:00"


def test_work_before_the_deadline_is_not_the_template(tmp_path):
    repo, hashes = accepted(tmp_path)
    student_commit(repo, "2026-02-25T10:00:00+00:00", {"README.md": "notes\n"})  # not work on an exercise
    readme_only = deadline.at_deadline(repo, "ch03", STEMS, DUE, hashes)
    assert readme_only.template_commit and readme_only.later == 0 and readme_only.latest == ""
    student_commit(repo, "2026-03-01T22:00:00+00:00", {"exercises/ch03/mha.py": "ANSWER = 2\n"})  # 23:00+01:00
    found = deadline.at_deadline(repo, "ch03", STEMS, DUE, hashes)
    assert not found.template_commit and found.sources["mha"] == b"ANSWER = 2\n" and found.later == 0
    unknown = deadline.at_deadline(repo, "ch03", STEMS, DUE, {})  # the template's stubs unknown: not claimed
    assert not unknown.template_commit


def test_template_flags_are_those_of_the_graded_commit(tmp_path):
    from grader.batch.template_files import template_flags

    repo, hashes = accepted(tmp_path)
    (repo / "public_tests" / "ch03" / "test_simple_attention.py").unlink()
    student_commit(repo, "2026-03-01T10:00:00+00:00", {".github/workflows/classroom.yml": "on: [push]\n",
                                                        ".github/workflows/mine.yml": "on: push\n",
                                                        "exercises/ch03/mha.py": "ANSWER = 2\n"})
    expected = template_flags(repo, hashes)  # the work tree is the graded commit's, here
    assert expected == [".github/workflows/classroom.yml was changed from the template",
                        "public_tests/ch03/test_simple_attention.py was removed (template file)",
                        ".github/workflows/mine.yml is a workflow that is not in the template"]
    student_commit(repo, "2026-03-03T10:00:00+00:00", {".github/workflows/classroom.yml": "on: push\n"})  # undone, late
    found = deadline.at_deadline(repo, "ch03", STEMS, DUE, hashes, compare_with=hashes)
    assert found.problem == "" and [f for f in found.flags if f in expected] == expected
    assert not any("template" in f for f in deadline.at_deadline(repo, "ch03", STEMS, DUE, hashes).flags)


def test_the_checkouts_stubs_tell_the_template_commit_without_a_released_template(tmp_path):
    from grader.assignment import Assignment
    from grader.batch.template_files import template_stubs
    from grader.settings import Settings

    stubs = template_stubs(Assignment.resolve("ch03", Settings()))
    repo, hashes = accepted(tmp_path)  # its stubs are release's own
    assert {k: v for k, v in hashes.items() if k.startswith("exercises/")} == stubs
    assert deadline.at_deadline(repo, "ch03", STEMS, DUE, stubs).template_commit


def test_a_special_file_among_the_objects_is_refused_before_git_would_wait_on_it(tmp_path):
    repo = repository(tmp_path / "s")
    blob = git(repo, "rev-parse", "HEAD:exercises/ch03/simple_attention.py")
    (repo / ".git" / "objects" / blob[:2] / blob[2:]).unlink()
    os.mkfifo(repo / ".git" / "objects" / blob[:2] / blob[2:])
    found = deadline.at_deadline(repo, "ch03", STEMS, dt.datetime(2026, 3, 4, tzinfo=UTC))
    assert found.commit == "" and "is not a regular file" in found.problem
