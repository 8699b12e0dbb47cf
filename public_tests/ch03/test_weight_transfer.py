"""Public test for Exercise 3.1: each v1 matrix receives the transposed v2 weight."""

import pytest

from grader.suite.comparisons import close, require

NAMES = ("W_query", "W_key", "W_value")


@pytest.mark.points(1)
@pytest.mark.probe("transfer", seed=123, d_in=3, d_out=2)
def test_copies_transposed_weights(probed):
    for name in NAMES:
        mine = probed["v1"][name]
        require(mine is not None, f"after the copy, sa_v1.{name} is not a tensor any more",
                what="copy_v2_weights_into_v1(sa_v1, sa_v2)", hint="Keep the v1 attributes; replace their values.")
        close(mine, probed["v2"][name].T, atol=1e-6, what=f"sa_v1.{name} after the copy")
