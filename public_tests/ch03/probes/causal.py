"""Public probe for causal.py (runs in the sandbox: inputs only, no expected value)."""

import torch

from grader.sandbox.trace import traced
from grader.sandbox.worker import ProbeError


def output(student, seed, args, x):
    """``CausalAttention(*args)`` built right after ``torch.manual_seed(seed)``, in eval mode, applied to ``x``."""
    cls = getattr(student, "CausalAttention", None)
    if cls is None:
        raise ProbeError("your module has no class named 'CausalAttention'")
    torch.manual_seed(seed)
    module = cls(*args)
    module.eval()
    return traced(module, x, module=module)
