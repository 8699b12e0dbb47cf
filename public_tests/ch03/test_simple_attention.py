"""Public tests for section 3.3 (attention without trainable weights): the book's values."""

import pytest

from book_values import (
    ALL_CONTEXT, ALL_SCORES_ROW_1, ALL_WEIGHTS_ROW_1, CONTEXT_2, INPUTS, NAIVE_WEIGHTS_2, SCORES_2,
    SOFTMAX_WEIGHTS_2,
)
from grader.comparisons import close, require
from grader.plugin import calls


@pytest.mark.points(1)
@calls("attention_scores", INPUTS, INPUTS[1])
def test_attention_scores_textbook(probed):
    close(probed, SCORES_2, what="attention_scores(inputs, inputs[1])")


@pytest.mark.points(1)
@calls("normalize_naive", SCORES_2)
def test_normalize_naive_textbook(probed):
    close(probed, NAIVE_WEIGHTS_2, what="normalize_naive(scores)")


@pytest.mark.points(1)
@calls("softmax_naive", SCORES_2)
def test_softmax_naive_textbook(probed):
    close(probed, SOFTMAX_WEIGHTS_2, what="softmax_naive(scores)")


@pytest.mark.points(1)
@calls("context_vector", INPUTS, SOFTMAX_WEIGHTS_2)
def test_context_vector_textbook(probed):
    close(probed, CONTEXT_2, what="context_vector(inputs, attn_weights)")


@pytest.mark.points(1)
@calls("all_attention_scores", INPUTS)
def test_all_attention_scores_shape(probed):
    require(getattr(probed, "shape", None) == (6, 6), "all_attention_scores(inputs) should have shape (6, 6)",
            what="all_attention_scores(inputs)", expected="shape (6, 6)", actual=str(getattr(probed, "shape", type(probed))))
    close(probed[0], ALL_SCORES_ROW_1, what="row 1 of all_attention_scores(inputs)")


@pytest.mark.points(1)
@calls("all_attention_weights", INPUTS)
def test_all_attention_weights_textbook(probed):
    require(getattr(probed, "shape", None) == (6, 6), "all_attention_weights(inputs) should have shape (6, 6)",
            what="all_attention_weights(inputs)", expected="shape (6, 6)", actual=str(getattr(probed, "shape", type(probed))))
    close(probed[0], ALL_WEIGHTS_ROW_1, what="row 1 of all_attention_weights(inputs)")


@pytest.mark.points(1)
@calls("all_context_vectors", INPUTS)
def test_all_context_vectors_textbook(probed):
    close(probed, ALL_CONTEXT, what="all_context_vectors(inputs)")
