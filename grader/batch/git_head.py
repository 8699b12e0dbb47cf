"""A student's ``HEAD`` resolved in Python, through real files only (``batch --deadline``).

git is never pointed at the student's repository (:mod:`grader.batch.git_reading`): the commit
it is handed is found here, reading ``HEAD``, a loose ref or ``packed-refs`` under the student's
``.git`` with no symbolic link followed, each file capped, every ref name checked.
"""

from __future__ import annotations

import errno
import os
import re
import stat
from pathlib import Path

from grader.batch.git_reading import HEX, MAX_RECORD, GitError

MAX_REF_BYTES = 4096  # HEAD or a loose ref
MAX_PACKED_REFS = 16 * 1024 * 1024
MAX_HOPS = 5  # symbolic refs followed at most
BAD_REF = re.compile(r"[\x00-\x20\x7f~^:?*\[\\]|\.\.|@\{|//|/\.|\.lock(?:/|$)|/$")


def _open_under(root: int, relative: str) -> int:
    """A file descriptor for ``relative`` under the folder ``root``, following no symbolic link."""
    parts = relative.split("/")
    fd = os.dup(root)
    try:
        for part in parts[:-1]:
            next_fd = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
            os.close(fd)
            fd = next_fd
        return os.open(parts[-1], os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=fd)
    finally:
        os.close(fd)


def _read_small(root: int, relative: str, limit: int) -> bytes | None:
    """A regular file's bytes (at most ``limit``), None when absent; GitError when it is a link,
    not a regular file, or larger."""
    try:
        fd = _open_under(root, relative)
    except FileNotFoundError:
        return None
    except NotADirectoryError:
        return None
    except OSError as exc:
        if exc.errno == errno.ELOOP:  # O_NOFOLLOW met a symbolic link
            raise GitError(f".git/{relative} is a symbolic link; the grader does not follow it") from None
        raise GitError(f".git/{relative} could not be read ({exc.strerror})") from None
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise GitError(f".git/{relative} is not a regular file")
        if info.st_size > limit:
            raise GitError(f".git/{relative} is larger than {limit} bytes")
        return handle.read(limit + 1)[:limit]


def _valid_ref(name: str) -> bool:
    return name.startswith("refs/") and len(name) <= 1024 and not BAD_REF.search(name) and "/." not in name


def _packed_ref(root: int, name: str) -> bytes | None:
    """``name``'s object id in ``packed-refs`` (None when it is not there)."""
    try:
        fd = _open_under(root, "packed-refs")
    except FileNotFoundError:
        return None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise GitError(".git/packed-refs is a symbolic link; the grader does not follow it") from None
        raise GitError(f".git/packed-refs could not be read ({exc.strerror})") from None
    wanted = name.encode()
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_PACKED_REFS:
            raise GitError(".git/packed-refs is not a regular file of at most 16 MiB")
        while line := handle.readline(MAX_RECORD):
            oid, _, ref = line.rstrip(b"\n").partition(b" ")
            if ref == wanted and HEX.fullmatch(oid):
                return oid
    return None


def resolve_head(git: Path) -> str:
    """The commit id the repository's ``HEAD`` names, read here through real files only (loose
    refs, then ``packed-refs``); GitError says why it cannot be."""
    try:
        root = os.open(git, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except OSError as exc:
        raise GitError(f".git could not be opened ({exc.strerror})") from None
    try:
        name = "HEAD"
        for _ in range(MAX_HOPS):
            data = _read_small(root, name, MAX_REF_BYTES)
            if data is None:
                data = _packed_ref(root, name) if name != "HEAD" else None
            if data is None:
                raise GitError(f"{'HEAD' if name == 'HEAD' else 'its branch ' + name} names no commit (an empty repository?)")
            data = data.strip()
            if HEX.fullmatch(data):
                return data.decode()
            if not data.startswith(b"ref:"):
                raise GitError(f".git/{name} is neither a commit id nor a ref")
            target = data[4:].strip().decode("utf-8", "replace")
            if not _valid_ref(target):
                raise GitError(f".git/{name} points outside refs/ or to a malformed ref name")
            name = target
        raise GitError(f"HEAD is a chain of more than {MAX_HOPS} symbolic refs")
    finally:
        os.close(root)
