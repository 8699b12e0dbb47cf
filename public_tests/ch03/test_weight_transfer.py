"""Public test for Exercise 3.1: each v1 matrix receives the transposed v2 weight."""

import pytest

from grader.suite.comparisons import close, require
from grader.suite.exact import NOT_TRANSPOSED_HINT, what_it_holds

NAMES = ("W_query", "W_key", "W_value")
ATOL = 1e-6  # float32 rounding of an equivalent copy, far below any real mistake


@pytest.mark.points(1)
@pytest.mark.probe("transfer", seed=123, d_in=3, d_out=2)
def test_copies_transposed_weights(probed):
    copied_transposed(probed, "copy_v2_weights_into_v1(sa_v1, sa_v2)")


@pytest.mark.points(1)
@pytest.mark.probe("transfer", seed=3, d_in=4, d_out=4)
def test_square_weights_transposed(probed):
    # With d_in == d_out an untransposed copy runs without error: only the values show the mistake.
    copied_transposed(probed, "copy_v2_weights_into_v1(sa_v1, sa_v2) with square weights, d_in = d_out = 4")


def copied_transposed(probed, what):
    """Each v1 matrix holds the transposed v2 weight."""
    for name in NAMES:
        mine, weight = probed["v1"][name], probed["v2"][name]
        require(mine is not None, f"after the copy, sa_v1.{name} is not a tensor any more",
                what=what, hint="Keep the v1 attributes; replace their values.")
        d_out, d_in = weight.shape
        require(not (tuple(mine.shape) == (d_out, d_in) and d_in != d_out),
                f"sa_v1.{name} has shape ({d_out}, {d_in}) after the copy, expected ({d_in}, {d_out})", what=what,
                hint=NOT_TRANSPOSED_HINT, expected=f"({d_in}, {d_out})", actual=f"({d_out}, {d_in})")
        held, hint = what_it_holds(mine, probed["v2"][name].T, probed["v2"], name, probed["v1_before"][name])
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
                hint=f"Leave sa_v2 as it is: the copy goes from sa_v2 into sa_v1 (sa_v1.{name}.data = "
                     f"sa_v2.{name}.weight.T), never into sa_v2.")
