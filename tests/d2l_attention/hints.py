"""Helpers shared by the d2l_attention tests (trusted side).

``same_seed`` builds a reference module the way the sandbox builds the student's
(``torch.manual_seed`` right before construction); ``check_gradients`` compares gradients;
``masked_weight_problem`` says what is visibly wrong with masked attention weights;
``worked_bleu`` writes out every factor of an expected BLEU.
"""

import math

import torch

from grader.suite.comparisons import close, graph_cut, require


def masked_weight_problem(weights, valid_lens: torch.Tensor | None, shape) -> str:
    """What is visibly wrong with attention weights given the valid lengths (a weight at a masked
    position, rows that do not sum to 1), or "": an observation, never a guessed cause."""
    if not isinstance(weights, torch.Tensor) or tuple(weights.shape) != tuple(shape) or not weights.is_floating_point():
        return ""
    batch, queries, keys = shape
    allowed = torch.ones(shape, dtype=torch.bool)
    if valid_lens is not None:
        lens = valid_lens.reshape(batch, -1)  # (batch, 1) or (batch, queries)
        allowed = torch.arange(keys)[None, None, :] < lens[:, :, None].expand(batch, queries, 1)
    w = weights.detach().double()
    leaked = ~allowed & (w.abs() > 1e-6)
    if leaked.any():
        where = tuple(leaked.nonzero()[0].tolist())
        return f"weight {w[where].item():.4f} at masked position {list(where)}: positions at or beyond the valid length must get weight 0"
    sums = w.sum(dim=-1)
    if not torch.allclose(sums, torch.ones_like(sums), atol=1e-4):
        return "the rows do not sum to 1"
    return ""


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
    absent = [name for name in expected if not isinstance(probed[name], torch.Tensor)]
    for name, grad in expected.items():
        require(probed[name] is not None, f"no gradient reached {name}", what=what,
                hint="Compute with differentiable tensor operations: no .detach(), .data, .item() or torch.no_grad() in forward."
                if graph_cut(probed, expected, absent) else "")
        close(probed[name], grad, what=f"{what}: gradient of {name}")


GRAMS = {1: "unigram", 2: "bigram", 3: "trigram"}


def worked_bleu(len_pred: int, len_label: int, matches: list[tuple[int, int]]) -> tuple[str, float]:
    """Every factor of an expected BLEU, worked out by hand, and their product: the brevity penalty
    and each clipped precision ``p_n = matches / n-grams of the prediction`` (``matches[n - 1]``).
    A student compares whichever factor they got wrong; the text never says which one it is."""
    penalty = math.exp(min(0, 1 - len_label / len_pred))
    powered = [(num / den) ** (0.5 ** n) for n, (num, den) in enumerate(matches, 1)]
    value = math.prod([penalty, *powered])
    formula = " * ".join(["penalty", *(f"p_{n} ** (1/{2 ** n})" for n in range(1, len(matches) + 1))])
    clipped = "; a label n-gram matches at most as often as it occurs there"
    precisions = [f"p_{n} = {num}/{den} ({num} of the prediction's {den} {GRAMS.get(n, f'{n}-gram')}"
                  f"{'s' if den != 1 else ''} found in the label{clipped if n == 1 else ''})"
                  for n, (num, den) in enumerate(matches, 1)]
    text = (f"BLEU = {formula}, with penalty = exp(min(0, 1 - {len_label}/{len_pred})) = {penalty:.4f} (label of "
            f"{len_label} tokens, prediction of {len_pred}); {'; '.join(precisions)}: BLEU = "
            f"{' * '.join(f'{f:.4f}' for f in [penalty, *powered])} = {value:.4f}.")
    return text, value
