"""Confine student code: namespaces, limits, no privileges, captured output.

Runs in the zygote (trusted). One :class:`Box` per exercise module, made in the module's
supervisor process, holds the namespaces every worker of that module runs in:

* a new **PID namespace** whose init is a tiny ``sleep`` (so workers keep ordinary signal
  semantics); killing it at the end makes the kernel kill every process left in it, however
  it detached (double fork, new session), and each worker kills the leftovers of the one
  before it (``kill(-1)`` reaches only its own namespace);
* a new **mount namespace** whose root is built from an allow-list: the system folders
  (``/usr``, ``/etc``, ...), the Python installation, the venv, the ``grader`` package and
  the submission copy, all read-only; a private, size-limited ``/tmp`` and ``/dev/shm``; a
  ``/proc`` of the worker's own PID namespace. The instructor's ``tests/`` and
  ``solutions/``, other submissions, reports and GitHub files are simply not there;
* a new **network namespace** (no network: not even the host's loopback) and **IPC namespace**.

As root, workers then drop to ``sandbox_user``; without root, the same is built inside a
user namespace, and workers drop every capability. Where namespaces cannot be made (a
container without ``CAP_SYS_ADMIN``, user namespaces disabled or restricted, as on recent
Ubuntu runners), the box falls back to what works everywhere: a session per worker killed as
a group, the supervisor as a child subreaper that kills whatever its workers left behind,
resource limits, ``no_new_privs``. ``Box.mode`` says which, and the client logs a fallback.

``probe()`` tries the whole set-up once, when the zygote starts, in a throw-away child, so
a supervisor only attempts what is known to work.
"""

from __future__ import annotations

import ctypes
import errno
import os
import platform
import pwd
import resource
import signal
import shutil
import subprocess
import sys
import tempfile
import time
from grader.settings import PROJECT_ROOT  # the instructor's repository: only its grader package is shown

libc = ctypes.CDLL(None, use_errno=True)

CLONE_NEWNS, CLONE_NEWUSER, CLONE_NEWPID = 0x00020000, 0x10000000, 0x20000000
CLONE_NEWNET, CLONE_NEWIPC = 0x40000000, 0x08000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 0x1, 0x2, 0x4, 0x8
MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 0x20, 0x1000, 0x4000, 0x40000
MNT_DETACH = 0x2
MOUNT_ATTR_RDONLY, MOUNT_ATTR_NOSUID = 0x1, 0x2
AT_FDCWD, AT_RECURSIVE = -100, 0x8000
PR_SET_DUMPABLE, PR_SET_NO_NEW_PRIVS, PR_SET_CHILD_SUBREAPER = 4, 38, 36
SYSCALLS = {"x86_64": {"pivot_root": 155, "mount_setattr": 442}, "aarch64": {"pivot_root": 41, "mount_setattr": 442}}

# Folders of the operating system a worker may read (when they exist).
SYSTEM = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc")
DEVICES = ("null", "zero", "full", "random", "urandom")
NAMESPACES = "namespaces"  # Box.mode when fully isolated


class Worker:
    """The zygote's handle on one forked worker."""

    def __init__(self, pid: int, channel: int, output_fd: int):
        self.pid = pid
        self.channel = channel  # read end of the worker's result pipe
        self.output_fd = output_fd  # the file that holds the worker's stdout and stderr
        self.status: int | None = None

    def _reap(self, wait: float) -> None:
        end = time.monotonic() + wait
        while self.status is None:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self.status = status
            elif time.monotonic() >= end:
                return
            else:
                time.sleep(0.005)

    def death_message(self) -> str:
        """Why the worker stopped talking, in words a student understands."""
        self._reap(wait=1.0)
        if self.status is None:
            return "your code closed the grader's channel"
        if os.WIFSIGNALED(self.status):
            sig = os.WTERMSIG(self.status)
            name = signal.Signals(sig).name if sig in signal.Signals._value2member_map_ else str(sig)
            why = {
                "SIGSEGV": "a segmentation fault",
                "SIGXCPU": "using up its CPU time",
                "SIGXFSZ": "writing too much output",
                "SIGKILL": "being killed (out of memory, or by your code)",
                "SIGABRT": "an abort",
            }.get(name, name)
            return f"the process running your code died from {why}"
        code = os.WEXITSTATUS(self.status)
        return f"the process running your code exited early with status {code} (sys.exit or os._exit?)"

    def finish(self, keep: int) -> bytes:
        """Kill the worker and its process group; return the start of its output."""
        kill_group(self.pid)
        self._reap(wait=5.0)
        os.close(self.channel)
        output = os.pread(self.output_fd, keep, 0)
        os.close(self.output_fd)
        return output


