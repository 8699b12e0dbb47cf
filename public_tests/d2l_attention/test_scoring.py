"""Public tests for the scoring functions: the book's example with equal keys, then keys that differ,
other sizes, 2-D valid_lens, no valid_lens and training mode (the reference's results, from catalog.json)."""

import pytest
import torch

from book_values import ADDITIVE_QUERIES, DOT_QUERIES, KEYS, POOLED, SCORING_VALID_LENS, VALUES, generated
from grader.suite.public_reference import same
from grader.suite.comparisons import close, require
from grader.suite.exact import WEIGHTS_AFTER_DROPOUT, check_inputs_unchanged, is_dropout_of


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


# Inputs no book printed (keys that differ, queries and keys of other sizes); the expected results are
# the reference's (catalog.json).
Q5, K3, V4 = generated(21, 2, 4, 5, normal=True), generated(22, 2, 6, 3, normal=True), generated(23, 2, 6, 4)
Q3 = generated(24, 2, 4, 3, normal=True)
LENS = torch.tensor([3, 6])
LENS_2D = torch.tensor([[1, 2, 4, 6], [6, 3, 2, 5]])
ADDITIVE = {"key_size": 3, "query_size": 5, "num_hiddens": 7, "dropout": 0.2}

@pytest.mark.points(1)
@pytest.mark.probe("attend", cls="AdditiveAttention", init=ADDITIVE, seed=1, queries=Q5, keys=K3, values=V4,
                   valid_lens=LENS)
def test_additive_attention_other_inputs(probed, reference):
    check_inputs_unchanged(probed, "AdditiveAttention", "AdditiveAttention")
    same(probed, reference, grid=True, what="torch.manual_seed(1); AdditiveAttention(3, 5, 7, 0.2) in eval mode on "
                                            "queries (2, 4, 5), keys (2, 6, 3), values (2, 6, 4), valid_lens [3, 6]: "
                                            "the output and attention_weights")


@pytest.mark.points(1)
@pytest.mark.probe("attend", cls="DotProductAttention", init={"dropout": 0.5}, seed=2, queries=Q3, keys=K3, values=V4,
                   valid_lens=LENS_2D)
def test_dot_product_attention_other_inputs(probed, reference):
    check_inputs_unchanged(probed, "DotProductAttention", "DotProductAttention")
    same(probed, reference, grid=True, what="DotProductAttention(0.5) in eval mode on queries (2, 4, 3), keys (2, 6, 3), "
                                            "values (2, 6, 4), valid_lens [[1, 2, 4, 6], [6, 3, 2, 5]] (one per "
                                            "query): the output and attention_weights")


@pytest.mark.points(1)
@pytest.mark.probe("attend", cls="DotProductAttention", init={"dropout": 0.5}, seed=3, queries=Q3, keys=K3, values=V4,
                   before=[Q3[:, :2], K3[:, :5], V4[:, :5], LENS])
def test_dot_product_attention_without_valid_lens(probed, reference):
    check_inputs_unchanged(probed, "DotProductAttention", "DotProductAttention")
    same(probed, reference, grid=True, what="DotProductAttention(0.5) in eval mode, a first call on 2 queries and 5 "
                                            "keys, then queries (2, 4, 3), keys (2, 6, 3), values (2, 6, 4) without "
                                            "valid_lens: the output and attention_weights (the last call's)")


def check_weights_before_dropout(probed, reference, scorer, p):
    """In training mode self.attention_weights are the weights before dropout: weights that are the
    reference's after dropout (each 0 or scaled by 1 / (1 - p)) are said so."""
    require(not is_dropout_of(probed["weights"], reference["weights"], p),
            f"{scorer}.attention_weights in training mode are the weights after dropout (each 0 or scaled by 1 / (1 - p))",
            what=f"{scorer}.attention_weights in training mode (kept before dropout)", proven=True,
            hint=WEIGHTS_AFTER_DROPOUT)


@pytest.mark.points(1)
@pytest.mark.probe("attend", cls="DotProductAttention", init={"dropout": 0.5}, seed=4, queries=Q3, keys=K3, values=V4,
                   valid_lens=LENS, train=True)
def test_dot_product_attention_training_mode(probed, reference):
    check_inputs_unchanged(probed, "DotProductAttention", "DotProductAttention")
    check_weights_before_dropout(probed, reference, "DotProductAttention", 0.5)
    same(probed, reference, grid=True, what="DotProductAttention(0.5) in training mode, right after "
                                            "torch.manual_seed(5): the output (dropout acts on the attention "
                                            "weights) and attention_weights (kept before dropout)")


@pytest.mark.points(1)
@pytest.mark.probe("attend", cls="AdditiveAttention", init=ADDITIVE, seed=6, queries=Q5, keys=K3, values=V4,
                   valid_lens=LENS, train=True)
def test_additive_attention_training_mode(probed, reference):
    check_inputs_unchanged(probed, "AdditiveAttention", "AdditiveAttention")
    check_weights_before_dropout(probed, reference, "AdditiveAttention", ADDITIVE["dropout"])
    same(probed, reference, grid=True, what="torch.manual_seed(6); AdditiveAttention(3, 5, 7, 0.2) in training mode, "
                                            "forward right after torch.manual_seed(7): the output and "
                                            "attention_weights (kept before dropout)")
