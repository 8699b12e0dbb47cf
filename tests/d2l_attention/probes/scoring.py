"""Probes for scoring.py. They run INSIDE the sandbox, next to the student's code: inputs
only, never an expected value. Every probe builds its scorer right after
``torch.manual_seed(seed)``, as the trusted tests build the reference.
"""

import torch

from grader.sandbox import probing
from grader.sandbox.probing import ProbeError

SCORERS = ("AdditiveAttention", "DotProductAttention")


def build(student, scorer: str, args: list, seed: int, train: bool = False):
    """``student.<scorer>(*args)`` after seeding torch, in train or eval mode."""
    if scorer not in SCORERS:
        raise ProbeError(f"unknown scorer {scorer!r}")
    return probing.build(student, scorer, *args, seed=seed, train=train)


def run(module, queries, keys, values, valid_lens):
    """One forward call; without valid lengths, rely on the default ``valid_lens=None``."""
    if valid_lens is None:
        return module(queries, keys, values)
    return module(queries, keys, values, valid_lens)


def attend(student, scorer, args, seed, queries, keys, values, valid_lens=None, train=False, before=None):
    """The output of one forward call and the attention weights kept on the module. With
    ``before`` (queries, keys, values, valid_lens), a first call on those inputs comes before: the
    weights kept must then be those of the last call. ``changed``: the inputs the call changed (the
    caller's tensors)."""
    module = build(student, scorer, args, seed, train)
    if before is not None:
        run(module, *before)
    given = {"queries": queries.clone(), "keys": keys.clone(), "values": values.clone()}
    with probing.recorded_if_sent(module) as recorder:
        output = run(module, queries, keys, values, valid_lens)
    weights = probing.tensor_or_none(probing.attribute(module, "attention_weights"))
    return probing.with_steps({"output": output, "weights": weights,
                               "changed": changed(given, queries=queries, keys=keys, values=values)}, recorder)


def changed(given: dict, **after) -> list:
    """The names of the inputs a call changed (``given``: copies made before it)."""
    return [name for name, tensor in after.items() if not torch.equal(tensor, given[name])]


def gradients(student, scorer, args, seed, queries, keys, values, valid_lens, upstream, train_seed=None):
    """Gradients of ``(output * upstream).sum()`` in eval mode for every parameter and every input
    (None if none). With ``train_seed``, a forward and backward pass in training mode first (dropout
    active: what it does in place must not break backward), its gradients then cleared."""
    module = build(student, scorer, args, seed)
    inputs = {"queries": queries, "keys": keys, "values": values}
    if train_seed is not None:
        probing.train_then_clear(module, lambda: run(module, queries, keys, values, valid_lens), inputs, upstream,
                                 train_seed)
    return probing.gradients_through(module, lambda: run(module, queries, keys, values, valid_lens), inputs, upstream)
