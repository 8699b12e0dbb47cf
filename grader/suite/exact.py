"""Exact relations the checks state, shared by the hidden suites and the public ones (this package
ships with the template): said only when they hold on every value, within a tolerance far below any
real mistake; otherwise the check keeps its plain message.
"""

from __future__ import annotations

import math

import torch

from grader.diagnosis.tolerance import ATOL
from grader.suite.comparisons import require

NOT_TRANSPOSED_HINT = ("The weights are not transposed: nn.Linear stores its weight as (d_out, d_in) and computes "
                       "x @ weight.T, while v1 computes x @ W with W of shape (d_in, d_out). Copy weight.T.")
RESHAPED_HINT = ("reshape (and view) keep the order of the values in memory: they give the right shape but do not "
                 "transpose. Copy weight.T.")
OTHER_LAYER_HINT = "Give each v1 matrix the weight of the v2 layer of the same name: sa_v1.W_query from sa_v2.W_query, ..."
COPY_ATOL = 1e-6  # float32 rounding of an equivalent copy, far below any real mistake
NOT_COPIED_HINT = ("Copy each of the three matrices: sa_v1.W_query, sa_v1.W_key and sa_v1.W_value each receive the "
                   "transposed weight of the v2 layer of the same name (sa_v1.W_query.data = sa_v2.W_query.weight.T, ...).")


def what_it_holds(mine, expected: torch.Tensor, weights: dict, name: str, before=None) -> tuple[str, str]:
    """When ``sa_v1.<name>`` after the copy is not ``expected`` (sa_v2's weight of that name,
    transposed) but exactly one of the v2 ``weights`` arranged otherwise (another layer's,
    transposed; or reshaped, or as it is, instead of transposed), or exactly what it held ``before``
    the copy (the copy never wrote it): what it holds and the matching hint; else ``("", "")``."""
    if (not isinstance(mine, torch.Tensor) or mine.shape != expected.shape or not mine.is_floating_point()
            or torch.allclose(mine.double(), expected.double(), atol=COPY_ATOL, rtol=0)):
        return "", ""
    for source in (name, *(n for n in weights if n != name)):
        weight = weights[source]
        other = "" if source == name else f" ({source}'s weights, not {name}'s)"
        arrangements = [] if source == name else [(weight.T, f"sa_v2.{source}.weight.T", OTHER_LAYER_HINT)]
        if weight.shape == mine.shape:
            arrangements.append((weight, f"sa_v2.{source}.weight itself, not transposed", NOT_TRANSPOSED_HINT))
        elif weight.numel() == mine.numel():
            arrangements.append((weight.reshape(mine.shape), f"sa_v2.{source}.weight reshaped to "
                                 f"{tuple(mine.shape)}, not transposed", RESHAPED_HINT))
        for value, held, hint in arrangements:
            if value.shape == mine.shape and torch.allclose(mine.double(), value.double(), atol=COPY_ATOL, rtol=0):
                return f"after the copy sa_v1.{name} holds {held}{other}", hint
    if (isinstance(before, torch.Tensor) and before.shape == mine.shape
            and torch.allclose(mine.double(), before.double(), atol=COPY_ATOL, rtol=0)):
        return (f"after the copy sa_v1.{name} still holds the values it had before the copy: the copy never "
                f"changed it", NOT_COPIED_HINT)
    return "", ""


def dropout_factor(weights: torch.Tensor, after: torch.Tensor, p: float) -> float | None:
    """The factor s when every weight after dropout is 0 or the weight times one and the same s, and s
    is not 1 / (1 - p) (dropout then ran with the rate 1 - 1 / s); else None: no exact relation."""
    kept = (weights.abs() > 1e-6) & (after.abs() > 1e-6)
    if not bool(kept.any()):
        return None
    factor = float((after[kept] / weights[kept]).median())
    if not factor > 1 or abs(factor - 1 / (1 - p)) < ATOL:
        return None
    scaled, zero = (after - weights * factor).abs() < ATOL * factor, after.abs() < 1e-6
    return factor if bool((scaled | zero).all()) else None


# What is_dropout_of proves, said alike on both sides (the hidden suites and the public checks).
DROPOUT_IN_EVAL = ("Dropout stays on in eval mode: apply dropout only while training, through the nn.Dropout "
                   "module self.dropout (model.eval() switches it off); F.dropout(..., training=True) or a fixed "
                   "dropout_p is on in eval mode too.")
WEIGHTS_AFTER_DROPOUT = ("self.attention_weights holds the weights after dropout: keep them as masked_softmax gave them "
                         "(store them before dropout), and apply self.dropout only where they multiply the values.")


def is_dropout_of(actual, expected: torch.Tensor, p: float) -> bool:
    """Whether ``actual`` is ``expected`` after dropout of rate ``p``: not equal to it, every value 0
    or scaled by exactly 1 / (1 - p), and some dropped (an exact relation: nothing but dropout does this)."""
    if not isinstance(actual, torch.Tensor) or actual.shape != expected.shape or not actual.is_floating_point():
        return False
    mine, theirs = actual.detach().double(), expected.detach().double()
    if torch.allclose(mine, theirs, atol=1e-5):
        return False
    zero, scaled = mine.abs() < 1e-6, (mine - theirs / (1 - p)).abs() < ATOL
    return bool((zero | scaled).all()) and bool((zero & (theirs.abs() > 1e-6)).any())


