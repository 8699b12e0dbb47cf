"""Public test for section 3.4.2: SelfAttention_v2 reproduces the book (seed 789)."""

import pytest

from book_values import INPUTS, V2_SEED_789
from grader.suite.comparisons import close


@pytest.mark.points(1)
@pytest.mark.probe("output", seed=789, d_in=3, d_out=2, x=INPUTS)
def test_forward_textbook(probed):
    close(probed, V2_SEED_789, what="torch.manual_seed(789); SelfAttention_v2(3, 2)(inputs)")
