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
)
# clone() flags that would make new namespaces; clone3() hides its flags in memory, so it
# answers ENOSYS and the C library falls back to clone().
NEW_NAMESPACES = (0x00020000, 0x04000000, 0x08000000, 0x10000000, 0x20000000, 0x40000000, 0x02000000)
NOT_FILTERED = "no system-call filter"  # how an isolation mode says the filter is missing
EXPLAINED = ("it made a system call the grader does not allow (such as keyctl, ptrace, bpf, "
             "perf_event_open, io_uring or mount)")
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
    try:
        rules.add_rule(pyseccomp.ERRNO(errno.ENOSYS), "clone3")
    except ValueError:
        pass
    return rules