def kill_group(pid: int) -> None:
    """SIGKILL the worker's process group (it is the leader of its own session)."""
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


class Box:
    """The namespaces (or the fallback) that one module's workers run in; see the module docstring.

    Made in the module's supervisor after the probes and reference modules are loaded:
    from then on the supervisor itself only sees the allow-listed file system.
    """

    def __init__(self, limits: dict, sandbox_dir: str, isolation: str):
        self.limits = limits
        self.init: subprocess.Popen | None = None
        self.user_namespace = False
        if isolation != NAMESPACES:
            self.mode = isolation
        else:
            try:
                self.user_namespace = _isolate(sandbox_dir, scratch_mb=4 * limits["file_mb"])
                self.init = _start_init()
                self.mode = NAMESPACES
            except OSError as exc:  # should not happen once probe() succeeded
                self.mode = f"no namespaces: {exc}"
        if self.init is None:
            libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)

    def spawn(self, run) -> Worker:
        """Fork a worker that confines itself, then calls ``run(channel)`` (a text file)."""
        output_fd = _output_file()
        read_end, write_end = os.pipe()
        pid = os.fork()
        if pid == 0:  # the worker
            status = 0
            try:
                os.close(read_end)
                os.setsid()
                if self.init is not None:
                    _enter_worker_namespace()
                redirect_output(output_fd)
                channel = _keep_only(write_end)
                confine(self.limits, user_namespace=self.user_namespace)
                with os.fdopen(channel, "w") as stream:
                    run(stream)
            except BaseException:  # noqa: BLE001 - the worker must end here, whatever happened
                status = 70
            finally:
                os._exit(status)
        os.close(write_end)
        return Worker(pid, read_end, output_fd)

    def sweep(self) -> None:
        """Without a PID namespace: kill what finished workers left behind (now our children)."""
        if self.init is not None:
            return
        for _ in range(100):
            children = _children()
            if not children:
                return
            for pid in children:
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
            _reap_any(deadline=time.monotonic() + 0.2)

    def close(self) -> None:
        """Kill everything the workers left: the whole PID namespace, or every child."""
        if self.init is None:
            self.sweep()
            return
        self.init.kill()  # the kernel kills every process of the namespace
        end = time.monotonic() + 5
        while self.init.poll() is None and time.monotonic() < end:
            _reap_any(deadline=time.monotonic() + 0.05)


def _output_file() -> int:
    """An anonymous file for a worker's output (in memory: /tmp may be read-only or full)."""
    try:
        return os.memfd_create("worker-output", os.MFD_CLOEXEC)
    except (AttributeError, OSError):
        with tempfile.TemporaryFile() as output:
            return os.dup(output.fileno())


# -- the namespaces ------------------------------------------------------------------------------


def _check(result: int, what: str) -> int:
    if result < 0:
        code = ctypes.get_errno()
        raise OSError(code, f"{what}: {os.strerror(code)}")
    return result


def _syscall(name: str, *args) -> int:
    numbers = SYSCALLS.get(platform.machine())
    if numbers is None:
        raise OSError(errno.ENOSYS, f"{name}: unknown machine {platform.machine()}")
    return _check(libc.syscall(numbers[name], *args), name)


def _mount(source, target, fstype, flags, data=None) -> None:
    encode = lambda value: value.encode() if isinstance(value, str) else value  # noqa: E731
    _check(libc.mount(encode(source), encode(target), encode(fstype), flags, encode(data)), f"mount {target}")


class _MountAttr(ctypes.Structure):
    _fields_ = [("attr_set", ctypes.c_uint64), ("attr_clr", ctypes.c_uint64),
                ("propagation", ctypes.c_uint64), ("userns_fd", ctypes.c_uint64)]


