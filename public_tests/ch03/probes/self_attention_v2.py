"""Public probe for self_attention_v2.py (runs in the sandbox: inputs only, no expected value)."""

import torch

from grader.sandbox.trace import traced
from grader.sandbox.worker import ProbeError


def output(student, seed, d_in, d_out, x):
    """``SelfAttention_v2(d_in, d_out)`` built right after ``torch.manual_seed(seed)``, applied to ``x``."""
    cls = getattr(student, "SelfAttention_v2", None)
    if cls is None:
        raise ProbeError("your module has no class named 'SelfAttention_v2'")
    torch.manual_seed(seed)
    module = cls(d_in, d_out)
    return traced(module, x, module=module)
