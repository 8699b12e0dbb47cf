"""Reading a hostile git repository without reading its configuration or anything outside it.

git is never pointed at the student's repository. :class:`Reader` makes a git folder of the
grader's own (a fresh private temporary folder: its own minimal configuration, a ``HEAD``, no
ref, no remote) whose ``objects/info/alternates`` names the student's ``.git/objects``; git
then finds the student's objects there and nothing else: not the student's ``config`` (so no
``include.path``, no promisor remote, no ``protocol.*.allow``, no ``uploadpack``), hooks,
grafts, ``shallow`` file or refs. The student's ``HEAD`` is resolved in Python
(:func:`grader.batch.git_head.resolve_head`), through real files only, and git is handed a commit id. Every transport
is off, the environment is rebuilt from nothing, and git's output is read as a stream with a
cap: a command whose output passes its cap is killed.
"""

from __future__ import annotations

import hashlib
import os
import re
import selectors
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

GIT_TIMEOUT = 30.0
MAX_RECORD = 64 * 1024  # one line of git's output
MAX_ERROR = 4096  # git's error output kept
HEX = re.compile(rb"[0-9a-f]{40}(?:[0-9a-f]{24})?")
# The grader's own git folder: nothing here can run a program, reach out, or read another file.
CONFIG = """[core]
\trepositoryformatversion = {version}
\tbare = true
\tcommitGraph = false
\tmultiPackIndex = false
\tfsmonitor = false
\thooksPath = /dev/null
\tpager = cat
\tsshCommand = /bin/false
\taskPass = /bin/false
[protocol]
\tallow = never
[gpg]
\tprogram = /bin/false
[log]
\tshowSignature = false
"""


class Entry(NamedTuple):
    """One entry of ``git ls-tree -l``."""

    mode: str
    kind: str
    obj: str
    size: int  # -1 for a tree or a submodule
    path: bytes

    @property
    def regular(self) -> bool:
        return self.kind == "blob" and self.mode in ("100644", "100755")


class GitError(OSError):
    """git failed, or the repository cannot be read safely; its message is short and says why."""


def environment(home: Path) -> dict[str, str]:
    """git's whole environment: no system or global configuration, no transport, no prompt."""
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home), "XDG_CONFIG_HOME": str(home),
        "LC_ALL": "C", "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_TERMINAL_PROMPT": "0",
        "GIT_NO_REPLACE_OBJECTS": "1", "GIT_OPTIONAL_LOCKS": "0", "GIT_ATTR_NOSYSTEM": "1", "GIT_ALLOW_PROTOCOL": "",
        "GIT_NO_LAZY_FETCH": "1", "GIT_CEILING_DIRECTORIES": str(home.parent), "GIT_PROTOCOL_FROM_USER": "0",
    }


