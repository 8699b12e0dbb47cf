"""The page cache as workers find it: every page they can reach is resident when they reach it.

Workers of different plans never run at the same time (``zygote.turn``), but the kernel's page
cache outlives a turn: a worker can evict pages of a read-only file every sandbox sees
(``posix_fadvise(DONTNEED)``, memory pressure) or load them (reading), and a worker of a later
plan can test which pages are resident (``preadv2(RWF_NOWAIT)``, timing a read or a page
fault). So the files a worker reaches are brought to one canonical state, *resident*, before it
can look at them, whatever the previous plan did (docs/threat-model.md, *Concurrency*):

* **Files it opens.** Each worker marks the mounts of its own mount namespace with a fanotify
  ``FAN_OPEN_PERM`` mark (:func:`mark_mounts`, as root, before it is confined); every open through
  them, by the worker or any process it starts, waits until its supervisor's :class:`Guard` has
  read every page of the file that is not resident (:func:`grader.sandbox.residency.make_resident`). Only the opens made
  through the sandbox's own mounts wait: the rest of the machine is not watched.
* **Files it inherits mapped** (the zygote's torch, Python and libraries, which a forked worker
  can read without opening anything). At the start of each plan's turn the handler reads every
  page of its own file mappings that is not resident (:func:`resident_mappings`).

* **Files opened before** (by any worker of the batch). An open waits while its file is made
  resident, so its latency tells how much of the file was resident: were that left as the plans
  before left it, a plan could signal by opening a cold file (or evicting one it opened) and a
  later one by timing its own open. So the answering process keeps every file a worker opens
  with which of its pages were resident before the first such open, and at the start of each
  plan's turn the handler has it put each back that way (:func:`settle`): what a plan did to them
  is undone before the next plan's workers run.

An open, a read, ``fadvise`` or memory pressure can still change residency during a turn, but
the next plan's workers cannot see it: what they reach is resident first. Permission events
need ``CAP_SYS_ADMIN`` in the first user namespace (root, isolation level 1); elsewhere
:func:`start` says so and this guard is absent (the threat model says what remains).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import re
import resource
import select
import stat
import struct

from grader.sandbox import linux, residency

# Appended to the isolation a batch's module reports where this guard is absent (not root): students'
# code could then signal to classmates graded later through what is resident. ``batch`` refuses it.
UNGUARDED = "page cache shared between students (guarding it needs root)"

FAN_CLOEXEC, FAN_CLASS_CONTENT, FAN_UNLIMITED_QUEUE = 0x1, 0x4, 0x10
FAN_MARK_ADD, FAN_MARK_MOUNT = 0x1, 0x10
FAN_OPEN_PERM = 0x10000
FAN_ALLOW = 0x1
EVENT = struct.Struct("=IBBHQii")  # struct fanotify_event_metadata
RESPONSE = struct.Struct("=iI")  # struct fanotify_response
# Filesystems without a page cache of files a worker could reach, or private to the worker.
UNWATCHED = {"proc", "tmpfs", "devtmpfs", "sysfs", "devpts", "mqueue", "cgroup", "cgroup2"}

_libc = linux.libc
_libc.fanotify_init.argtypes = [ctypes.c_uint, ctypes.c_uint]
_libc.fanotify_mark.argtypes = [ctypes.c_int, ctypes.c_uint, ctypes.c_uint64, ctypes.c_int, ctypes.c_char_p]


def _group() -> int:
    flags = os.O_RDONLY | getattr(os, "O_LARGEFILE", 0) | os.O_CLOEXEC
    return linux.check(_libc.fanotify_init(FAN_CLOEXEC | FAN_CLASS_CONTENT | FAN_UNLIMITED_QUEUE, flags),
                       "fanotify_init")


GROUP: int | None = None  # the zygote's fanotify group (inherited by every handler, supervisor and worker)
_SETTLE: tuple[int, int] | None = None  # (request write end, reply read end) to the answering process
MAX_KEPT = 4096  # files the answering process keeps to settle (a batch's workers open some dozens)


def start() -> bool:
    """In the zygote, before it imports torch (a fork is cheap then): make the fanotify group
    whose permission events are the workers' opens, and a process that answers each once the
    opened file is resident (and settles every file opened so far when asked: :func:`settle`).
    Return whether it could (root in the first user namespace)."""
    global GROUP, _SETTLE
    try:
        group = _group()
    except OSError:
        return False
    request_read, request_write = os.pipe()
    reply_read, reply_write = os.pipe()
    if os.fork() == 0:  # the answering process: it dies with the zygote
        try:
            linux.die_with_parent()
            os.close(request_write)
            os.close(reply_read)
            _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)  # room for the files it keeps
            with contextlib.suppress(ValueError, OSError):
                resource.setrlimit(resource.RLIMIT_NOFILE, (hard if hard == resource.RLIM_INFINITY else min(hard, MAX_KEPT + 64),
                                                            hard))
            _answer(group, request_read, reply_write)
        finally:
            os._exit(0)
    os.close(request_read)
    os.close(reply_write)
    GROUP, _SETTLE = group, (request_write, reply_read)
    return True


def settle() -> None:
    """In a handler at the start of its turn: have the answering process put every file a worker
    has opened back as it was before the first such open (:func:`grader.sandbox.residency.restore`), and wait until it has."""
    if _SETTLE is None:
        return
    request, reply = _SETTLE
    os.write(request, b"s")
    if os.read(reply, 1) != b"k":
        raise OSError("the page cache's answering process is gone")


def _answer(group: int, requests: int | None = None, replies: int | None = None) -> None:
    """Answer every permission event of ``group``: allow each open once its file is resident.
    Keep each regular file opened, with its pages' residency before its first open; on a byte on
    ``requests``, put them all back that way and reply on ``replies``."""
    kept: dict[tuple[int, int], tuple[int, bytes]] = {}  # (device, inode) -> (a descriptor, residency before)
    watched = [group] + ([requests] if requests is not None else [])
    while True:
        try:
            ready, _, _ = select.select(watched, [], [])
        except InterruptedError:
            continue
        if requests in ready:
            if not os.read(requests, 1):  # the zygote is gone
                return
            forget_deleted(kept)
            for fd, before in kept.values():
                with contextlib.suppress(Exception):  # noqa: BLE001 - a file that cannot be mapped: nothing to do
                    residency.restore(fd, before)
            os.write(replies, b"k")
        if group in ready:
            _answer_events(group, kept)


def _answer_events(group: int, kept: dict[tuple[int, int], tuple[int, bytes]]) -> None:
    try:
        data = os.read(group, 64 * EVENT.size)
    except InterruptedError:
        return
    offset = 0
    while offset + EVENT.size <= len(data):
        length, _, _, _, mask, fd, _ = EVENT.unpack_from(data, offset)
        offset += max(length, EVENT.size)
        if fd < 0:
            continue
        try:
            if mask & FAN_OPEN_PERM:
                try:
                    _keep(fd, kept)  # first: its residency before this open
                    residency.make_resident(fd)
                except Exception:  # noqa: BLE001 - a file that cannot be mapped (special): nothing to do
                    pass
                # Never fails this process: with no one answering, every later open would wait forever.
                with contextlib.suppress(OSError):  # the opener was killed meanwhile
                    os.write(group, RESPONSE.pack(fd, FAN_ALLOW))
        finally:
            os.close(fd)


def _keep(fd: int, kept: dict[tuple[int, int], tuple[int, bytes]]) -> None:
    """Keep a descriptor of the regular file ``fd`` and its residency now (once per file) for :func:`settle`."""
    info = os.fstat(fd)
    key = (info.st_dev, info.st_ino)
    if stat.S_ISREG(info.st_mode) and info.st_size and key not in kept and len(kept) < MAX_KEPT:
        before = residency.residency(fd)
        if before is not None:
            kept[key] = (os.dup(fd), before)


def forget_deleted(kept: dict[tuple[int, int], tuple[int, bytes]]) -> None:
    """Stop keeping the files deleted since (a graded submission's copy, removed once graded: no
    later plan can open it), so that settling costs what the files still reachable cost, not what
    every student's files of the batch so far would."""
    for key, (fd, _) in list(kept.items()):
        try:
            gone = os.fstat(fd).st_nlink == 0
        except OSError:
            gone = True
        if gone:
            del kept[key]
            with contextlib.suppress(OSError):
                os.close(fd)


