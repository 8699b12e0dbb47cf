"""Public probes for multihead.py (run in the sandbox: inputs only, no expected value)."""

import torch

from grader.sandbox.trace import traced
from grader.sandbox.worker import ProbeError


def _get(student, name):
    found = getattr(student, name, None)
    if found is None:
        raise ProbeError(f"your module has no function or class named {name!r}")
    return found


def round_trip(student, x, num_heads):
    """``transpose_qkv(x)`` and ``transpose_output`` of that."""
    split = _get(student, "transpose_qkv")(x, num_heads)
    return {"split": split, "back": _get(student, "transpose_output")(split, num_heads)}


def output(student, queries, keys, valid_lens):
    """The book's ``MultiHeadAttention(100, 100, 100, 100, 5, 0.5)`` in eval mode."""
    torch.manual_seed(0)
    module = _get(student, "MultiHeadAttention")(100, 100, 100, 100, 5, 0.5)
    module.eval()
    return traced(module, queries, keys, keys, valid_lens, module=module)