def require_same_names(shapes: dict, reference: list, what: str) -> None:
    """The parameters' names are the reference's (``reference``: ``[name, shape]`` pairs): else say
    which are missing and which are not expected."""
    if not shapes:
        return
    expected = [name for name, _ in reference]
    missing = [name for name in expected if name not in shapes]
    extra = [str(name) for name in shapes if name not in expected]
    said = "; ".join(text for text in (missing and "no " + ", ".join(missing),
                                       extra and "unexpected " + ", ".join(extra)) if text)
    require(not said, f"{what}: {said}"[:300], what=what)


IN_PLACE_HINT = ("Compute new tensors (scores = torch.bmm(queries, keys.transpose(1, 2)) / math.sqrt(d)), not in place "
                 "(queries /= ..., div_, masked_fill_ on an argument), which changes the caller's tensors.")


def check_inputs_unchanged(probed, scorer: str, what: str) -> None:
    """A scorer's call left the queries, keys and values it was given as they were (the probe's
    ``changed``: the names of the arguments whose values differ after the call), in both suites alike."""
    changed = probed.get("changed") if isinstance(probed, dict) else None
    require(changed == [], f"{scorer}.forward changed the {', '.join(map(str, changed or []))} it was given "
            "(the caller's tensors)", what=f"{what}: the inputs after the call", hint=IN_PLACE_HINT)


SWAPPED_HEAD_ARGUMENTS = ("CausalAttention takes (d_in, d_out, context_length, dropout, qkv_bias), in that order: "
                          "pass dropout fourth and qkv_bias fifth, or by keyword (dropout=dropout, qkv_bias=qkv_bias).")


def check_head_arguments_not_swapped(rates, biases, dropout: float, qkv_bias: bool, what: str) -> None:
    """Fails, saying so, when every head's dropout rate is the wrapper's ``qkv_bias`` as a number and
    every head has a qkv bias exactly when the wrapper's ``dropout`` is nonzero, where the right
    settings would show otherwise (two facts at once: the two arguments reached the heads swapped)."""
    if not isinstance(rates, list) or not isinstance(biases, list) or not rates or len(rates) != len(biases):
        return
    if float(qkv_bias) == dropout and bool(dropout) == qkv_bias:
        return  # the swap would change nothing here
    swapped = all(r == float(qkv_bias) for r in rates) and all(b is bool(dropout) for b in biases)
    require(not swapped, f"the heads' dropout rates are {rates} (the qkv_bias given, {qkv_bias}, as a number) and "
            f"{'each has' if bool(dropout) else 'none has'} a qkv bias (as the dropout given, {dropout}, "
            f"{'is nonzero' if bool(dropout) else 'is zero'}): the two arguments reach the heads swapped",
            what=what, hint=SWAPPED_HEAD_ARGUMENTS)


def rotation(delta: int, j: int, num_hiddens: int) -> torch.Tensor:
    """The 2 x 2 matrix that maps ``(P[i, 2j], P[i, 2j+1])`` of the sinusoidal table to
    ``(P[i+delta, 2j], P[i+delta, 2j+1])``: the rotation by ``delta * omega_j``."""
    angle = delta / 10000 ** (2 * j / num_hiddens)
    return torch.tensor([[math.cos(angle), math.sin(angle)], [-math.sin(angle), math.cos(angle)]], dtype=torch.float64)


def positions_are_rotations(table: torch.Tensor, num_hiddens: int, deltas=(1, 5, 11)) -> None:
    """Every pair of columns ``2j, 2j+1`` of a position table ``(positions, num_hiddens)`` shifted by
    ``delta`` rows is the same rotation by ``delta * omega_j`` of the rows before, for every position.
    A failure says which pair and offset, and which of two exact relations broke: the rows are a
    fixed map of each other but not that rotation (the frequency, or sine and cosine swapped), or
    no fixed map at all (the two columns are not the sine and cosine of one angle)."""
    P = table.double()
    bad = (~torch.isfinite(P)).nonzero().tolist()  # never handed to lstsq, which fails on them
    require(not bad, f"the table holds entries that are not finite (nan or inf), first at {bad[0] if bad else []}",
            what="every entry of the position table", expected="finite numbers (sines and cosines)", actual="nan or inf")
    for delta in deltas:
        for j in range(num_hiddens // 2):
            now, later = P[:-delta, 2 * j: 2 * j + 2], P[delta:, 2 * j: 2 * j + 2]
            rotated = now @ rotation(delta, j, num_hiddens).T
            if torch.allclose(later, rotated, atol=ATOL):
                continue
            fit = torch.linalg.lstsq(now, later).solution.T  # the best fixed 2x2 map, if there is one
            if torch.allclose(now @ fit.T, later, atol=ATOL):
                why = ("P[i + delta] is a fixed map of P[i], but not the rotation by delta * omega_j: check the frequency "
                       "omega_j = 1 / 10000^(2j/d) and that column 2j holds the sine, column 2j+1 the cosine.")
            else:
                why = ("P[i + delta] is not the same linear map of P[i] for every i: columns 2j and 2j+1 must be the sine "
                       "and cosine of the same angle i * omega_j.")
            require(False, f"columns {2 * j}, {2 * j + 1} shifted by delta = {delta} are not a fixed rotation", hint=why,
                    what="for every frequency pair j and offset delta: (P[i+delta, 2j], P[i+delta, 2j+1]) = "
                         "R(delta * omega_j) (P[i, 2j], P[i, 2j+1]), the same rotation for every position i",
                    expected=f"R = {[[round(x, 4) for x in row] for row in rotation(delta, j, num_hiddens).tolist()]}",
                    actual=f"best fixed map {[[round(x, 4) for x in row] for row in fit.tolist()]}")