def mark_mounts(group: int) -> None:
    """In a new worker (still privileged, in its own mount namespace): every open through one of
    its mounts that holds files (not ``/proc``, its private ``/tmp``, devices) waits for ``group``."""
    with open("/proc/self/mountinfo", "rb") as handle:
        targets = watched_mounts(handle.read())
    for target in targets:
        linux.check(_libc.fanotify_mark(group, FAN_MARK_ADD | FAN_MARK_MOUNT, FAN_OPEN_PERM, linux.AT_FDCWD, target),
                    f"fanotify_mark {target!r}")


# The kernel writes a space, tab, newline or backslash in a mount point as an octal escape (\040).
_ESCAPE = re.compile(rb"\\([0-7]{3})")


def watched_mounts(mountinfo: bytes) -> list[bytes]:
    """The mount points of ``/proc/self/mountinfo``'s text whose files :func:`mark_mounts` watches
    (not those of :data:`UNWATCHED` file systems). Pure bytes work, with no codec: a codec's first
    use imports its module, 0.8 ms in every worker."""
    targets = []
    for line in mountinfo.split(b"\n"):  # not splitlines(): the kernel leaves a \r in a name as it is
        if not line:
            continue
        fields, _, rest = line.partition(b" - ")
        if rest.split(b" ")[0].decode() not in UNWATCHED:
            targets.append(_ESCAPE.sub(lambda escape: bytes([int(escape[1], 8)]), fields.split(b" ")[4]))
    return targets


