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


@pytest.mark.points(1)
@pytest.mark.probe("effects", seed=5, d_in=4, d_out=3)
def test_only_v1_changes(probed):
    what = "copy_v2_weights_into_v1(sa_v1, sa_v2) with d_in=4, d_out=3"
    for name in NAMES:
        require(probed["v1_kept"][name] is True, f"after the copy, sa_v1.{name} is another object than before",
                what=what, hint=f"Keep sa_v1.{name} itself (it is the module's nn.Parameter): replace its values "
                                f"(sa_v1.{name}.data = ...), not the attribute.")
    require(probed["v2_names"] == sorted(f"{name}.weight" for name in NAMES),
            f"after the copy, sa_v2's parameters are {probed['v2_names']}", what=what,
            hint="Leave sa_v2 as it is: only sa_v1 changes.")
    for name in NAMES:
        require(probed["v2_unchanged"][name] is True, f"the copy changed sa_v2.{name}.weight", what=what,
                hint="Leave sa_v2 as it is: transpose a copy of its weight (weight.T), never the weight itself.")
