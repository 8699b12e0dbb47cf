"""``torch.manual_seed`` at the cost of seeding the CPU.

Grading hides every accelerator from torch (:mod:`grader.accelerators`), so wherever it runs,
:func:`no_accelerator` is true and the CPU's generator is all there is to seed.

On a machine without an accelerator, ``torch.manual_seed`` seeds the CPU generator and
queues a seeding of every absent accelerator (CUDA, XPU, MTIA) for the day it starts, each
with a formatted stack trace: about 1 ms a call, where the CPU's own seeding takes a few
microseconds; a suite seeds dozens of times per submission, on both sides of the border.

- :func:`seed` is what the probes use (through ``grader.sandbox.probing``): the CPU's generator alone
  where no accelerator exists, which gives the same random numbers on the CPU. Student code's
  own ``torch.manual_seed`` is left as torch has it.
- :func:`seed_cpu_only` makes ``torch.manual_seed`` itself do that, in the trusted grading
  process only (its tests and reference solutions call it).
"""

from __future__ import annotations

import functools


@functools.cache
def no_accelerator() -> bool:
    """Whether torch sees no accelerator at all (then the CPU's generator is all there is to seed)."""
    import torch

    return not (torch.cuda.is_available() or torch.xpu.is_available() or torch.backends.mps.is_available()
                or torch.mtia.is_available() or hasattr(torch, torch._C._get_privateuse1_backend_name()))


def seed(value: int) -> None:
    """Seed torch as ``torch.manual_seed(value)`` does, seeding only the CPU where nothing else exists."""
    import torch

    if no_accelerator():
        manual_seed(value)
    else:
        torch.manual_seed(value)


def seed_cpu_only() -> bool:
    """Replace ``torch.manual_seed`` when no accelerator exists; return whether it was replaced."""
    import torch

    if not no_accelerator():
        return False
    if torch.manual_seed is not manual_seed:
        torch.manual_seed = torch.random.manual_seed = manual_seed
    return True


def manual_seed(seed) -> torch.Generator:  # noqa: F821 - torch is imported by the caller
    """Seed the CPU's default generator, as ``torch.manual_seed`` does on a machine without accelerators."""
    import torch

    return torch.default_generator.manual_seed(int(seed))
