"""Confine student code: the Box policy (namespaces, limits, no privileges, captured output).

Runs in the zygote (trusted); the raw system calls are in :mod:`grader.sandbox.linux`. One
:class:`Box` per slot of a plan (its modules, phase after phase: :func:`grader.sandbox.schedule.slot_schedule`),
made in the slot's supervisor process, holds the namespaces every worker of those modules runs in:

* a new **PID namespace** whose init is a tiny ``sleep`` (so workers keep ordinary signal
  semantics); killing it at the end makes the kernel kill every process left in it, however
  it detached (double fork, new session), and each worker kills the leftovers of the one
  before it (``kill(-1)`` reaches only its own namespace);
* a new **mount namespace** whose root is built from an allow-list (:mod:`grader.sandbox.rootfs`);
* a new **network namespace** (no network: not even the host's loopback) and **IPC namespace**.

Each worker then gets (:mod:`grader.sandbox.lockdown`) a fresh session keyring, resource limits,
an unprivileged user (as root: ``sandbox_user``; without root, the same inside a user namespace,
every capability dropped), ``no_new_privs`` and, last, the seccomp filter of
:mod:`grader.sandbox.syscall_filter`. Where namespaces cannot be made (a container without
``CAP_SYS_ADMIN``, user namespaces disabled or restricted, as on recent Ubuntu runners), the box
falls back to what works everywhere: a session per worker killed as a group, the supervisor as a
child subreaper that kills whatever its workers left behind, the limits, ``no_new_privs`` and
the filter. ``Box.mode`` says which, and the client prints a note when it is less than
:data:`NAMESPACES`.

``probe()`` tries the whole set-up once, when the zygote starts, in a throw-away child, so
a supervisor only attempts what is known to work.
"""

from __future__ import annotations

import contextlib
import functools
import os
import select
import signal
import subprocess
import tempfile
import time

from grader.sandbox import linux, lockdown, pagecache, rootfs, syscall_filter
from grader.sandbox.capture import Capture, Worker, keep_only_channel, redirect_output
from grader.sandbox.protocol import Limits
from grader.settings import PROJECT_ROOT

NAMESPACES = "namespaces"  # Box.mode when fully isolated
# The box :func:`probe` builds to try the namespaces (its workers run no student code): a small scratch.
TRIAL = Limits(probe_timeout=1.0, module_budget=1.0, memory_mb=4096, cpu_seconds=60, file_mb=1, workers=1,
               output_chars=2000, sandbox_user="nobody")
PREPARING = 10.0  # seconds a new worker has to clear its box and load its references (trusted work: milliseconds)


