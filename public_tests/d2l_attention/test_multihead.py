"""Public tests for multi-head attention: the reshaping helpers and the book's shapes.

Here MultiHeadAttention runs on YOUR DotProductAttention from scoring.py; on GitHub it is
graded with the reference one, so a mistake in scoring.py costs points only once.
"""

import pytest

from book_values import MHA_KEYS, MHA_QUERIES, MHA_VALID_LENS
from grader.suite.comparisons import close, require


@pytest.mark.points(1)
@pytest.mark.probe("round_trip", x=MHA_QUERIES, num_heads=5)
def test_transpose_round_trip(probed):
    split = probed["split"]
    require(getattr(split, "shape", None) == (10, 4, 20), "transpose_qkv(X of shape (2, 4, 100), 5) should have shape (10, 4, 20)",
            what="transpose_qkv(X, 5)", expected="shape (10, 4, 20)", actual=str(getattr(split, "shape", type(split))))
    close(probed["back"], MHA_QUERIES, what="transpose_output(transpose_qkv(X, 5), 5) (should give X back)")


@pytest.mark.points(1)
@pytest.mark.probe("output", queries=MHA_QUERIES, keys=MHA_KEYS, valid_lens=MHA_VALID_LENS)
def test_multi_head_attention_book_shape(probed):
    require(getattr(probed, "shape", None) == (2, 4, 100), "the output should have shape (2, 4, 100)",
            what="MultiHeadAttention(100, 100, 100, 100, 5, 0.5) in eval mode", expected="shape (2, 4, 100)",
            actual=str(getattr(probed, "shape", type(probed))))
