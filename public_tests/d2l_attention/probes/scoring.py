"""Public probe for scoring.py (runs in the sandbox: inputs only, no expected value)."""

import torch

from grader.sandbox.trace import recording
from grader.sandbox.worker import ProbeError


def pool(student, cls, init, queries, keys, values, valid_lens):
    """``cls(**init)`` in eval mode applied to the inputs: its output and its attention weights."""
    found = getattr(student, cls, None)
    if found is None:
        raise ProbeError(f"your module has no class named {cls!r}")
    torch.manual_seed(0)
    module = found(**init)
    module.eval()
    with recording(module) as recorder:
        output = module(queries, keys, values, valid_lens)
    weights = getattr(module, "attention_weights", None)
    if weights is None:
        raise ProbeError(f"{cls} should keep its attention weights in self.attention_weights")
    return {"$traced": {"output": output, "weights": weights}, "steps": recorder.steps}
