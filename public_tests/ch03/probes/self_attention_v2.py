"""Public probe for self_attention_v2.py (runs in the sandbox: inputs only, no expected value)."""

from grader.sandbox import probing


def output(student, seed, d_in, d_out, x):
    """``SelfAttention_v2(d_in, d_out)`` built right after ``torch.manual_seed(seed)``, applied to ``x``."""
    return probing.traced(probing.build(student, "SelfAttention_v2", d_in, d_out, seed=seed), x)