def _read_only(target: str, mounts: list[str], *, recursive: bool) -> None:
    """Make ``target`` (and, if ``recursive``, every mount under it) read-only and nosuid."""
    attr = _MountAttr(MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID, 0, 0, 0)
    try:
        _syscall("mount_setattr", AT_FDCWD, target.encode(), AT_RECURSIVE if recursive else 0,
                 ctypes.byref(attr), ctypes.sizeof(attr))
    except OSError:  # before Linux 5.12: one bind remount per mount we made
        for path in [target, *mounts]:
            _mount(None, path, None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID)


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


def _isolate(sandbox_dir: str, scratch_mb: int) -> bool:
    """Enter new namespaces and an allow-listed root; return whether a user namespace was needed."""
    user_namespace = os.geteuid() != 0
    if user_namespace:
        uid, gid = os.getuid(), os.getgid()
        _check(libc.unshare(CLONE_NEWUSER), "unshare(user)")
        libc.prctl(PR_SET_DUMPABLE, 1, 0, 0, 0)  # else /proc/self belongs to root: the maps cannot be written
        try:
            for name, text in (("setgroups", "deny"), ("uid_map", f"{uid} {uid} 1"), ("gid_map", f"{gid} {gid} 1")):
                with open(f"/proc/self/{name}", "w") as handle:
                    handle.write(text)
        finally:
            libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)
    _check(libc.unshare(CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC), "unshare")
    _mount(None, "/", None, MS_REC | MS_PRIVATE)
    sources = {}
    try:
        for path in visible_paths() + [sandbox_dir, "/proc"] + [f"/dev/{d}" for d in DEVICES]:
            if os.path.exists(path) and not (path in SYSTEM and os.path.islink(path)):
                sources[path] = os.open(path, os.O_PATH | os.O_CLOEXEC)
        _build_root(sources, sandbox_dir, scratch_mb)
    finally:
        for fd in sources.values():
            os.close(fd)
    return user_namespace


