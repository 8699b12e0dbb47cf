"""Public tests for section 3.4.2: SelfAttention_v2 reproduces the book (seed 789), then other sizes,
seeds and qkv_bias=True (the reference's results, from catalog.json)."""

import pytest

from book_values import INPUTS, V2_SEED_789, random_inputs
from grader.suite.public_reference import same
from grader.suite.comparisons import close

X_OTHER = random_inputs(45, 5, 4)


@pytest.mark.points(1)
@pytest.mark.probe("output", seed=789, d_in=3, d_out=2, x=INPUTS)
def test_forward_textbook(probed):
    close(probed, V2_SEED_789, what="torch.manual_seed(789); SelfAttention_v2(3, 2)(inputs)")


@pytest.mark.points(1)
@pytest.mark.probe("output", seed=3, d_in=4, d_out=3, x=X_OTHER, qkv_bias=True)
def test_forward_with_bias(probed, reference):
    same(probed, reference, what="torch.manual_seed(3); SelfAttention_v2(4, 3, qkv_bias=True)(x), x of shape (5, 4)")


@pytest.mark.points(1)
@pytest.mark.probe("parameters", seed=789, d_in=3, d_out=2)
def test_parameters_in_the_book_order(probed, reference):
    same(probed, reference, what="torch.manual_seed(789); SelfAttention_v2(3, 2): the weights of its layers "
                                 "(created in the order W_query, W_key, W_value)")
