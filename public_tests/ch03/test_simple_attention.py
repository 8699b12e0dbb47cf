"""Public tests for section 3.3 (attention without trainable weights): the book's values, then the
same functions on inputs no book printed (the reference's results, from catalog.json)."""

import pytest
import torch

from book_values import (
    ALL_CONTEXT, ALL_SCORES_ROW_1, ALL_WEIGHTS_ROW_1, CONTEXT_2, INPUTS, NAIVE_WEIGHTS_2, SCORES_2,
    SOFTMAX_WEIGHTS_2, random_inputs,
)

from grader.suite.public_reference import same
from grader.suite.comparisons import close, require
from grader.suite.plugin import calls


# The book's printed values, one case per function, in the order of the section.
BOOK_CASES = [
    pytest.param(SCORES_2, "attention_scores(inputs, inputs[1])",
                 marks=calls("attention_scores", INPUTS, INPUTS[1]), id="attention_scores"),
    pytest.param(NAIVE_WEIGHTS_2, "normalize_naive(scores)", marks=calls("normalize_naive", SCORES_2), id="normalize_naive"),
    pytest.param(SOFTMAX_WEIGHTS_2, "softmax_naive(scores)", marks=calls("softmax_naive", SCORES_2), id="softmax_naive"),
    pytest.param(CONTEXT_2, "context_vector(inputs, attn_weights)",
                 marks=calls("context_vector", INPUTS, SOFTMAX_WEIGHTS_2), id="context_vector"),
    pytest.param(ALL_CONTEXT, "all_context_vectors(inputs)", marks=calls("all_context_vectors", INPUTS),
                 id="all_context_vectors"),
]
# Row 1 of the matrices for every token (the book prints that row).
ROW_CASES = [
    pytest.param(ALL_SCORES_ROW_1, "all_attention_scores", marks=calls("all_attention_scores", INPUTS),
                 id="all_attention_scores"),
    pytest.param(ALL_WEIGHTS_ROW_1, "all_attention_weights", marks=calls("all_attention_weights", INPUTS),
                 id="all_attention_weights"),
]


@pytest.mark.points(1)
@pytest.mark.parametrize("expected, what", BOOK_CASES)
def test_textbook(probed, expected, what):
    close(probed, expected, what=what)


@pytest.mark.points(1)
@pytest.mark.parametrize("row_1, function", ROW_CASES)
def test_textbook_row_1(probed, row_1, function):
    """``function(inputs)`` gives a (6, 6) matrix (one row per token) whose row 1 is the book's."""
    require(getattr(probed, "shape", None) == (6, 6), f"{function}(inputs) should have shape (6, 6)",
            what=f"{function}(inputs)", expected="shape (6, 6)", actual=str(getattr(probed, "shape", type(probed))))
    close(probed[0], row_1, what=f"row 1 of {function}(inputs)")


# Inputs no book printed (5 tokens of 4 features, seeded); the expected results are the reference's,
# from catalog.json. A 2-D softmax_naive normalises each column (dimension 0), as the book's does.
X_OTHER = random_inputs(41, 5, 4)
S_OTHER = 3 * random_inputs(42, 5) - 1
W_OTHER = torch.softmax(S_OTHER, dim=0)
S_MIXED = 3 * random_inputs(45, 6) - 1  # two scores negative, the sum 4.01 (far from 0): not an L1 norm
OTHER_CASES = [
    pytest.param("attention_scores(x, x[3]) for x of shape (5, 4)", marks=calls("attention_scores", X_OTHER, X_OTHER[3]),
                 id="attention_scores"),
    pytest.param("normalize_naive(scores) for 6 scores, two of them negative", marks=calls("normalize_naive", S_MIXED),
                 id="normalize_naive"),
    pytest.param("softmax_naive(x) for x of shape (5, 4) (a matrix)", marks=calls("softmax_naive", X_OTHER),
                 id="softmax_naive_matrix"),
    pytest.param("context_vector(x, weights) for x of shape (5, 4)", marks=calls("context_vector", X_OTHER, W_OTHER),
                 id="context_vector"),
    pytest.param("all_attention_scores(x) for x of shape (5, 4)", marks=calls("all_attention_scores", X_OTHER),
                 id="all_attention_scores"),
    pytest.param("all_attention_weights(x) for x of shape (5, 4)", marks=calls("all_attention_weights", X_OTHER),
                 id="all_attention_weights"),
    pytest.param("all_context_vectors(x) for x of shape (5, 4)", marks=calls("all_context_vectors", X_OTHER),
                 id="all_context_vectors"),
]


@pytest.mark.points(1)
@pytest.mark.parametrize("what", OTHER_CASES)
def test_other_inputs(probed, reference, what):
    same(probed, reference, what=what, grid=True)
