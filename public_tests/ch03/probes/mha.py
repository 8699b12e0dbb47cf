"""Public probes for mha.py (run in the sandbox: inputs only, no expected value)."""

import torch

from grader.sandbox.trace import traced
from grader.sandbox.worker import ProbeError


def _get(student, name):
    found = getattr(student, name, None)
    if found is None:
        raise ProbeError(f"your module has no function or class named {name!r}")
    return found


def output(student, cls, seed, args, kwargs, x):
    """``cls(*args, **kwargs)`` built right after ``torch.manual_seed(seed)``, in eval mode, applied to ``x``."""
    torch.manual_seed(seed)
    module = _get(student, cls)(*args, **kwargs)
    module.eval()
    return traced(module, x, module=module)


def exercise_3_2(student, seed, x):
    """``exercise_3_2_wrapper(3, 6)`` built right after ``torch.manual_seed(seed)``, applied to ``x``."""
    torch.manual_seed(seed)
    module = _get(student, "exercise_3_2_wrapper")(3, 6)
    module.eval()
    return traced(module, x, module=module)


def parameter_count(student):
    """How many trainable numbers ``exercise_3_3_gpt2_attention()`` holds."""
    module = _get(student, "exercise_3_3_gpt2_attention")()
    return int(sum(p.numel() for p in module.parameters() if p.requires_grad))
