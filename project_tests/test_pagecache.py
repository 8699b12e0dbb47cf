"""The page cache as a worker finds it (grader/sandbox/pagecache.py): resident, whatever an earlier
plan evicted. The whole path (a hostile classmate that evicts, one that tests residency, in one
batch) is in project_tests/adversarial/test_hostile_class.py; here, its parts."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from grader.sandbox import pagecache, residency

ROOT = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux page cache")


def in_a_mount_namespace_of_its_own(body) -> int:
    """The exit code of a child that, as a worker does, enters a private mount namespace and runs
    ``body()`` (its return value is the code; 1 if it raised)."""
    child = os.fork()
    if child == 0:
        code = 1
        try:
            from grader.sandbox import linux

            linux.unshare(linux.CLONE_NEWNS)
            linux.mount(None, "/", None, linux.MS_REC | linux.MS_PRIVATE)
            code = body()
        finally:
            os._exit(code)
    _, status = os.waitpid(child, 0)
    return os.waitstatus_to_exitcode(status)


def resident_pages(path, pages: int) -> list[bool]:
    """Which of the first ``pages`` pages of ``path`` a worker would find resident (preadv2 RWF_NOWAIT)."""
    found = []
    fd = os.open(path, os.O_RDONLY)
    try:
        for page in range(pages):
            try:
                os.preadv(fd, [bytearray(1)], page * residency.PAGE, os.RWF_NOWAIT)
                found.append(True)
            except BlockingIOError:
                found.append(False)
    finally:
        os.close(fd)
    return found


def mapped_residency(path) -> list[bool]:
    """Which pages of ``path`` are resident, by mincore on a mapping (which, unlike a read, loads nothing)."""
    import ctypes
    import mmap

    size = os.path.getsize(path)
    fd = os.open(path, os.O_RDONLY)
    address = residency._libc.mmap(None, size, mmap.PROT_READ, mmap.MAP_SHARED, fd, 0)
    try:
        vector = ctypes.create_string_buffer((size + residency.PAGE - 1) // residency.PAGE)
        assert residency._libc.mincore(address, size, vector) == 0
        return [bool(b & 1) for b in vector.raw]
    finally:
        residency._libc.munmap(address, size)
        os.close(fd)


def evicted(path) -> bool:
    """Write ``path`` to disk and drop it from the page cache; False where this file system keeps it."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)
    return not any(mapped_residency(path))


def test_make_resident_reads_back_what_was_evicted(tmp_path):
    path = tmp_path / "data.bin"
    path.write_bytes(os.urandom(4 * residency.PAGE + 123))
    if not evicted(path):
        pytest.skip("this file system keeps its pages (tmpfs)")
    fd = os.open(path, os.O_RDONLY)
    try:
        assert residency.make_resident(fd) == 5
        assert residency.make_resident(fd) == 0  # nothing missing the second time
    finally:
        os.close(fd)
    assert resident_pages(path, 5) == [True] * 5


def test_make_resident_takes_empty_and_special_files(tmp_path):
    (tmp_path / "empty").write_bytes(b"")
    for path in (tmp_path / "empty", "/dev/null"):
        fd = os.open(path, os.O_RDONLY)
        try:
            assert residency.make_resident(fd) == 0
        finally:
            os.close(fd)


def test_a_file_mapped_under_a_name_with_a_carriage_return_is_found(tmp_path):
    import mmap

    path = tmp_path / "odd\rname.bin"
    path.write_bytes(os.urandom(2 * residency.PAGE))
    before = len(pagecache.file_mappings())
    with open(path, "rb") as handle, mmap.mmap(handle.fileno(), 0, prot=mmap.PROT_READ):
        assert len(pagecache.file_mappings()) == before + 1


