"""Public probes for mha.py (run in the sandbox: inputs only, no expected value)."""

from grader.sandbox import probing


def output(student, cls, seed, args, kwargs, x):
    """``cls(*args, **kwargs)`` built right after ``torch.manual_seed(seed)``, in eval mode, applied to ``x``."""
    module = probing.build(student, cls, *args, seed=seed, train=False, kwargs=kwargs)
    return probing.traced(module, x)


def exercise_3_2(student, seed, x):
    """``exercise_3_2_wrapper(3, 6)`` built right after ``torch.manual_seed(seed)``, applied to ``x``."""
    module = probing.build(student, "exercise_3_2_wrapper", 3, 6, seed=seed, train=False, kind="function")
    return probing.traced(module, x)


def parameter_count(student):
    """How many trainable numbers ``exercise_3_3_gpt2_attention()`` holds."""
    module = probing.build(student, "exercise_3_3_gpt2_attention", kind="function", initialize=False)
    return int(sum(p.numel() for p in module.parameters() if p.requires_grad))
