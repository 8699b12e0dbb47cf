"""A worker's last step before student code: its limits, its user, its privileges, its environment.

:func:`confine` runs in each worker after the fork (:meth:`grader.sandbox.confine.Box.spawn`), once
it has joined its box's namespaces and set up its channel: resource limits, the sandbox user (or,
inside a user namespace, every capability dropped), a new session keyring, death with its parent,
``no_new_privs``, an environment cleared, and last the seccomp filter of
:mod:`grader.sandbox.syscall_filter`. Apart from the box (the namespaces a slot's workers share,
made once by their supervisor) because this is what every worker does to itself, and nothing
after it is trusted.
"""

from __future__ import annotations

import functools
import os
import pwd
import resource
import sys

from grader import accelerators
from grader.sandbox import linux, syscall_filter
from grader.sandbox.protocol import Limits


@functools.cache
def sandbox_ids(user: str) -> tuple[int, int]:
    """The user and group ids of the sandbox user: looked up once by a box's supervisor, where it can
    (:class:`Box`), so that its workers inherit them instead of each asking the name service again."""
    entry = pwd.getpwnam(user)
    return entry.pw_uid, entry.pw_gid


def confine(limits: Limits, *, user_namespace: bool = False, seccomp: bool = True) -> None:
    """Apply resource limits and drop privileges; after this, student code may run."""
    mib = 1024 * 1024
    resource.setrlimit(resource.RLIMIT_AS, (limits.memory_mb * mib,) * 2)
    resource.setrlimit(resource.RLIMIT_CPU, (limits.cpu_seconds, limits.cpu_seconds + 1))
    resource.setrlimit(resource.RLIMIT_FSIZE, (limits.file_mb * mib,) * 2)
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    resource.setrlimit(resource.RLIMIT_NOFILE, (syscall_filter.OPEN_FILES,) * 2)
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
        linux.drop_capabilities()
    elif os.geteuid() == 0:
        uid, gid = sandbox_ids(limits.sandbox_user)
        os.setgroups([])
        os.setgid(gid)
        os.setuid(uid)
    try:  # not the instructor's session keyring (login shells, services, containers give one)
        linux.join_new_session_keyring()
    except OSError:  # keyrings refused here (a container's own filter): then they are for us too
        pass
    linux.die_with_parent()  # after the change of user, which resets it
    linux.set_no_new_privs()  # no setuid binary (sudo) helps
    linux.set_dumpable(False)
    sys.dont_write_bytecode = True
    os.environ.clear()
    # Accelerators stay hidden (grader/accelerators.py): for what the student's code starts, and
    # for torch, which reads these when it first looks for a device.
    os.environ.update({"PATH": "/usr/bin:/bin", "HOME": "/nonexistent", "LANG": "C.UTF-8", "OMP_NUM_THREADS": "1",
                       **accelerators.HIDDEN})
    if seccomp:
        syscall_filter.install()
