"""Hostile git repositories for ``batch --deadline`` (``grader.batch.deadline``): each is a
student's repository with one honest commit before the deadline, then one attack on the process
that reads it (run a command, read a file outside, follow a link, exhaust memory, crash it,
show a date that is not the one git filtered on).

Every builder takes the repository's folder and ``outside`` (a folder of the instructor's, where a
command that ran leaves ``outside/ran`` and where secrets live) and returns the folder. Objects
git would refuse to write are written with ``hash-object --literally``.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

DEADLINE = "2026-03-01T23:59:00+01:00"
BEFORE = "2026-03-01T10:00:00+00:00"  # 1772359200
AFTER = "2026-03-03T10:00:00+00:00"
SECRET = "SECRETabbrev7d41"  # what an included configuration file holds
HUGE = 200 * 1024 * 1024


def git(repo: Path, *args: str, when: str = BEFORE, name: str = "s", data: bytes | None = None) -> str:
    env = {**os.environ, "GIT_COMMITTER_DATE": when, "GIT_AUTHOR_DATE": when, "GIT_CONFIG_GLOBAL": "/dev/null",
           "GIT_CONFIG_NOSYSTEM": "1", "GIT_AUTHOR_NAME": name, "GIT_COMMITTER_NAME": name,
           "GIT_AUTHOR_EMAIL": "s@example.org", "GIT_COMMITTER_EMAIL": "s@example.org"}
    done = subprocess.run(["git", "-C", str(repo), *args], check=True, env=env, capture_output=True, input=data)
    return done.stdout.decode().strip()


def honest(folder: Path, sources: dict[str, str] | None = None) -> Path:
    """A repository with one commit before the deadline holding ``sources`` (stem -> text)."""
    exercises = folder / "exercises" / "ch03"
    exercises.mkdir(parents=True)
    for stem, text in (sources or {"simple_attention": "ANSWER = 1\n"}).items():
        (exercises / f"{stem}.py").write_text(text)
    git(folder, "init", "-q", "-b", "main")
    git(folder, "add", "-A")
    git(folder, "commit", "-q", "-m", "work")
    return folder


def raw_commit(repo: Path, header: str, message: bytes = b"x\n") -> str:
    """A commit object written as given (git's own checks skipped)."""
    return git(repo, "hash-object", "-w", "--literally", "-t", "commit", "--stdin", data=header.encode() + b"\n" + message)


def set_head(repo: Path, commit: str) -> None:
    git(repo, "update-ref", "refs/heads/main", commit)


def _config(repo: Path, text: str) -> None:
    with open(repo / ".git" / "config", "a") as config:
        config.write(text)


def _lazy(repo: Path) -> None:
    """Remove the module's blob: git must fetch it from the promisor remote to read it."""
    blob = git(repo, "rev-parse", "HEAD:exercises/ch03/simple_attention.py")
    (repo / ".git" / "objects" / blob[:2] / blob[2:]).unlink()


def promisor_ext(folder: Path, outside: Path) -> Path:
    honest(folder)
    _lazy(folder)
    _config(folder, f"[core]\n\trepositoryformatversion = 1\n[extensions]\n\tpartialClone = origin\n"
                    f"[remote \"origin\"]\n\turl = ext::sh -c touch% {outside / 'ran'}\n\tpromisor = true\n"
                    "[protocol \"ext\"]\n\tallow = always\n[protocol]\n\tallow = always\n")
    return folder


def promisor_uploadpack(folder: Path, outside: Path) -> Path:
    honest(folder)
    _lazy(folder)
    _config(folder, f"[core]\n\trepositoryformatversion = 1\n[extensions]\n\tpartialClone = origin\n"
                    f"[remote \"origin\"]\n\turl = {folder}\n\tpromisor = true\n"
                    f"\tuploadpack = touch {outside / 'ran'}; git-upload-pack\n"
                    "[protocol \"file\"]\n\tallow = always\n")
    return folder


def included_config(folder: Path, outside: Path) -> Path:
    """``include.path`` and ``includeIf`` name a file outside whose value git would quote in an error."""
    honest(folder)
    (outside / "instructor.conf").write_text(f"[core]\n\tabbrev = {SECRET}\n")
    _config(folder, f"[include]\n\tpath = {outside / 'instructor.conf'}\n"
                    f"[includeIf \"gitdir:/\"]\n\tpath = {outside / 'instructor.conf'}\n")
    return folder


def linked_branch(folder: Path, outside: Path) -> Path:
    """The branch ref is a symbolic link to a file outside the repository."""
    honest(folder)
    commit = git(folder, "rev-parse", "HEAD")
    (outside / "a-ref").write_text(commit + "\n")
    (folder / ".git" / "refs" / "heads" / "main").unlink()
    (folder / ".git" / "refs" / "heads" / "main").symlink_to(outside / "a-ref")
    return folder


def head_outside_refs(folder: Path, outside: Path) -> Path:
    honest(folder)
    (outside / "a-ref").write_text(git(folder, "rev-parse", "HEAD") + "\n")
    (folder / ".git" / "HEAD").write_text(f"ref: refs/../../../../../../../../{outside / 'a-ref'}\n")
    return folder


def huge_time(folder: Path, outside: Path) -> Path:
    """HEAD's committer time is 10^19 seconds: its only commit, so nothing is before the deadline."""
    folder.mkdir()
    git(folder, "init", "-q", "-b", "main")
    tree = git(folder, "mktree", data=b"")
    set_head(folder, raw_commit(folder, f"tree {tree}\nauthor s <s@example.org> 1772359200 +0000\n"
                                        "committer s <s@example.org> 10000000000000000000 +0000\n"))
    return folder


def huge_time_after_work(folder: Path, outside: Path) -> Path:
    """Work before the deadline, then a commit dated 10^19 seconds."""
    honest(folder)
    tree = git(folder, "rev-parse", "HEAD^{tree}")
    parent = git(folder, "rev-parse", "HEAD")
    set_head(folder, raw_commit(folder, f"tree {tree}\nparent {parent}\nauthor s <s@example.org> 1772359200 +0000\n"
                                        "committer s <s@example.org> 10000000000000000000 +0000\n"))
    return folder


def committer_first(folder: Path, outside: Path) -> Path:
    """The committer line comes before the author line: git reads the date as 0 (1970, before any
    deadline), while the committer line says after the deadline."""
    honest(folder)
    tree = git(folder, "rev-parse", "HEAD^{tree}")
    parent = git(folder, "rev-parse", "HEAD")
    set_head(folder, raw_commit(folder, f"tree {tree}\nparent {parent}\ncommitter s <s@example.org> 1772532000 +0000\n"
                                        "author s <s@example.org> 1772532000 +0000\n"))
    return folder


def two_committers(folder: Path, outside: Path) -> Path:
    """Two committer lines: git filters on the first (after the deadline); the second says before."""
    honest(folder)
    tree = git(folder, "rev-parse", "HEAD^{tree}")
    parent = git(folder, "rev-parse", "HEAD")
    set_head(folder, raw_commit(folder, f"tree {tree}\nparent {parent}\nauthor s <s@example.org> 1772359200 +0000\n"
                                        "committer s <s@example.org> 1772532000 +0200\n"
                                        "committer s <s@example.org> 1772359300 +0300\n"))
    return folder


def huge_blobs(folder: Path, outside: Path) -> Path:
    """A 200 MB exercise module and a 200 MB ``pytest.ini`` (a template file the grader compares
    with the template's own); zeros: fast to write, small on disk."""
    honest(folder)
    for path in (folder / "exercises" / "ch03" / "simple_attention.py", folder / "pytest.ini"):
        with open(path, "wb") as handle:
            handle.truncate(HUGE)
    git(folder, "add", "-A")
    git(folder, "commit", "-q", "-m", "big")
    return folder


def huge_message(folder: Path, outside: Path) -> Path:
    """The graded commit's message is 200 MB."""
    honest(folder)
    tree = git(folder, "rev-parse", "HEAD^{tree}")
    parent = git(folder, "rev-parse", "HEAD")
    set_head(folder, raw_commit(folder, f"tree {tree}\nparent {parent}\nauthor s <s@example.org> 1772359200 +0000\n"
                                        "committer s <s@example.org> 1772359200 +0000\n", b"x" * HUGE))
    return folder


def huge_tree(folder: Path, outside: Path, count: int = 1_000_000) -> Path:
    """The graded commit holds a folder of ``count`` files (one empty blob under many names)."""
    honest(folder)
    empty = bytes.fromhex(git(folder, "hash-object", "-w", "--stdin", data=b""))
    many = b"".join(b"100644 %07d\0" % i + empty for i in range(count))
    sub = git(folder, "hash-object", "-w", "--literally", "-t", "tree", "--stdin", data=many)
    listing = git(folder, "ls-tree", "HEAD")
    top = git(folder, "mktree", data=(listing + f"\n040000 tree {sub}\tmany\n").encode())
    set_head(folder, raw_commit(folder, f"tree {top}\nparent {git(folder, 'rev-parse', 'HEAD')}\n"
                                        "author s <s@example.org> 1772359200 +0000\ncommitter s <s@example.org> 1772359200 +0000\n"))
    return folder


# name -> (builder, what the deadline must say: "graded" or a part of the "not graded" reason)
ATTACKS = {
    "promisor_ext": (promisor_ext, "could not be read"),
    "promisor_uploadpack": (promisor_uploadpack, "could not be read"),
    "included_config": (included_config, "graded"),
    "linked_branch": (linked_branch, "symbolic link"),
    "head_outside_refs": (head_outside_refs, "outside refs/"),
    "huge_time": (huge_time, "no commit at or before the deadline"),
    "huge_time_after_work": (huge_time_after_work, "graded"),
    "committer_first": (committer_first, "no committer line right after its author line"),
    "two_committers": (two_committers, "graded"),
}
