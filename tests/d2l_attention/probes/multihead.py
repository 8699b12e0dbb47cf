"""Probes for multihead.py. They run INSIDE the sandbox, next to the student's code (which
imports the reference DotProductAttention as ``scoring``): inputs only, never an expected
value. Every probe builds the module right after ``torch.manual_seed(seed)``, as the
trusted tests build the reference.
"""

import torch

from grader.sandbox import probing
from grader.sandbox.probing import ProbeError

CLASS = "MultiHeadAttention"


def attend(student, args, bias, seed, queries, keys, values, valid_lens, train=False, before=None):
    """The output of one forward call and the attention weights of its heads. With ``before``
    (queries, keys, values, valid_lens), a first call on those inputs comes before: the weights
    kept must then be those of the last call."""
    module = probing.build(student, CLASS, *args, seed=seed, train=train, kwargs={"bias": bias})
    if before is not None:
        probing.call(module, *before)
    with probing.recorded_if_sent(module) as recorder:
        output = module(queries, keys, values, valid_lens)
    weights = probing.tensor_or_none(probing.attribute(module, "attention.attention_weights"))
    return probing.with_steps({"output": output, "weights": weights}, recorder)


def parameters(student, args, bias, seed):
    """Names and shapes of the parameters, in the order they were created, and their values."""
    module = probing.build(student, CLASS, *args, seed=seed, train=False, kwargs={"bias": bias})
    with probing.student_code():
        named = list(module.named_parameters())
    return {"names": [[name, list(p.shape)] for name, p in named],
            "values": [probing.tensor(p.detach(), f"parameter {name}") for name, p in named]}


def dropout(student, args, seed, queries, keys, values, valid_lens, forward_seed):
    """``forward`` in eval mode, then in training mode (after ``torch.manual_seed(forward_seed)``),
    with ``W_v`` and ``W_o`` set to the identity: with values [I | I], each head's output shows its
    attention weights after dropout (any order of random draws passes)."""
    module = probing.build(student, CLASS, *args, seed=seed, train=False)
    with torch.no_grad(), probing.student_code():
        for name in ("W_v", "W_o"):
            layer = getattr(module, name, None)
            if not isinstance(layer, torch.nn.Linear) or layer.weight.shape[0] != layer.weight.shape[1]:
                raise ProbeError(f"self.{name} should be a square nn.Linear here (value_size = num_hiddens)")
            layer.weight.copy_(torch.eye(layer.weight.shape[0]))
            if layer.bias is not None:
                layer.bias.zero_()
        evaluated = probing.output(module, queries, keys, values, valid_lens)
        probing.call(module.train)
        probing.seed(forward_seed)
        trained = probing.output(module, queries, keys, values, valid_lens)
    return {"eval": evaluated, "train": trained}


def gradients(student, args, bias, seed, queries, keys, values, valid_lens, upstream, train_seed=None):
    """Gradients of ``(output * upstream).sum()`` in eval mode for every parameter and every input
    (None if none). With ``train_seed``, a forward and backward pass in training mode first (dropout
    active: what it does in place must not break backward), its gradients then cleared."""
    module = probing.build(student, CLASS, *args, seed=seed, train=False, kwargs={"bias": bias})
    inputs = {"queries": queries, "keys": keys, "values": values}
    if train_seed is not None:
        probing.train_then_clear(module, lambda: module(queries, keys, values, valid_lens), inputs, upstream, train_seed)
    return probing.gradients_through(module, lambda: module(queries, keys, values, valid_lens), inputs, upstream)