def _build_root(sources: dict[str, int], sandbox_dir: str, scratch_mb: int) -> None:
    """Mount a tmpfs, bind every source into it, make it read-only, and pivot into it."""
    new = tempfile.gettempdir()  # any folder: it is covered only in this mount namespace
    _mount("tmpfs", new, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755,size=1m")
    try:
        shown = [path for path in sources if path != sandbox_dir]
        scratch = [d for d in ("/tmp", "/dev/shm") if not any(_inside(path, d) for path in shown)]
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
        _read_only(new, mounts, recursive=True)
        for folder in scratch:  # private, writable, small; gone with the namespace
            _mount("tmpfs", new + folder, "tmpfs", MS_NOSUID | MS_NODEV, f"mode=1777,size={scratch_mb}m,nr_inodes=4096")
        if late:
            _bind(sources[sandbox_dir], new + sandbox_dir)
            _read_only(new + sandbox_dir, [], recursive=False)
        _syscall("pivot_root", new.encode(), (new + "/.old").encode())
    except BaseException:
        libc.umount2(new.encode(), MNT_DETACH)
        raise
    os.chdir("/")
    _check(libc.umount2(b"/.old", MNT_DETACH), "umount /.old")


def _bind(fd: int, target: str) -> None:
    """Bind what ``fd`` (an O_PATH descriptor) names onto ``target``, made to match."""
    if os.path.isdir(f"/proc/self/fd/{fd}"):
        os.makedirs(target, mode=0o755, exist_ok=True)
    else:
        os.makedirs(os.path.dirname(target), mode=0o755, exist_ok=True)
        open(target, "w").close()
    _mount(f"/proc/self/fd/{fd}", target, None, MS_BIND | MS_REC)


def _start_init() -> subprocess.Popen:
    """PID 1 of the new PID namespace: ``sleep``, which reaps orphans (SIGCHLD ignored)."""
    sleep = shutil.which("sleep", path="/usr/bin:/bin")
    if sleep is None:
        raise OSError(errno.ENOENT, "no sleep binary to be the PID namespace's init")
    previous = signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # inherited through exec
    try:
        return subprocess.Popen([sleep, "infinity"], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL, close_fds=True)
    finally:
        signal.signal(signal.SIGCHLD, previous)


def _enter_worker_namespace() -> None:
    """In a new worker: a /proc of its own PID namespace; the previous worker's leftovers killed."""
    _check(libc.unshare(CLONE_NEWNS), "unshare(mount)")
    try:
        _mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
    except OSError:  # a user namespace may not mount proc: then no /proc at all
        _mount("tmpfs", "/proc", "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, "size=4k")
    try:
        os.kill(-1, signal.SIGKILL)  # every process of this namespace but init and us
    except OSError:
        pass


def _children() -> list[int]:
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


def _reap_any(deadline: float) -> None:
    while time.monotonic() < deadline:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            time.sleep(0.005)


def probe() -> str:
    """Whether namespaces work here: ``NAMESPACES``, or why not. Runs in a throw-away child."""
    read_end, write_end = os.pipe()
    scratch = tempfile.mkdtemp(prefix="grader-probe-", dir=os.getcwd())  # the zygote's private folder: removed with it
    os.chmod(scratch, 0o755)
    pid = os.fork()
    if pid == 0:
        os.close(read_end)
        answer, box = NAMESPACES, None
        try:
            box = Box({"file_mb": 1}, scratch, NAMESPACES)
            if box.mode != NAMESPACES:
                answer = box.mode
            else:
                child = os.fork()
                if child == 0:
                    try:
                        _enter_worker_namespace()
                        ok = os.path.isdir(scratch) and not os.path.exists(str(PROJECT_ROOT / "tests"))
                        os._exit(0 if ok else 1)
                    except BaseException:  # noqa: BLE001
                        os._exit(2)
                _, status = os.waitpid(child, 0)
                if status != 0:
                    answer = f"no namespaces: a worker could not enter them (status {status})"
        except BaseException as exc:  # noqa: BLE001
            answer = f"no namespaces: {exc}"
        finally:
            if box is not None:
                box.close()
        os.write(write_end, answer.encode()[:500])
        os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as pipe:
        answer = pipe.read().decode() or "no namespaces: the probe died"
    os.waitpid(pid, 0)
    os.rmdir(scratch)
    return answer


# -- the worker ------------------------------------------------------------------------------------


def redirect_output(output_fd: int) -> None:
    """Send stdout and stderr (Python's and the C library's) to the capture file."""
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.dup2(output_fd, 1)
    os.dup2(output_fd, 2)
    os.close(devnull)
    os.close(output_fd)
    sys.stdout = open(1, "w", closefd=False, buffering=1)
    sys.stderr = open(2, "w", closefd=False, buffering=1)


def _keep_only(channel: int) -> int:
    """Close every inherited descriptor (the client's socket, other modules' pipes) but
    stdin, stdout, stderr and the result channel, which becomes descriptor 3."""
    if channel != 3:
        os.dup2(channel, 3)
        os.close(channel)
    os.closerange(4, resource.getrlimit(resource.RLIMIT_NOFILE)[0])
    return 3


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]


def _drop_capabilities() -> None:
    header = _CapHeader(0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3
    data = (_CapData * 2)()
    _check(libc.capset(ctypes.byref(header), data), "capset")


def confine(limits: dict, *, user_namespace: bool = False) -> None:
    """Apply resource limits and drop privileges; after this, student code may run."""
    mib = 1024 * 1024
    resource.setrlimit(resource.RLIMIT_AS, (limits["memory_mb"] * mib,) * 2)
    resource.setrlimit(resource.RLIMIT_CPU, (limits["cpu_seconds"], limits["cpu_seconds"] + 1))
    resource.setrlimit(resource.RLIMIT_FSIZE, (limits["file_mb"] * mib,) * 2)
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    try:  # when memory runs short, the kernel kills student code first
        with open("/proc/self/oom_score_adj", "w") as handle:
            handle.write("1000")
    except OSError:
        pass
    if user_namespace or os.geteuid() == 0:
        # Processes of the sandbox user (or of this user namespace): a fork bomb stops here.
        # Not in the plain fallback without root: there it would count all of the user's processes.
        resource.setrlimit(resource.RLIMIT_NPROC, (64, 64))
    if user_namespace:
        _drop_capabilities()
    elif os.geteuid() == 0:
        user = pwd.getpwnam(limits["sandbox_user"])
        os.setgroups([])
        os.setgid(user.pw_gid)
        os.setuid(user.pw_uid)
    _check(libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")  # no setuid binary (sudo) helps
    libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)
    sys.dont_write_bytecode = True
    os.environ.clear()
    os.environ.update({"PATH": "/usr/bin:/bin", "HOME": "/nonexistent", "LANG": "C.UTF-8", "OMP_NUM_THREADS": "1"})
