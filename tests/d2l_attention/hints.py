"""Feedback helpers shared by the d2l_attention tests (trusted side).

``masked_weight_hints`` looks at attention weights alone, knowing which key positions the
valid lengths allow, and names what is wrong; ``same_seed`` builds a reference module the
way the sandbox builds the student's (``torch.manual_seed`` right before construction).
"""

import torch

from grader.checks import attention_weight_hints, close, require


def valid_mask(valid_lens: torch.Tensor | None, shape) -> torch.Tensor:
    """True where a key may be attended to, for weights of ``shape`` (batch, queries, keys)."""
    batch, queries, keys = shape
    if valid_lens is None:
        return torch.ones(shape, dtype=torch.bool)
    lens = valid_lens.reshape(batch, -1)  # (batch, 1) or (batch, queries)
    return torch.arange(keys)[None, None, :] < lens[:, :, None].expand(batch, queries, 1)


def masked_weight_hints(weights, valid_lens: torch.Tensor | None, shape) -> str:
    """The usual reason why attention weights with valid lengths are wrong, or ""."""
    if not isinstance(weights, torch.Tensor) or tuple(weights.shape) != tuple(shape):
        return ""
    mask = valid_mask(valid_lens, shape)
    w = weights.detach().double()
    if (~mask).any() and (w[~mask].abs() > 1e-6).any():
        where = tuple((~mask & (w.abs() > 1e-6)).nonzero()[0].tolist())
        return (f"Weight {w[where].item():.4f} at masked position {list(where)}: positions at or beyond the "
                "valid length must get weight 0. Replace their scores by -1e6 before softmax (masking with 0 "
                "is not enough: exp(0) is not small), and give every query of a batch item that item's length.")
    return attention_weight_hints(weights, causal=False)


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
        close(probed[name], grad, what=f"{what}: gradient of {name}",
              hint="The gradients differ from the reference's: if forward gives the right values (see the other "
                   "checks), look for a layer created in a different order or a value computed outside autograd.")