def test_file_mappings_stop_at_the_end_of_each_file():
    mappings = pagecache.file_mappings()
    assert mappings and all(size > 0 for _, size in mappings)
    start = time.perf_counter()
    assert pagecache.resident_mappings() >= 0  # touches no page past a file's end (that would be SIGBUS)
    assert time.perf_counter() - start < 5


@pytest.mark.skipif(os.geteuid() != 0, reason="permission events need root")
def test_an_open_through_a_marked_mount_waits_until_the_file_is_resident(tmp_path):
    """A child in a mount namespace of its own marks its mounts, as a worker does, and opens a file
    just evicted: it finds every page resident."""
    path = tmp_path / "data.bin"
    path.write_bytes(os.urandom(8 * residency.PAGE))
    if not evicted(path):
        pytest.skip("this file system keeps its pages (tmpfs)")
    group = pagecache._group()
    answering = os.fork()
    if answering == 0:
        try:
            pagecache._answer(group)
        finally:
            os._exit(0)

    def worker() -> int:
        pagecache.mark_mounts(group)
        return 0 if resident_pages(path, 8) == [True] * 8 else 3

    try:
        code = in_a_mount_namespace_of_its_own(worker)
    finally:
        os.kill(answering, 9)
        os.waitpid(answering, 0)
        os.close(group)
    assert code == 0
    assert resident_pages(path, 8) == [True] * 8


def test_the_mounts_watched_are_read_with_the_kernels_escapes_and_without_those_holding_no_shared_files():
    mountinfo = (b"22 1 0:21 / / rw,relatime - overlay overlay rw\n"
                 b"23 22 0:5 / /proc rw,nosuid - proc proc rw\n"
                 b"24 22 0:6 / /tmp rw - tmpfs tmpfs rw,size=32768k\n"
                 b"25 22 8:1 /src /srv/a\\040b\\134c\\011d\\012e\xc3\xa9 ro,relatime - ext4 /dev/sda1 rw\n"
                 b"26 22 8:1 / /opt\\0401 ro shared:3 master:1 - ext4 /dev/sda1 rw\n"
                 b"27 22 8:1 / /srv/cr\rlf rw - ext4 /dev/sda1 rw\n")  # a carriage return is left as it is
    assert pagecache.watched_mounts(mountinfo) == [b"/", b"/srv/a b\\c\td\ne\xc3\xa9", b"/opt 1", b"/srv/cr\rlf"]


