"""Public tests for the scoring functions: the book's example with equal keys."""

import pytest
import torch

from book_values import ADDITIVE_QUERIES, DOT_QUERIES, KEYS, POOLED, SCORING_VALID_LENS, VALUES
from grader.suite.comparisons import close


@pytest.mark.points(1)
@pytest.mark.probe("pool", cls="AdditiveAttention", init={"key_size": 2, "query_size": 20, "num_hiddens": 8, "dropout": 0.1},
                   queries=ADDITIVE_QUERIES, keys=KEYS, values=VALUES, valid_lens=SCORING_VALID_LENS)
def test_additive_attention_book_example(probed):
    close(probed["output"], POOLED, what="AdditiveAttention(2, 20, 8, 0.1) in eval mode on the book's example")
    close(probed["weights"][0, 0, 2:], torch.zeros(8), what="attention_weights beyond valid length 2")


@pytest.mark.points(1)
@pytest.mark.probe("pool", cls="DotProductAttention", init={"dropout": 0.5},
                   queries=DOT_QUERIES, keys=KEYS, values=VALUES, valid_lens=SCORING_VALID_LENS)
def test_dot_product_attention_book_example(probed):
    close(probed["output"], POOLED, what="DotProductAttention(0.5) in eval mode on the book's example")
