"""Public test for section 3.4.1-3.4.2: SelfAttention_v1 reproduces the book (seed 123)."""

import pytest

from book_values import INPUTS, V1_SEED_123
from grader.suite.comparisons import close


@pytest.mark.points(1)
@pytest.mark.probe("output", seed=123, d_in=3, d_out=2, x=INPUTS)
def test_forward_textbook(probed):
    close(probed, V1_SEED_123, what="torch.manual_seed(123); SelfAttention_v1(3, 2)(inputs)")
