"""Helpers shared by the d2l_attention tests (trusted side).

``same_seed`` builds a reference module the way the sandbox builds the student's
(``torch.manual_seed`` right before construction); ``check_gradients`` compares gradients.
"""

import torch

from grader.checks import close, require


def same_seed(seed: int, cls, *args, **kwargs):
    """``cls(*args, **kwargs)`` built right after ``torch.manual_seed(seed)``, in eval mode."""
    torch.manual_seed(seed)
    module = cls(*args, **kwargs)
    module.eval()
    return module


def check_gradients(probed, expected: dict, what: str):
    """Every parameter and input got the reference's gradient."""
    require(set(probed) == set(expected), "your module's parameters are not the ones the docstring names",
            what=what, expected=", ".join(sorted(expected)), actual=", ".join(sorted(probed)),
            hint="Create exactly the layers the docstring names, with the bias the docstring gives.")
    for name, grad in expected.items():
        require(probed[name] is not None, f"no gradient reached {name}", what=what,
                hint="Compute with differentiable tensor operations: no .detach(), .data, .item() or torch.no_grad() in forward.")
        close(probed[name], grad, what=f"{what}: gradient of {name}")
