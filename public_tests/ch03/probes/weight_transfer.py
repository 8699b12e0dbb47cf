"""Public probe for weight_transfer.py (runs in the sandbox: inputs only, no expected value).

It builds stand-ins with the layout of the book's two classes (three (d_in, d_out)
parameters; three bias-free Linear layers), so it does not depend on your other modules.
"""

import torch
from torch import nn

from grader.sandbox import probing

NAMES = ("W_query", "W_key", "W_value")


def stand_ins(seed, d_in, d_out):
    """A stand-in v1 and v2, seeded: v2's layers are drawn first, as a script would make them."""
    probing.seed(seed)
    v2, v1 = nn.Module(), nn.Module()
    for name in NAMES:
        setattr(v2, name, nn.Linear(d_in, d_out, bias=False))
    for name in NAMES:
        setattr(v1, name, nn.Parameter(torch.rand(d_in, d_out)))
    return v1, v2


def transfer(student, seed, d_in, d_out):
    """Copy the stand-in v2 weights into the stand-in v1; return both sets of matrices, and v1's before the copy."""
    v1, v2 = stand_ins(seed, d_in, d_out)
    given = {name: getattr(v2, name).weight.detach().clone() for name in NAMES}  # before the student's code runs
    before = {name: getattr(v1, name).detach().clone() for name in NAMES}
    probing.call(probing.part(student, "copy_v2_weights_into_v1", "function"), v1, v2)
    mine = {name: probing.attribute(v1, name) for name in NAMES}
    return {"v1": {name: value.detach().clone() if isinstance(value, torch.Tensor) else None for name, value in mine.items()},
            "v2": given, "v1_before": before}


def effects(student, seed, d_in, d_out):
    """What the copy leaves behind: what sa_v1's attributes are (nn.Parameters?) and its parameters'
    names, and sa_v2's parameters (names and weights) afterwards with those before."""
    v1, v2 = stand_ins(seed, d_in, d_out)
    v2_before = {name: getattr(v2, name).weight.detach().clone() for name in NAMES}
    probing.call(probing.part(student, "copy_v2_weights_into_v1", "function"), v1, v2)
    with probing.student_code():
        after = {name: getattr(v2, name, None) for name in NAMES}
        return {
            "v1_kinds": {name: type(getattr(v1, name, None)).__name__[:80] for name in NAMES},
            "v1_names": sorted(name for name, _ in v1.named_parameters()),
            "v2_names": sorted(name for name, _ in v2.named_parameters()),
            "v2_unchanged": {name: isinstance(getattr(after[name], "weight", None), torch.Tensor)
                             and tuple(after[name].weight.shape) == tuple(v2_before[name].shape)
                             and bool(torch.equal(after[name].weight.detach(), v2_before[name])) for name in NAMES},
        }
