"""Which pages of a file are in the page cache, and making them so: the mechanics of :mod:`grader.sandbox.pagecache`.

A read-only mapping of the file (``mmap``), ``mincore`` for which of its pages are resident, a
read of one byte per missing page to fault it in, ``posix_fadvise(DONTNEED)`` to evict. No
policy here: which files, when, and for whom is the page cache guard's business; apart from it
so that the guard reads as what it promises students, not as how a page is loaded.
"""

from __future__ import annotations

import contextlib
import ctypes
import mmap
import os
import stat

from grader.sandbox import linux

PAGE = mmap.PAGESIZE

_libc = linux.libc
_libc.mmap.restype = ctypes.c_void_p
_libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
_libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
_libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_char_p]
_libc.madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
MAP_FAILED = ctypes.c_void_p(-1).value
MADV_WILLNEED = 3


def make_resident(fd: int) -> int:
    """Read every page of the regular file ``fd`` that is not in the page cache; return how many."""
    with _mapped(fd) as (address, size):
        return fault_in(address, size) if size else 0


def residency(fd: int) -> bytes | None:
    """Which pages of the regular file ``fd`` are resident (``mincore``: one byte per page, its lowest
    bit set when resident), or None for what cannot be mapped."""
    with _mapped(fd) as (address, size):
        return _residency_at(address, size) if size else None


def restore(fd: int, before: bytes) -> None:
    """Put the pages of ``fd`` back as ``before`` (:func:`residency`) says: evict those that were not
    resident, read in those that were."""
    now = residency(fd)
    if now is None or len(now) != len(before):  # the file changed size: leave it resident
        make_resident(fd)
        return
    for start, end in _runs(index for index in range(len(now)) if now[index] & 1 and not before[index] & 1):
        os.posix_fadvise(fd, start * PAGE, (end - start) * PAGE, os.POSIX_FADV_DONTNEED)
    missing = [index for index in range(len(now)) if before[index] & 1 and not now[index] & 1]
    if missing:
        with _mapped(fd) as (address, _):
            _touch(address, missing)


def _runs(indexes):
    """``(start, end)`` of each run of consecutive numbers in the increasing ``indexes``."""
    start = previous = None
    for index in indexes:
        if start is None:
            start = previous = index
        elif index == previous + 1:
            previous = index
        else:
            yield start, previous + 1
            start = previous = index
    if start is not None:
        yield start, previous + 1


@contextlib.contextmanager
def _mapped(fd: int):
    """``(address, size)`` of a read-only mapping of the regular file ``fd`` ((0, 0) for anything else)."""
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode) or info.st_size == 0:
        yield 0, 0
        return
    address = _libc.mmap(None, info.st_size, mmap.PROT_READ, mmap.MAP_SHARED, fd, 0)
    if address in (None, MAP_FAILED):
        yield 0, 0
        return
    try:
        yield address, info.st_size
    finally:
        _libc.munmap(address, info.st_size)


def fault_in(address: int, size: int) -> int:
    """Fault in every page of ``[address, address + size)`` (a readable file mapping) that
    mincore says is not resident; return how many."""
    vector = _residency_at(address, size)
    missing = [index for index, page in enumerate(vector or b"") if not page & 1]
    if missing:
        _libc.madvise(address, size, MADV_WILLNEED)  # read ahead what is missing, then wait for each page
        _touch(address, missing)
    return len(missing)


def _residency_at(address: int, size: int) -> bytes | None:
    """``mincore`` of ``[address, address + size)``: a byte per page, its lowest bit set when resident."""
    vector = ctypes.create_string_buffer((size + PAGE - 1) // PAGE)
    return vector.raw if _libc.mincore(address, size, vector) == 0 else None


def _touch(address: int, pages: list[int]) -> None:
    """Read one byte of each of these pages of a readable file mapping: the read faults it in."""
    for index in pages:
        ctypes.c_char.from_address(address + index * PAGE).value  # noqa: B018 - the read faults it in