class Box:
    """The namespaces (or the fallback) that one module's workers run in; see the module docstring.

    Made in the module's supervisor after the probes and reference modules are loaded:
    from then on the supervisor itself only sees the allow-listed file system.
    """

    def __init__(self, limits: Limits, sandbox_dir: str, isolation: str):
        self.limits = limits
        self.sandbox_dir = sandbox_dir
        self.init: subprocess.Popen | None = None
        self.scratch: list[str] = []  # the folders each worker mounts anew (rootfs.renew_scratch)
        self.user_namespace = False
        self.guard: int | None = None  # a fanotify group: opens wait until the file is resident (pagecache)
        self.new_output()
        self.mode = isolation
        if os.geteuid() == 0:  # for lockdown.confine(), before the file system is narrowed (a worker that cannot find it says so)
            with contextlib.suppress(KeyError):
                lockdown.sandbox_ids(limits.sandbox_user)
        if isolation.split("; ")[0] == NAMESPACES:
            try:
                self.user_namespace, self.scratch = rootfs.isolate(sandbox_dir, scratch_mb=4 * limits.file_mb)
                self.init = _start_init()
            except OSError as exc:  # should not happen once probe() succeeded
                self.mode = f"no namespaces: {exc}"
            if self.init is not None and not self.user_namespace:
                self.guard = pagecache.GROUP
        if self.init is None:
            linux.set_child_subreaper()
        missing = syscall_filter.unavailable()
        if missing and missing not in self.mode:
            self.mode += f"; {missing}"
        self.filtered = syscall_filter.NOT_FILTERED not in self.mode

    def new_output(self) -> None:
        """Capture anew: what the next module's workers print is that module's alone."""
        self.output = Capture(self.limits.output_chars)

    def spawn(self, run, gate: int | None = None, before=None) -> Worker:
        """Fork a worker that confines itself, then calls ``run(channel)`` (a text file). With
        ``gate`` (a pipe's read end), the confined worker first waits for a byte on it (its stdin)
        and ends at once if the pipe closes without one: it is ready before its turn, and runs
        student code only in it. ``before()`` runs in the worker before it is confined (trusted:
        loading its references).

        Return once the worker has killed whatever earlier workers of the box left running (it
        does at once, in its PID namespace) and ``before()`` is done, with ``Worker.prepared``
        saying how that went: ``"ok"``; ``"unloaded"`` (``before()`` raised: the grader's failure,
        the worker ends); ``"lost"`` (it ended, or was stopped, before saying so, within
        :data:`PREPARING` seconds: killed or stopped by something left in the box, and what it
        was to kill may live on; it is killed)."""
        read_end, write_end = os.pipe()
        output_read, output_write = os.pipe()
        said_read, said_write = os.pipe()
        pid = os.fork()
        if pid == 0:  # the worker
            status = 0
            try:
                os.close(read_end)
                os.close(output_read)
                os.close(said_read)
                self._become_worker(run, gate, before, channel=write_end, output=output_write, said=said_write)
            except BaseException:  # noqa: BLE001 - the worker must end here, whatever happened
                status = 70
            finally:
                os._exit(status)
        os.close(write_end)
        os.close(output_write)
        os.close(said_write)
        worker = Worker(pid, read_end, output_read, self.output)
        worker.prepared = _prepared(said_read)
        if worker.prepared != "ok":
            worker.finish()
        return worker

    def _become_worker(self, run, gate: int | None, before, *, channel: int, output: int, said: int) -> None:
        """In the forked worker, in order: its own session (and namespace), ``before()``, a byte on
        ``said`` for how that went, the page cache's guard, its output and gate, the lockdown;
        then its turn and ``run`` on ``channel``. Its caller ends the process, whatever happens."""
        os.setsid()
        if self.init is not None:
            _enter_worker_namespace()
            rootfs.renew_scratch(self.sandbox_dir, 4 * self.limits.file_mb, self.scratch)
        try:
            if before is not None:
                before()
        except BaseException:  # noqa: BLE001 - the grader's failure, not the student's
            os.write(said, b"e")
            raise
        os.write(said, b"k")
        os.close(said)
        if self.guard is not None:  # before any descriptor is closed: the group's is inherited
            pagecache.mark_mounts(self.guard)
        redirect_output(output)
        if gate is not None:
            os.dup2(gate, 0)  # instead of /dev/null: empty once the supervisor closes it
        channel = keep_only_channel(channel)
        lockdown.confine(self.limits, user_namespace=self.user_namespace, seccomp=self.filtered)
        if gate is not None and os.read(0, 1) != b"g":
            os._exit(0)
        with os.fdopen(channel, "w") as stream:
            run(stream)

    def sweep(self) -> None:
        """Without a PID namespace: kill what finished workers left behind (now our children)."""
        if self.init is not None:
            return
        for _ in range(100):
            children = linux.children()
            if not children:
                return
            for pid in children:
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
            linux.reap_any(deadline=time.monotonic() + 0.2)

    def close(self) -> None:
        """Kill everything the workers left: the whole PID namespace, or every child."""
        if self.init is None:
            self.sweep()
            return
        self.init.kill()  # the kernel kills every process of the namespace
        end = time.monotonic() + 5
        while self.init.poll() is None and time.monotonic() < end:
            # A worker not reaped yet (one that outlived finish, or after an error) keeps the
            # namespace's init from ending: reap whatever has ended, then wait for init.
            linux.reap_ended()
            linux.wait_for_exit(self.init.pid, min(end - time.monotonic(), 0.005))


def _prepared(said: int) -> str:
    """How a new worker's preparation went, from what it said on ``said`` (closed here) within
    :data:`PREPARING` seconds: ``"ok"``, ``"unloaded"`` or ``"lost"`` (see :meth:`Box.spawn`)."""
    told = b""
    if select.select([said], [], [], PREPARING)[0]:  # what it said, or its end (end of file)
        with contextlib.suppress(OSError):
            told = os.read(said, 1)
    os.close(said)
    return {b"k": "ok", b"e": "unloaded"}.get(told, "lost")


