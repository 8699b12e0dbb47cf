"""``batch --deadline`` reads a hostile git repository without running anything it configures,
following no link out of it, and picks the last commit at or before the deadline."""

from __future__ import annotations

import datetime as dt
import os
import subprocess
from pathlib import Path

import pytest

from grader.batch import deadline

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