class Reader:
    """git on a private git folder that borrows the objects of ``git`` (a student's ``.git``);
    a context manager that removes the folder."""

    def __init__(self, git: Path, commit: str) -> None:
        objects = os.path.abspath(git / "objects")
        self.home = Path(tempfile.mkdtemp(prefix="grader-git-"))  # private: mode 0700
        own = self.git_dir = self.home / "git"
        try:
            (own / "objects" / "info").mkdir(parents=True)
            (own / "refs").mkdir()
            (own / "HEAD").write_text("ref: refs/heads/none\n")
            sha256 = len(commit) == 64
            (own / "config").write_text(CONFIG.format(version=1 if sha256 else 0)
                                        + ("[extensions]\n\tobjectFormat = sha256\n" if sha256 else ""))
            # An alternates line cannot hold a line break, which a folder's name can: git is given
            # a link of our own, with a plain name, to the student's objects (checked to be a real folder).
            (self.home / "student-objects").symlink_to(objects, target_is_directory=True)
            (own / "objects" / "info" / "alternates").write_text(str(self.home / "student-objects") + "\n")
        except OSError:
            shutil.rmtree(self.home, ignore_errors=True)
            raise
        self.env = environment(self.home)

    def __enter__(self) -> Reader:
        return self

    def __exit__(self, *exc) -> None:
        shutil.rmtree(self.home, ignore_errors=True)

    def command(self, *args: str) -> list[str]:
        return ["git", "--no-pager", "--git-dir", str(self.git_dir), *args]

    def chunks(self, *args: str) -> Iterator[bytes]:
        """git's output as it comes; git is killed when the caller stops early, and a failure
        (exit status, time limit) is a GitError at the end."""
        proc = subprocess.Popen(self.command(*args), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, env=self.env, cwd=self.home)
        errors = b""
        end = time.monotonic() + GIT_TIMEOUT
        try:
            with selectors.DefaultSelector() as selector:
                selector.register(proc.stdout, selectors.EVENT_READ)
                selector.register(proc.stderr, selectors.EVENT_READ)
                open_pipes = 2
                while open_pipes:
                    left = end - time.monotonic()
                    if left <= 0:
                        raise GitError(f"git {args[0]} took more than {GIT_TIMEOUT:g} s")
                    for key, _ in selector.select(left):
                        data = os.read(key.fd, 65536)
                        if not data:
                            selector.unregister(key.fileobj)
                            open_pipes -= 1
                        elif key.fileobj is proc.stderr:
                            errors = (errors + data)[-MAX_ERROR:]
                        else:
                            yield data
            if proc.wait(max(0.1, end - time.monotonic())) != 0:
                last = errors.decode("utf-8", "replace").strip().splitlines()[-1:]
                raise GitError(last[0] if last else f"git {args[0]} failed")
        except subprocess.TimeoutExpired:
            raise GitError(f"git {args[0]} took more than {GIT_TIMEOUT:g} s") from None
        finally:
            if proc.poll() is None:
                proc.kill()
            proc.wait()
            proc.stdout.close()
            proc.stderr.close()

    def read(self, *args: str, limit: int) -> bytes:
        """git's output, at most ``limit`` bytes: GitError when it has more (git is stopped then)."""
        kept = bytearray()
        stream = self.chunks(*args)
        try:
            for data in stream:
                kept += data
                if len(kept) > limit:
                    raise GitError(f"git {args[0]} printed more than {limit} bytes")
        finally:
            stream.close()
        return bytes(kept)

    def records(self, *args: str, separator: bytes = b"\0", limit: int) -> Iterator[bytes]:
        """git's output split at ``separator``, none longer than MAX_RECORD; past ``limit`` records
        git is stopped and TooMany raised."""
        pending = b""
        count = 0
        stream = self.chunks(*args)
        try:
            for data in stream:
                pending += data
                *complete, pending = pending.split(separator)
                for record in complete:
                    count += 1
                    if count > limit:
                        raise TooMany(limit)
                    yield record
                if len(pending) > MAX_RECORD:
                    raise GitError(f"git {args[0]} printed a line longer than {MAX_RECORD} bytes")
            if pending:
                yield pending
        finally:
            stream.close()

    def prefix(self, limit: int, *args: str) -> bytes:
        """The first ``limit`` bytes of git's output (git is stopped once they are read)."""
        kept = bytearray()
        stream = self.chunks(*args)
        try:
            for data in stream:
                kept += data[: limit - len(kept)]
                if len(kept) >= limit:
                    break
        finally:
            stream.close()
        return bytes(kept)

    def entries(self, limit: int, *args: str) -> Iterator[Entry]:
        """``git ls-tree -l -z --full-tree ARGS``'s entries, at most ``limit`` (then TooMany)."""
        for record in self.records("ls-tree", "-l", "-z", "--full-tree", *args, limit=limit):
            if b"\t" not in record:
                continue
            meta, path = record.split(b"\t", 1)
            mode, kind, obj, size = (meta.decode("ascii", "replace").split() + ["", "", "", ""])[:4]
            if kind == "blob" and not size.isdigit():  # "BAD": git cannot find it
                shown = os.fsdecode(path).encode("utf-8", "backslashreplace").decode("ascii", "backslashreplace")[:200]
                raise GitError(f"object {obj[:12]} of {shown} is missing from the repository")
            yield Entry(mode, kind, obj, int(size) if size.isdigit() else -1, path)

    def sha256(self, entry: Entry | None, limit: int) -> str | None:
        """The sha256 of a regular file's blob of at most ``limit`` bytes (its size checked
        first), else None."""
        if entry is None or not entry.regular or not 0 <= entry.size <= limit:
            return None
        return hashlib.sha256(self.read("cat-file", "blob", entry.obj, limit=limit)).hexdigest()

    def object_info(self, obj: str) -> tuple[str, int]:
        """``(type, size)`` of an object, read from its header only."""
        if not HEX.fullmatch(obj.encode()):
            raise GitError(f"{obj[:20]!r} is not an object id")
        kind = self.read("cat-file", "-t", obj, limit=64).strip().decode("ascii", "replace")
        size = int(self.read("cat-file", "-s", obj, limit=64).strip() or b"0")
        return kind, size


class TooMany(GitError):
    """git printed more records than the caller's limit (it was stopped)."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"more than {limit} entries")
        self.limit = limit
