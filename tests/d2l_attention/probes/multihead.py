"""Probes for multihead.py. They run INSIDE the sandbox, next to the student's code (which
imports the reference DotProductAttention as ``scoring``): inputs only, never an expected
value. Every probe builds the module right after ``torch.manual_seed(seed)``, as the
trusted tests build the reference.
"""

from grader import probing

CLASS = "MultiHeadAttention"


def attend(student, args, bias, seed, queries, keys, values, valid_lens, train=False):
    """The output of one forward call and the attention weights of its heads."""
    module = probing.build(student, CLASS, *args, seed=seed, train=train, kwargs={"bias": bias})
    with probing.recorded_if_sent(module) as recorder:
        output = module(queries, keys, values, valid_lens)
    weights = probing.tensor_or_none(probing.attribute(module, "attention.attention_weights"))
    return probing.with_steps({"output": output, "weights": weights}, recorder)


def parameters(student, args, bias, seed):
    """Names and shapes of the parameters, in the order they were created."""
    module = probing.build(student, CLASS, *args, seed=seed, train=False, kwargs={"bias": bias})
    return [[name, list(p.shape)] for name, p in module.named_parameters()]


def gradients(student, args, bias, seed, queries, keys, values, valid_lens, upstream):
    """Gradients of ``(output * upstream).sum()`` for every parameter and every input (None if none)."""
    module = probing.build(student, CLASS, *args, seed=seed, train=False, kwargs={"bias": bias})
    inputs = {"queries": queries, "keys": keys, "values": values}
    return probing.gradients_through(module, lambda: module(queries, keys, values, valid_lens), inputs, upstream)