@pytest.mark.end_to_end
def test_reading_the_mount_table_imports_nothing():
    """Every worker reads it first thing after its fork: a module imported there (a codec's, to
    undo the kernel's escapes) would be imported again by each (0.8 ms a worker)."""
    code = ("import sys; from grader.sandbox import pagecache; before = set(sys.modules); "
            "pagecache.watched_mounts(open('/proc/self/mountinfo', 'rb').read() + b'1 0 0:1 / /a\\\\040b rw - ext4 x rw'); "
            "print(sorted(set(sys.modules) - before))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


@pytest.mark.skipif(os.geteuid() != 0, reason="fanotify marks need root")
def test_a_mount_point_whose_name_the_kernel_escapes_is_marked(tmp_path):
    """A worker marks every mount it can open files through, a name with a space, a tab or a
    backslash too (a mark it could not place would fail the worker, and one misread would leave
    that mount unwatched)."""
    odd = tmp_path / "a b\\c\td"
    odd.mkdir()
    group = pagecache._group()

    def worker() -> int:
        from grader.sandbox import linux

        with open("/proc/self/mountinfo", "rb") as handle:
            before = set(handle.read().split(b"\n"))
        linux.mount(str(tmp_path), str(odd), None, linux.MS_BIND)
        with open("/proc/self/mountinfo", "rb") as handle:
            mountinfo = handle.read()
        added = next(line for line in mountinfo.split(b"\n") if line not in before)
        if added.partition(b" - ")[2].split(b" ")[0].decode() in pagecache.UNWATCHED:
            return 5
        if str(odd).encode() not in pagecache.watched_mounts(mountinfo):
            return 1
        pagecache.mark_mounts(group)
        return 0

    try:
        code = in_a_mount_namespace_of_its_own(worker)
    finally:
        os.close(group)
    if code == 5:
        pytest.skip("this file system holds no shared files (tmpfs): its mounts are not watched")
    assert code == 0


def test_settle_puts_every_file_a_worker_opened_back_as_it_was_before_its_first_open(tmp_path):
    """Whatever a plan did to the files its workers opened (opened a cold one, which the guard made
    resident; evicted a warm one), a handler that settles at the start of the next turn undoes it:
    the next plan's opens take as long as if that plan had not run."""
    if os.geteuid() != 0:
        pytest.skip("fanotify permission events need root")
    cold, warm = tmp_path / "cold.bin", tmp_path / "warm.bin"
    for path in (cold, warm):
        path.write_bytes(os.urandom(8 * residency.PAGE))
        os.sync()
    if not evicted(cold):
        pytest.skip("this file system keeps its pages (tmpfs)")
    assert mapped_residency(warm) == [True] * 8
    assert pagecache.start()
    try:
        child = os.fork()
        if child == 0:  # a worker: marks its mounts and opens both files
            code = 1
            try:
                from grader.sandbox import linux

                linux.unshare(linux.CLONE_NEWNS)
                linux.mount(None, "/", None, linux.MS_REC | linux.MS_PRIVATE)
                pagecache.mark_mounts(pagecache.GROUP)
                for path in (cold, warm):
                    os.close(os.open(path, os.O_RDONLY))
                code = 0
            finally:
                os._exit(code)
        _, status = os.waitpid(child, 0)
        assert os.waitstatus_to_exitcode(status) == 0
        assert mapped_residency(cold) == [True] * 8  # the guard made it resident for the worker
        assert evicted(warm)  # the plan evicts the other (fadvise), after its open
        pagecache.settle()
        assert mapped_residency(cold) == [False] * 8 and mapped_residency(warm) == [True] * 8
    finally:
        request, reply = pagecache._SETTLE
        os.close(request)  # the answering process ends
        os.close(reply)
        os.close(pagecache.GROUP)
        pagecache.GROUP = pagecache._SETTLE = None


def test_restore_evicts_and_reads_in_page_by_page(tmp_path):
    path = tmp_path / "data.bin"
    path.write_bytes(os.urandom(6 * residency.PAGE))
    os.sync()
    if not evicted(path):
        pytest.skip("this file system keeps its pages (tmpfs)")
    fd = os.open(path, os.O_RDONLY)
    try:
        before = bytes([1, 0, 0, 1, 1, 0])
        residency.make_resident(fd)
        residency.restore(fd, before)
        assert mapped_residency(path) == [bool(b) for b in before]
        assert list(residency._runs([0, 1, 3, 5, 6])) == [(0, 2), (3, 4), (5, 7)]
    finally:
        os.close(fd)


def test_settling_forgets_the_files_deleted_since_they_were_kept(tmp_path):
    # A graded submission's copy is removed (no later plan can open it): settling stops restoring it.
    kept_file, deleted_file = tmp_path / "stdlib_like.py", tmp_path / "graded_copy.py"
    for path in (kept_file, deleted_file):
        path.write_bytes(b"x" * 3 * residency.PAGE)
    kept: dict = {}
    for path in (kept_file, deleted_file):
        fd = os.open(path, os.O_RDONLY)
        pagecache._keep(fd, kept)
        os.close(fd)
    assert len(kept) == 2
    deleted_fd = next(fd for key, (fd, _) in kept.items() if key[1] == os.stat(deleted_file).st_ino)
    deleted_file.unlink()
    pagecache.forget_deleted(kept)
    assert [key[1] for key in kept] == [os.stat(kept_file).st_ino]
    with pytest.raises(OSError):  # its descriptor is closed, not leaked
        os.fstat(deleted_fd)
