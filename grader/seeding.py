"""``torch.manual_seed`` at the cost of seeding the CPU, in the trusted grading process.

On a machine without an accelerator, ``torch.manual_seed`` seeds the CPU generator and
queues a seeding of every absent accelerator (CUDA, XPU, MTIA) for the day it starts, each
with a formatted stack trace: about 0.6 ms a call, where the CPU's own seeding takes a few
microseconds; a suite calls it dozens of times per submission. :func:`seed_cpu_only` makes
``torch.manual_seed`` seed only the CPU generator there, which gives the same random numbers
on the CPU. Only the grader's own process is changed; the sandbox's torch is untouched.
"""

from __future__ import annotations


def seed_cpu_only() -> bool:
    """Replace ``torch.manual_seed`` when no accelerator exists; return whether it was replaced."""
    import torch

    if (torch.cuda.is_available() or torch.xpu.is_available() or torch.backends.mps.is_available()
            or torch.mtia.is_available() or hasattr(torch, torch._C._get_privateuse1_backend_name())):
        return False
    if torch.manual_seed is not manual_seed:
        torch.manual_seed = torch.random.manual_seed = manual_seed
    return True


def manual_seed(seed) -> torch.Generator:  # noqa: F821 - torch is imported by the caller
    """Seed the CPU's default generator, as ``torch.manual_seed`` does on a machine without accelerators."""
    import torch

    return torch.default_generator.manual_seed(int(seed))
