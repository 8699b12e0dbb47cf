"""Public probe for scoring.py (runs in the sandbox: inputs only, no expected value)."""

import torch

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


def attend(student, cls, init, seed, queries, keys, values, valid_lens=None, train=False, before=None):
    """``cls(**init)`` built right after ``torch.manual_seed(seed)``, in eval (or training) mode: its output
    and the attention weights it keeps. Without ``valid_lens`` the call leaves it out (its default, None).
    With ``before`` (queries, keys, values, valid_lens) a first call comes before: the weights kept must
    be the last call's. In training mode the forward call comes right after ``torch.manual_seed(seed + 1)``.
    ``changed``: the inputs the call changed (the caller's tensors)."""
    module = probing.build(student, cls, seed=seed, train=train, kwargs=init)

    def run(q, k, v, lens):
        return probing.call(module, q, k, v) if lens is None else probing.call(module, q, k, v, lens)

    if before is not None:
        run(*before)
    if train:
        probing.seed(seed + 1)
    given = {"queries": queries.clone(), "keys": keys.clone(), "values": values.clone()}
    with probing.recorded_if_sent(module) as recorder:
        output = module(queries, keys, values) if valid_lens is None else module(queries, keys, values, valid_lens)
    weights = probing.attribute(module, "attention_weights")
    if weights is None:
        raise ProbeError(f"{cls} should keep its attention weights in self.attention_weights")
    changed = [name for name, tensor in (("queries", queries), ("keys", keys), ("values", values))
               if not torch.equal(tensor, given[name])]
    return probing.with_steps({"output": output, "weights": weights, "changed": changed}, recorder)
