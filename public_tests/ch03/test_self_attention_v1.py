"""Public tests for section 3.4.1-3.4.2: SelfAttention_v1 reproduces the book (seed 123), then other
sizes and seeds (the reference's results, from catalog.json)."""

import pytest

from book_values import INPUTS, V1_SEED_123, random_inputs
from grader.suite.public_reference import same
from grader.suite.comparisons import close

X_OTHER = random_inputs(44, 5, 4)


@pytest.mark.points(1)
@pytest.mark.probe("output", seed=123, d_in=3, d_out=2, x=INPUTS)
def test_forward_textbook(probed):
    close(probed, V1_SEED_123, what="torch.manual_seed(123); SelfAttention_v1(3, 2)(inputs)")


@pytest.mark.points(1)
@pytest.mark.probe("output", seed=5, d_in=4, d_out=3, x=X_OTHER)
def test_forward_other_sizes(probed, reference):
    same(probed, reference, what="torch.manual_seed(5); SelfAttention_v1(4, 3)(x), x of shape (5, 4)")


@pytest.mark.points(1)
@pytest.mark.probe("parameters", seed=123, d_in=3, d_out=2)
def test_parameters_in_the_book_order(probed, reference):
    same(probed, reference, what="torch.manual_seed(123); SelfAttention_v1(3, 2): its matrices "
                                 "(created in the order W_query, W_key, W_value)")
