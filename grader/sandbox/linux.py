"""Raw Linux system calls the sandbox needs, through ``ctypes`` (or ``os``): no policy here.

Each function does one call (or one small, fixed sequence of calls: a process's children
listed, those that ended reaped) and raises ``OSError`` with the call's name when the kernel refuses. What to call, when and with which arguments
is :mod:`grader.sandbox.confine`'s business.
"""

from __future__ import annotations

import ctypes
import errno
import os
import platform
import select
import signal
import time

libc = ctypes.CDLL(None, use_errno=True)

CLONE_NEWNS, CLONE_NEWUSER, CLONE_NEWPID = 0x00020000, 0x10000000, 0x20000000
CLONE_NEWNET, CLONE_NEWIPC = 0x40000000, 0x08000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 0x1, 0x2, 0x4, 0x8
MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 0x20, 0x1000, 0x4000, 0x40000
MNT_DETACH = 0x2
MOUNT_ATTR_RDONLY, MOUNT_ATTR_NOSUID = 0x1, 0x2
AT_FDCWD, AT_RECURSIVE = -100, 0x8000
PR_SET_PDEATHSIG, PR_SET_DUMPABLE, PR_SET_CHILD_SUBREAPER, PR_SET_NO_NEW_PRIVS = 1, 4, 36, 38
KEYCTL_JOIN_SESSION_KEYRING = 1
SYSCALLS = {
    "x86_64": {"pivot_root": 155, "keyctl": 250, "mount_setattr": 442},
    "aarch64": {"pivot_root": 41, "keyctl": 219, "mount_setattr": 442},
}


def check(result: int, what: str) -> int:
    """``result`` of a libc call, or the ``OSError`` its ``errno`` names."""
    if result < 0:
        code = ctypes.get_errno()
        raise OSError(code, f"{what}: {os.strerror(code)}")
    return result


def syscall(name: str, *args) -> int:
    """A system call that glibc has no wrapper for, by name."""
    numbers = SYSCALLS.get(platform.machine())
    if numbers is None:
        raise OSError(errno.ENOSYS, f"{name}: unknown machine {platform.machine()}")
    return check(libc.syscall(numbers[name], *args), name)


def unshare(flags: int, what: str = "unshare") -> None:
    """Move this process into new namespaces (``CLONE_NEW*`` flags)."""
    check(libc.unshare(flags), what)


def _encode(value):
    return value.encode() if isinstance(value, str) else value


def mount(source, target, fstype, flags: int, data=None) -> None:
    """mount(2); ``None`` for an unused argument."""
    check(libc.mount(_encode(source), _encode(target), _encode(fstype), flags, _encode(data)), f"mount {target}")


def unmount(target: str) -> None:
    """Detach ``target`` (lazily: ``MNT_DETACH``)."""
    check(libc.umount2(target.encode(), MNT_DETACH), f"umount {target}")


class _MountAttr(ctypes.Structure):
    _fields_ = [("attr_set", ctypes.c_uint64), ("attr_clr", ctypes.c_uint64),
                ("propagation", ctypes.c_uint64), ("userns_fd", ctypes.c_uint64)]


def mount_read_only(target: str, mounts: list[str], *, recursive: bool) -> None:
    """Make ``target`` (and, if ``recursive``, every mount under it) read-only and nosuid.

    ``mounts`` lists the mounts under ``target``, for kernels before 5.12 (no
    ``mount_setattr``): then each is remounted on its own.
    """
    attr = _MountAttr(MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID, 0, 0, 0)
    try:
        syscall("mount_setattr", AT_FDCWD, target.encode(), AT_RECURSIVE if recursive else 0,
                ctypes.byref(attr), ctypes.sizeof(attr))
    except OSError:
        for path in [target, *mounts]:
            mount(None, path, None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID)


def pivot_root(new_root: str, put_old: str) -> None:
    """Make ``new_root`` this mount namespace's root; the old one goes to ``put_old``."""
    syscall("pivot_root", new_root.encode(), put_old.encode())


def set_dumpable(dumpable: bool) -> None:
    """Whether processes of the same user may ptrace this one or read its /proc files."""
    libc.prctl(PR_SET_DUMPABLE, int(dumpable), 0, 0, 0)


def set_no_new_privs() -> None:
    """From now on, no exec gains privileges (setuid binaries such as sudo do not help)."""
    check(libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")


def set_child_subreaper() -> None:
    """Orphans of this process's descendants become its children (so it can kill them)."""
    libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)


def die_with_parent() -> None:
    """SIGKILL this process when its parent dies (reset by fork and by a change of user)."""
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


def join_new_session_keyring() -> None:
    """Replace the inherited session keyring with a new, empty, anonymous one."""
    syscall("keyctl", KEYCTL_JOIN_SESSION_KEYRING, None)


def write_id_maps(uid: int, gid: int) -> None:
    """In a new user namespace: map our own user and group onto themselves."""
    set_dumpable(True)  # else /proc/self belongs to root: the maps cannot be written
    try:
        for name, text in (("setgroups", "deny"), ("uid_map", f"{uid} {uid} 1"), ("gid_map", f"{gid} {gid} 1")):
            with open(f"/proc/self/{name}", "w") as handle:
                handle.write(text)
    finally:
        set_dumpable(False)


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]


def drop_capabilities() -> None:
    """Clear every capability set of this process."""
    header = _CapHeader(0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3
    data = (_CapData * 2)()
    check(libc.capset(ctypes.byref(header), data), "capset")


def wait_for_exit(pid: int, seconds: float, also: tuple[int, ...] = ()) -> None:
    """Block until the child ``pid`` has ended (not reaped: the caller's ``waitpid`` does that),
    one of the descriptors ``also`` is readable, or ``seconds`` have passed, through a pidfd
    (Linux 5.3+). Without one, wait 5 ms at most: the caller polls. A supervisor waiting for a
    killed worker then resumes the moment it is gone, not at the next tick of a 5 ms sleep (with
    those sleeps, two cores sat idle 9% of a steady batch's time; 3.6% without)."""
    try:
        pidfd = os.pidfd_open(pid)
    except (AttributeError, OSError):  # an older kernel, or a pid already gone
        select.select(list(also), [], [], max(0.0, min(seconds, 0.005)))
        return
    try:
        select.select([pidfd, *also], [], [], max(seconds, 0))
    finally:
        os.close(pidfd)


def children() -> list[int]:
    """This process's children (orphans of its workers land here: it is a subreaper)."""
    me = os.getpid()
    try:
        with open(f"/proc/{me}/task/{me}/children") as handle:
            return [int(p) for p in handle.read().split()]
    except OSError:
        pass
    children = []
    for name in os.listdir("/proc"):
        try:
            with open(f"/proc/{name}/stat") as handle:
                if int(handle.read().rsplit(")", 1)[1].split()[1]) == me:
                    children.append(int(name))
        except (OSError, ValueError, IndexError):
            continue
    return children


def reap_ended() -> bool:
    """Reap every child that has ended, without waiting for the others; True when none is left."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return True
        if pid == 0:
            return False


def reap_any(deadline: float) -> None:
    """Reap children as they end, until none is left or ``deadline`` has passed."""
    while not reap_ended() and time.monotonic() < deadline:
        time.sleep(0.005)