def _start_init() -> subprocess.Popen:
    """PID 1 of the new PID namespace: ``sleep``, which reaps orphans (SIGCHLD ignored)."""
    command, preexec = init_command()
    previous = signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # inherited through exec
    try:
        return subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL, close_fds=True, preexec_fn=preexec)
    finally:
        signal.signal(signal.SIGCHLD, previous)


@functools.cache
def init_command() -> tuple[list[str], object]:
    """How to start a namespace's init that dies with its supervisor: ``(argv, preexec_fn)``.

    With util-linux's ``setpriv --pdeathsig`` the child is spawned without a Python
    ``preexec_fn``, so Python uses vfork: about 1 ms instead of a fork of the whole (torch-sized)
    supervisor, some 20 ms of CPU, once per module of every submission. Without it, a fork
    that sets the same signal itself. Called in the zygote before any supervisor forks.
    """
    sleep = rootfs.system_binary("sleep")
    try:
        setpriv = [rootfs.system_binary("setpriv"), "--pdeathsig", "KILL", "--"]
        works = subprocess.run(setpriv + [rootfs.system_binary("true")], stdin=subprocess.DEVNULL,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=10).returncode == 0
    except (OSError, subprocess.SubprocessError):
        works = False
    if works:
        return [*setpriv, sleep, "infinity"], None
    return [sleep, "infinity"], linux.die_with_parent


def _enter_worker_namespace() -> None:
    """In a new worker: a /proc of its own PID namespace; the previous worker's leftovers killed."""
    linux.unshare(linux.CLONE_NEWNS, "unshare(mount)")
    try:
        linux.mount("proc", "/proc", "proc", linux.MS_NOSUID | linux.MS_NODEV | linux.MS_NOEXEC)
    except OSError:  # a user namespace may not mount proc: then no /proc at all
        linux.mount("tmpfs", "/proc", "tmpfs", linux.MS_RDONLY | linux.MS_NOSUID | linux.MS_NODEV | linux.MS_NOEXEC,
                    "size=4k")
    try:
        os.kill(-1, signal.SIGKILL)  # every process of this namespace but init and us
    except OSError:
        pass


def probe() -> str:
    """What isolation works here: ``NAMESPACES``, or why not (and whether the system-call
    filter is missing). Runs in a throw-away child."""
    init_command()  # found once here, inherited by every supervisor
    read_end, write_end = os.pipe()
    scratch = tempfile.mkdtemp(prefix="grader-probe-", dir=os.getcwd())  # the zygote's private folder: removed with it
    os.chmod(scratch, 0o755)
    pid = os.fork()
    if pid == 0:
        os.close(read_end)
        answer, box = NAMESPACES, None
        try:
            box = Box(TRIAL, scratch, NAMESPACES)
            answer = box.mode
            if box.init is not None:
                status = _try_in_worker(lambda: os.path.isdir(scratch) and not os.path.exists(str(PROJECT_ROOT / "tests")))
                if status != 0:
                    answer = f"no namespaces: a worker could not enter them (status {status})"
            if box.filtered:
                status = _try_in_worker(_denied_call_kills, namespaces=False)
                if not (os.WIFSIGNALED(status) and os.WTERMSIG(status) == syscall_filter.SIGNAL):
                    answer += f"; {syscall_filter.NOT_FILTERED}: a denied call did not stop the process (status {status})"
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


def _try_in_worker(check, *, namespaces: bool = True) -> int:
    """The wait status of a child that enters the worker's namespace (if asked) and runs ``check``."""
    child = os.fork()
    if child == 0:
        try:
            if namespaces:
                _enter_worker_namespace()
            os._exit(0 if check() else 1)
        except BaseException:  # noqa: BLE001
            os._exit(2)
    _, status = os.waitpid(child, 0)
    return status


def _denied_call_kills() -> bool:
    linux.set_no_new_privs()
    syscall_filter.install()
    linux.join_new_session_keyring()  # denied: the kernel kills this process here
    return False

