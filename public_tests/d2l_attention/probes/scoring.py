"""Public probe for scoring.py (runs in the sandbox: inputs only, no expected value)."""

from grader.sandbox import probing
from grader.sandbox.probing import ProbeError


def pool(student, cls, init, queries, keys, values, valid_lens):
    """``cls(**init)`` in eval mode applied to the inputs: its output and its attention weights."""
    module = probing.build(student, cls, seed=0, train=False, kwargs=init)
    with probing.recorded_if_sent(module) as recorder:
        output = module(queries, keys, values, valid_lens)
    weights = probing.attribute(module, "attention_weights")
    if weights is None:
        raise ProbeError(f"{cls} should keep its attention weights in self.attention_weights")
    return probing.with_steps({"output": output, "weights": weights}, recorder)
