"""Public probe for causal.py (runs in the sandbox: inputs only, no expected value)."""

from grader.sandbox import probing


def output(student, seed, args, x):
    """``CausalAttention(*args)`` built right after ``torch.manual_seed(seed)``, in eval mode, applied to ``x``."""
    module = probing.build(student, "CausalAttention", *args, seed=seed, train=False)
    return probing.traced(module, x)