def file_mappings() -> list[tuple[int, int]]:
    """``(address, length)`` of this process's readable file mappings, never past the file's end."""
    found = []
    with open("/proc/self/maps", "rb") as handle:
        lines = handle.read().split(b"\n")  # not splitlines(): a \r in a file's name is not escaped
    for line in lines:
        fields = line.split(None, 5)
        if len(fields) < 6 or fields[4] == b"0" or not fields[5].startswith(b"/") or fields[1][:1] != b"r":
            continue
        if fields[5].endswith(b" (deleted)"):
            continue
        start, end = (int(value, 16) for value in fields[0].split(b"-"))
        try:  # a page past the file's end would raise SIGBUS when touched
            size = min(end - start, os.stat(fields[5]).st_size - int(fields[2], 16))
        except (OSError, ValueError):
            continue
        if size > 0:
            found.append((start, size))
    return found


def pin_mappings() -> bool:
    """In the zygote, once: lock every page of its readable file mappings in memory (``mlock``).
    Every worker inherits them mapped (torch, Python, the libraries) and could test or time them
    without opening a file; locked and mapped here, no ``fadvise``, ``madvise`` or memory pressure
    can evict them, and they are all resident. Return whether every mapping was locked."""
    pinned = True
    for start, size in file_mappings():
        if _libc.mlock(ctypes.c_void_p(start), ctypes.c_size_t(size)) != 0:
            pinned = False
    return pinned


def resident_mappings() -> int:
    """Where :func:`pin_mappings` could not lock them, in a handler at the start of its turn:
    fault in every page of this process's readable file mappings that is not resident (some
    20-40 ms for torch's); return how many."""
    count = 0
    for start, size in file_mappings():
        try:
            count += residency.fault_in(start, size)
        except (OSError, ValueError):
            continue
    return count
