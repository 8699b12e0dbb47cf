"""Grading computes on the CPU, whatever accelerators torch could see on this machine.

The Classroom runner has no GPU, so the grade of record must not depend on one. With a GPU
visible, the reference solutions themselves lost points: a process that runs a backward pass
starts autograd's device threads, and its forked children (the sandbox's workers) can then no
longer run backward ("Unable to handle autograd's threading in combination with fork-based
multiprocessing"); a forked child cannot initialise CUDA after its parent did either. And a
student's code that moves its work to ``cuda`` when it is there computed elsewhere than the
reference's.

So every process of grading hides them before torch first asks (torch reads these variables
when it first looks for a device, not when it is imported): the trusted process at its entry
point (``grader/__main__.py``), the sandbox's zygote (``client.Sandbox`` gives it
:data:`HIDDEN` in the environment it builds afresh), its workers (``lockdown.confine`` resets their
environment to a list that includes :data:`HIDDEN`), and the interpreters of the local runner
(``local_interpreter.py``). Apple's MPS has no such variable: :func:`hide_mps` makes torch report it absent
in every process that runs student code or the grader's own checks.

This module imports only the standard library: it must run before anything imports torch.
"""

from __future__ import annotations

import os
from collections.abc import MutableMapping

# What each runtime reads to choose its devices, set so that it finds none.
HIDDEN = {
    # NVIDIA CUDA: an empty list, no device.
    "CUDA_VISIBLE_DEVICES": "",
    # AMD ROCm (HIP, which honours CUDA_VISIBLE_DEVICES too): an invalid index ends the list, so
    # nothing is left before it; torch's own parser (torch.cuda._parse_visible_devices) reads it so.
    "HIP_VISIBLE_DEVICES": "-1",
    # Intel XPU: torch counts the devices of ZE_AFFINITY_MASK (a negative index is dropped, so
    # none), and the SYCL runtime behind it offers only OpenCL CPU devices, which torch's XPU
    # backend does not use.
    "ZE_AFFINITY_MASK": "-1",
    "ONEAPI_DEVICE_SELECTOR": "opencl:cpu",
}


def hide(environ: MutableMapping[str, str] | None = None) -> MutableMapping[str, str]:
    """Hide every accelerator from torch in ``environ`` (default: this process's); return it."""
    environ = os.environ if environ is None else environ
    environ.update(HIDDEN)
    return environ


def _absent() -> bool:
    return False


def hide_mps(torch) -> None:
    """Make ``torch`` (imported) report Apple's MPS absent, as on the Classroom runner.

    Every check of MPS in torch's Python API ends at ``torch._C._mps_is_available``:
    ``torch.backends.mps.is_available()`` (its cached answer is dropped), ``torch.mps.is_available()``
    and ``device_count()``, ``torch.accelerator.is_available()``, and
    ``torch.accelerator.current_accelerator(check_available=True)``. So code that picks
    ``"mps" if torch.backends.mps.is_available() else "cpu"`` computes on the CPU. A student can
    still name the device outright (``.to("mps")``, ``torch.device("mps")``, or
    ``torch.accelerator.current_accelerator()`` without ``check_available``): then their code
    runs on their Mac's GPU in their own ``check`` only, since grading (Classroom, the
    instructor's regrade) runs on Linux, where no MPS exists.
    """
    if not getattr(torch._C, "_has_mps", False):  # not built with MPS: nothing can report it
        return
    torch._C._mps_is_available = _absent
    torch.backends.mps.is_available.cache_clear()
