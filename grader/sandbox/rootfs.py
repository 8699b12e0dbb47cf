"""The worker's file system: new namespaces and a read-only root built from an allow-list.

Runs in a module's supervisor (trusted), once, before any worker is forked. The new root
holds the system folders (``/usr``, ``/etc``, ...), the Python installation, the venv, the
``grader`` package and the submission copy, all read-only; a private, size-limited ``/tmp``
and ``/dev/shm``; a few devices. The instructor's ``tests/`` and ``solutions/``, other
submissions, reports and GitHub files are simply not there.
"""

from __future__ import annotations

import errno
import os
import shutil
import sys
import tempfile

from grader.sandbox import linux
from grader.settings import PROJECT_ROOT  # the instructor's repository: only its grader package is shown

# Folders of the operating system a worker may read (when they exist).
SYSTEM = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc")
DEVICES = ("null", "zero", "full", "random", "urandom")


def _inside(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def visible_paths() -> list[str]:
    """What student code may see (read-only): system folders, Python, the grader package.

    Never the instructor's repository itself: a path that holds it (``sys.path`` names it so
    that the zygote can import ``grader``) is left out; its ``grader`` package is shown.
    """
    wanted = [p for p in SYSTEM if os.path.lexists(p)]
    wanted += [sys.prefix, sys.exec_prefix, sys.base_prefix, sys.base_exec_prefix, str(PROJECT_ROOT / "grader")]
    wanted += [p for p in sys.path if p and os.path.isdir(p)]
    paths = sorted({os.path.abspath(p) for p in wanted if not _inside(str(PROJECT_ROOT), os.path.abspath(p))})
    return [p for p in paths if not any(_inside(p, q) and p != q and not os.path.islink(q) for q in paths)]


def system_binary(name: str) -> str:
    """The path of a program of the operating system (``sleep``), or ``OSError``."""
    found = shutil.which(name, path="/usr/bin:/bin")
    if found is None:
        raise OSError(errno.ENOENT, f"no {name} binary")
    return found


def isolate(sandbox_dir: str, scratch_mb: int) -> tuple[bool, list[str]]:
    """Enter new namespaces and an allow-listed root; return whether a user namespace was needed,
    and the scratch folders mounted in it (which each worker mounts anew: :func:`renew_scratch`)."""
    user_namespace = os.geteuid() != 0
    if user_namespace:
        uid, gid = os.getuid(), os.getgid()
        linux.unshare(linux.CLONE_NEWUSER, "unshare(user)")
        linux.write_id_maps(uid, gid)
    linux.unshare(linux.CLONE_NEWNS | linux.CLONE_NEWPID | linux.CLONE_NEWNET | linux.CLONE_NEWIPC)
    linux.mount(None, "/", None, linux.MS_REC | linux.MS_PRIVATE)
    sources = {}
    try:
        for path in visible_paths() + [sandbox_dir, "/proc"] + [f"/dev/{d}" for d in DEVICES]:
            if os.path.exists(path) and not (path in SYSTEM and os.path.islink(path)):
                sources[path] = os.open(path, os.O_PATH | os.O_CLOEXEC)
        scratch = _build_root(sources, sandbox_dir, scratch_mb)
    finally:
        for fd in sources.values():
            os.close(fd)
    return user_namespace, scratch


def _build_root(sources: dict[str, int], sandbox_dir: str, scratch_mb: int) -> list[str]:
    """Mount a tmpfs, bind every source into it, make it read-only, and pivot into it; return the
    scratch folders mounted in it."""
    new = tempfile.gettempdir()  # any folder: it is covered only in this mount namespace
    linux.mount("tmpfs", new, "tmpfs", linux.MS_NOSUID | linux.MS_NODEV, "mode=0755,size=1m")
    try:
        scratch = scratch_folders([path for path in sources if path != sandbox_dir])
        late = any(_inside(sandbox_dir, d) for d in scratch)  # bound once its scratch parent is mounted
        mounts = []
        for path, fd in sorted(sources.items()):
            if path != sandbox_dir or not late:
                _bind(fd, new + path)
                mounts.append(new + path)
        for path in SYSTEM:  # /bin -> usr/bin and friends, on merged-/usr systems
            if os.path.islink(path) and not os.path.lexists(new + path):
                os.symlink(os.readlink(path), new + path)
        for link, target in (("fd", "/proc/self/fd"), ("stdin", "/proc/self/fd/0"), ("stdout", "/proc/self/fd/1"),
                             ("stderr", "/proc/self/fd/2")):
            os.symlink(target, f"{new}/dev/{link}")
        for folder in (*scratch, "/.old"):
            os.makedirs(new + folder, exist_ok=True)
        linux.mount_read_only(new, mounts, recursive=True)
        for folder in scratch:  # private, writable, small; gone with the namespace
            _mount_scratch(new + folder, scratch_mb)
        if late:
            _bind(sources[sandbox_dir], new + sandbox_dir)
            linux.mount_read_only(new + sandbox_dir, [], recursive=False)
        linux.pivot_root(new, new + "/.old")
    except BaseException:
        linux.libc.umount2(new.encode(), linux.MNT_DETACH)
        raise
    os.chdir("/")
    linux.unmount("/.old")
    return scratch


def scratch_folders(shown: list[str]) -> list[str]:
    """``/tmp`` and ``/dev/shm``, unless a folder ``shown`` to the worker lies in them."""
    return [d for d in ("/tmp", "/dev/shm") if not any(_inside(path, d) for path in shown)]


def _mount_scratch(folder: str, scratch_mb: int) -> None:
    linux.mount("tmpfs", folder, "tmpfs", linux.MS_NOSUID | linux.MS_NODEV, f"mode=1777,size={scratch_mb}m,nr_inodes=4096")


def renew_scratch(sandbox_dir: str, scratch_mb: int, folders: list[str]) -> None:
    """In a worker's own mount namespace (inside the root :func:`isolate` built): an empty
    ``/tmp`` and ``/dev/shm`` of its own (``folders``: those :func:`isolate` mounted), so nothing an
    earlier worker of the same Box wrote there reaches it; the submission folder is bound again
    where the new ``/tmp`` covers it."""
    for folder in folders:
        keep = os.open(sandbox_dir, os.O_PATH | os.O_CLOEXEC) if _inside(sandbox_dir, folder) else None
        try:
            _mount_scratch(folder, scratch_mb)
            if keep is not None:
                _bind(keep, sandbox_dir)
                linux.mount_read_only(sandbox_dir, [], recursive=False)
        finally:
            if keep is not None:
                os.close(keep)


def _bind(fd: int, target: str) -> None:
    """Bind what ``fd`` (an O_PATH descriptor) names onto ``target``, made to match."""
    if os.path.isdir(f"/proc/self/fd/{fd}"):
        os.makedirs(target, mode=0o755, exist_ok=True)
    else:
        os.makedirs(os.path.dirname(target), mode=0o755, exist_ok=True)
        open(target, "w").close()
    linux.mount(f"/proc/self/fd/{fd}", target, None, linux.MS_BIND | linux.MS_REC)
