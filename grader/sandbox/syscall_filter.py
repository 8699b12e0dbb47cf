"""A seccomp filter for workers: system calls a probe never needs end the worker.

Built with ``pyseccomp`` (a ctypes interface to the system's libseccomp, which compiles the
rules into BPF for this machine's architecture and kills a process that uses another ABI).
The filter is installed last, just before student code runs; every thread and child of the
worker inherits it, and nothing can remove it. A denied call kills the worker with SIGSYS,
which the supervisor reports to the student as a forbidden system call (:data:`EXPLAINED`).

Where libseccomp is missing (or the kernel has no seccomp), :func:`unavailable` says why and
the sandbox runs without the filter: the isolation mode then names it, and the grader prints
a note (see docs/threat-model.md, *Isolation levels*).
"""

from __future__ import annotations

import errno
import functools
import signal

try:
    import pyseccomp
except (ImportError, RuntimeError, OSError) as exc:  # RuntimeError: "Unable to find libseccomp"
    pyseccomp, _MISSING = None, f"no system-call filter (pyseccomp: {exc})"
else:
    _MISSING = ""

# What student code must never do from inside the sandbox: reach kernel keyrings (a channel
# that outlives namespaces), inspect or tamper with other processes, load kernel programs,
# watch performance counters, fault memory in from user space, use io_uring (it bypasses
# this filter), or change what the process sees of the file system and namespaces.
DENIED = (
    "keyctl", "add_key", "request_key",
    "ptrace", "process_vm_readv", "process_vm_writev", "kcmp", "pidfd_getfd",
    "bpf", "perf_event_open", "userfaultfd",
    "io_uring_setup", "io_uring_enter", "io_uring_register",
    "mount", "umount2", "pivot_root", "chroot", "unshare", "setns", "mount_setattr",
    "move_mount", "open_tree", "fsopen", "fsconfig", "fsmount", "fspick",
    "open_by_handle_at", "name_to_handle_at",
    "kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module",
    "swapon", "swapoff", "reboot", "acct", "quotactl", "syslog",
    # Kernel objects that let two processes talk through a file both can read (every sandbox
    # shares the same read-only standard library): watches, file locks (fcntl's are below),
    # page-cache residency, System V and POSIX message IPC (the IPC namespace covers those only
    # where namespaces work). See docs/threat-model.md, *Concurrency*.
    "inotify_init", "inotify_init1", "inotify_add_watch", "inotify_rm_watch", "fanotify_init", "fanotify_mark",
    "flock", "mincore",
    "shmget", "shmat", "shmctl", "shmdt", "semget", "semop", "semtimedop", "semctl",
    "msgget", "msgsnd", "msgrcv", "msgctl",
    "mq_open", "mq_unlink", "mq_timedsend", "mq_timedreceive", "mq_notify", "mq_getsetattr",
)
# fcntl() commands that lock, lease or watch a file (F_GETLK, F_SETLK, F_SETLKW, F_OFD_GETLK,
# F_OFD_SETLK, F_OFD_SETLKW, F_SETLEASE, F_GETLEASE, F_NOTIFY); every other command is allowed.
FCNTL_DENIED = (5, 6, 7, 36, 37, 38, 1024, 1025, 1026)
# mmap() flags: shared (MAP_SHARED, or MAP_SHARED_VALIDATE, which has the same bit) and not
# anonymous, i.e. a mapping of a file that writes or wake-ups could go through to another process.
MAP_SHARED, MAP_ANONYMOUS = 0x01, 0x20
# futex() operations without FUTEX_PRIVATE_FLAG key on the file page, not the process, so two
# processes mapping the same library could wait and wake each other. Such a wait returns EAGAIN
# at once (the C library then re-checks the word: joining a thread still works, by polling) and
# such a wake, requeue or PI operation EINVAL (ignored by the C library); nobody is ever woken.
FUTEX_PRIVATE_FLAG, FUTEX_COMMAND = 0x80, 0x7F
FUTEX_WAITS = (0, 6, 8, 9, 11, 13)  # WAIT, LOCK_PI, TRYLOCK_PI, WAIT_BITSET, WAIT_REQUEUE_PI, LOCK_PI2
FUTEX_OTHERS = (1, 2, 3, 4, 5, 7, 10, 12)  # WAKE, FD, REQUEUE, CMP_REQUEUE, WAKE_OP, UNLOCK_PI, WAKE_BITSET, ...
# The newer futex calls carry their flags in memory or in a form the C library does not use yet:
# they answer ENOSYS, as on an older kernel.
FUTEX2 = ("futex_waitv", "futex_wake", "futex_wait", "futex_requeue")
# Open files a worker may hold at once: a forked worker needs 6, a fresh ``import torch`` fewer
# than 8 at any moment (measured on Debian 12, torch 2.13); student code gets ample room beyond.
OPEN_FILES = 64
# clone() flags that would make new namespaces; clone3() hides its flags in memory, so it
# answers ENOSYS (below) and the C library falls back to clone().
NEW_NAMESPACES = (0x00020000, 0x04000000, 0x08000000, 0x10000000, 0x20000000, 0x40000000, 0x02000000)
NOT_FILTERED = "no system-call filter"  # how an isolation mode says the filter is missing
EXPLAINED = ("it made a system call the grader does not allow (such as keyctl, ptrace, bpf, "
             "perf_event_open, io_uring or mount, or one that lets two processes signal each other "
             "through a file: a file lock, an inotify watch, a shared file mapping)")
SIGNAL = signal.SIGSYS


def unavailable() -> str:
    """Why no filter can be built here, or "" when it can."""
    return _MISSING


def install() -> None:
    """Load the filter into this process (after ``no_new_privs``); raises ``OSError``."""
    if pyseccomp is None:
        raise OSError(errno.ENOSYS, _MISSING)
    rules().load()


@functools.cache
def rules():
    """The filter, built once: the zygote builds it before it forks, so that a worker only loads it
    (about a tenth of the cost of building it, paid by every worker)."""
    rules = pyseccomp.SyscallFilter(pyseccomp.ALLOW)
    kill = pyseccomp.KILL_PROCESS
    for name in DENIED:
        try:
            rules.add_rule(kill, name)
        except ValueError:  # a call this architecture does not have
            continue
    for flag in NEW_NAMESPACES:
        rules.add_rule(kill, "clone", pyseccomp.Arg(0, pyseccomp.MASKED_EQ, flag, flag))
    for call in ("clone3", *FUTEX2):
        try:
            rules.add_rule(pyseccomp.ERRNO(errno.ENOSYS), call)
        except ValueError:  # not on this architecture, or unknown to this libseccomp
            pass
    for call in ("fcntl", "fcntl64"):
        for command in FCNTL_DENIED:
            try:
                rules.add_rule(kill, call, pyseccomp.Arg(1, pyseccomp.EQ, command))
            except ValueError:
                break
    rules.add_rule(kill, "mmap", pyseccomp.Arg(3, pyseccomp.MASKED_EQ, MAP_SHARED | MAP_ANONYMOUS, MAP_SHARED))
    mask = FUTEX_PRIVATE_FLAG | FUTEX_COMMAND
    for commands, answer in ((FUTEX_WAITS, errno.EAGAIN), (FUTEX_OTHERS, errno.EINVAL)):
        for command in commands:
            rules.add_rule(pyseccomp.ERRNO(answer), "futex", pyseccomp.Arg(1, pyseccomp.MASKED_EQ, mask, command))
    return rules
