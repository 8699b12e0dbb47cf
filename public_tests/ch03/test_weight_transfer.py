"""Public test for Exercise 3.1: each v1 matrix receives the transposed v2 weight."""

import pytest
import torch

from grader.suite.comparisons import close, require

NAMES = ("W_query", "W_key", "W_value")
ATOL = 1e-6  # float32 rounding of an equivalent copy, far below any real mistake
NOT_TRANSPOSED_HINT = ("The weights are not transposed: nn.Linear stores its weight as (d_out, d_in) and computes "
                       "x @ weight.T, while v1 computes x @ W with W of shape (d_in, d_out). Copy weight.T.")
RESHAPED_HINT = ("reshape (and view) keep the order of the values in memory: they give the right shape but do not "
                 "transpose. Copy weight.T.")
OTHER_LAYER_HINT = "Give each v1 matrix the weight of the v2 layer of the same name: sa_v1.W_query from sa_v2.W_query, ..."


def what_it_holds(mine, weights: dict, name: str) -> tuple[str, str]:
    """When ``sa_v1.<name>`` after the copy is not ``weights[name].T`` but exactly (up to ``ATOL``) one of
    the v2 weights arranged otherwise (another layer's, transposed; or reshaped, or as it is, instead of
    transposed), what it holds and the matching hint; else ``("", "")``."""
    expected = weights[name].T
    if (not isinstance(mine, torch.Tensor) or mine.shape != expected.shape or not mine.is_floating_point()
            or torch.allclose(mine.double(), expected.double(), atol=ATOL, rtol=0)):
        return "", ""
    for source in (name, *(n for n in NAMES if n != name)):
        weight = weights[source]
        other = "" if source == name else f" ({source}'s weights, not {name}'s)"
        arrangements = [] if source == name else [(weight.T, f"sa_v2.{source}.weight.T", OTHER_LAYER_HINT)]
        if weight.shape == mine.shape:
            arrangements.append((weight, f"sa_v2.{source}.weight itself, not transposed", NOT_TRANSPOSED_HINT))
        else:
            arrangements.append((weight.reshape(mine.shape), f"sa_v2.{source}.weight reshaped to "
                                 f"{tuple(mine.shape)}, not transposed", RESHAPED_HINT))
        for value, held, hint in arrangements:
            if torch.allclose(mine.double(), value.double(), atol=ATOL, rtol=0):
                return f"after the copy sa_v1.{name} holds {held}{other}", hint
    return "", ""


@pytest.mark.points(1)
@pytest.mark.probe("transfer", seed=123, d_in=3, d_out=2)
def test_copies_transposed_weights(probed):
    what = "copy_v2_weights_into_v1(sa_v1, sa_v2)"
    for name in NAMES:
        mine, weight = probed["v1"][name], probed["v2"][name]
        require(mine is not None, f"after the copy, sa_v1.{name} is not a tensor any more",
                what=what, hint="Keep the v1 attributes; replace their values.")
        d_out, d_in = weight.shape
        require(not (tuple(mine.shape) == (d_out, d_in) and d_in != d_out),
                f"sa_v1.{name} has shape ({d_out}, {d_in}) after the copy, expected ({d_in}, {d_out})", what=what,
                hint=NOT_TRANSPOSED_HINT, expected=f"({d_in}, {d_out})", actual=f"({d_out}, {d_in})")
        held, hint = what_it_holds(mine, probed["v2"], name)
        require(not held, held, what=what, hint=hint)
        close(mine, weight.T, atol=ATOL, what=f"sa_v1.{name} after the copy")


@pytest.mark.points(1)
@pytest.mark.probe("effects", seed=5, d_in=4, d_out=3)
def test_only_v1_changes(probed):
    # The rule of the graded checks: sa_v1 keeps three nn.Parameters of these names (the textbook's own
    # solution assigns new nn.Parameter objects; replacing .data keeps the old ones: both are right).
    what = "copy_v2_weights_into_v1(sa_v1, sa_v2) with d_in=4, d_out=3"
    for name in NAMES:
        kind = probed["v1_kinds"][name]
        require(kind == "Parameter", f"after the copy, sa_v1.{name} is a {kind}, not an nn.Parameter", what=what,
                hint=f"Keep sa_v1.{name} an nn.Parameter: replace its values (sa_v1.{name}.data = ...), not the attribute.")
    require(probed["v1_names"] == sorted(NAMES), f"after the copy, sa_v1's parameters are {probed['v1_names']}",
            what=what, hint="sa_v1 must keep exactly its three parameters W_query, W_key, W_value.")
    require(probed["v2_names"] == sorted(f"{name}.weight" for name in NAMES),
            f"after the copy, sa_v2's parameters are {probed['v2_names']}", what=what,
            hint="Leave sa_v2 as it is: only sa_v1 changes.")
    for name in NAMES:
        require(probed["v2_unchanged"][name] is True, f"the copy changed sa_v2.{name}.weight", what=what,
                hint="Leave sa_v2 as it is: transpose a copy of its weight (weight.T), never the weight itself.")
