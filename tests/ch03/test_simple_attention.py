"""Section 3.3: attention without trainable weights."""

import pytest
import torch

import simple_attention as ref
from grader.comparisons import close
from grader.plugin import calls
from textbook import (
    ALL_CONTEXT, ALL_SCORES_ROW_1, ALL_WEIGHTS_ROW_1, CONTEXT_2, INPUTS, NAIVE_WEIGHTS_2, SCORES_2,
    SOFTMAX_WEIGHTS_2, random_inputs,
)

X = random_inputs(11, 5, 4)  # 5 tokens, 4-dimensional: not the book's sizes
Q = random_inputs(12, 4)
S = torch.randn(7, generator=torch.Generator().manual_seed(13))
S2 = torch.randn(4, 3, generator=torch.Generator().manual_seed(14))
W = torch.softmax(random_inputs(15, 5), dim=0)


@pytest.mark.points(1)
@calls("attention_scores", INPUTS, INPUTS[1])
def test_attention_scores_textbook(probed):
    close(probed, SCORES_2, what="attention_scores(inputs, inputs[1])")


@pytest.mark.points(1)
@calls("attention_scores", X, Q)
def test_attention_scores_other_sizes(probed):
    close(probed, ref.attention_scores(X, Q), what="attention_scores on 5 tokens of size 4")


@pytest.mark.points(1)
@calls("normalize_naive", SCORES_2)
def test_normalize_naive_textbook(probed):
    close(probed, NAIVE_WEIGHTS_2, what="normalize_naive(scores)")


@pytest.mark.points(1)
@calls("normalize_naive", S.abs())
def test_normalize_naive_sums_to_one(probed):
    close(probed, ref.normalize_naive(S.abs()), what="normalize_naive on 7 other scores")


@pytest.mark.points(1)
@calls("softmax_naive", SCORES_2)
def test_softmax_naive_textbook(probed):
    close(probed, SOFTMAX_WEIGHTS_2, what="softmax_naive(scores)")


@pytest.mark.points(1)
@calls("softmax_naive", S2)
def test_softmax_naive_dim_0(probed):
    close(probed, ref.softmax_naive(S2), what="softmax_naive on a (4, 3) tensor (normalise along dim 0)")


@pytest.mark.points(1)
@calls("context_vector", INPUTS, SOFTMAX_WEIGHTS_2)
def test_context_vector_textbook(probed):
    close(probed, CONTEXT_2, what="context_vector(inputs, attn_weights)")


@pytest.mark.points(1)
@calls("context_vector", X, W)
def test_context_vector_other_sizes(probed):
    close(probed, ref.context_vector(X, W), what="context_vector on 5 tokens of size 4")


@pytest.mark.points(1)
@calls("all_attention_scores", INPUTS)
def test_all_attention_scores_textbook(probed):
    close(probed[0] if getattr(probed, "dim", lambda: 0)() == 2 else probed, ALL_SCORES_ROW_1,
          what="row 1 of all_attention_scores(inputs)")


@pytest.mark.points(1)
@calls("all_attention_scores", X)
def test_all_attention_scores_other_sizes(probed):
    close(probed, ref.all_attention_scores(X), what="all_attention_scores on 5 tokens of size 4")


@pytest.mark.points(1)
@calls("all_attention_weights", INPUTS)
def test_all_attention_weights_textbook(probed):
    close(probed[0] if getattr(probed, "dim", lambda: 0)() == 2 else probed, ALL_WEIGHTS_ROW_1,
          what="row 1 of all_attention_weights(inputs)")


@pytest.mark.points(1)
@calls("all_attention_weights", X)
def test_all_attention_weights_rows_sum_to_one(probed):
    expected = ref.all_attention_weights(X)
    close(probed, expected, what="all_attention_weights on 5 tokens (each row sums to 1)", grid=True)


def own_weights_context(probed, inputs):
    """What all_context_vectors must give with the student's own all_attention_weights, when
    those are a normalisation of the true scores (softmax or division by the sum, over either
    dimension): a mistake there is graded by the weights' checks, once. Otherwise the
    reference's context vectors."""
    weights = probed.get("weights") if isinstance(probed, dict) else None
    scores = inputs @ inputs.T  # (num_tokens, num_tokens)
    normalised = [torch.softmax(scores, dim=d) for d in (0, 1)] + [scores / scores.sum(dim=d, keepdim=True) for d in (0, 1)]
    if (isinstance(weights, torch.Tensor) and weights.shape == scores.shape and weights.is_floating_point()
            and any(torch.allclose(weights.double(), n.double(), atol=1e-4) for n in normalised)):
        return weights @ inputs
    return ref.all_context_vectors(inputs)


def context_of(probed):
    """The context vectors the probe returned (whatever it is: close() says when it is not a tensor)."""
    return probed.get("context") if isinstance(probed, dict) else probed


@pytest.mark.points(1)
@pytest.mark.probe("context_vectors", inputs=INPUTS)
def test_all_context_vectors_textbook(probed):
    expected = own_weights_context(probed, INPUTS)
    close(context_of(probed), ALL_CONTEXT if torch.allclose(expected, ALL_CONTEXT, atol=1e-4) else expected,
          what="all_context_vectors(inputs) (with your all_attention_weights)")


@pytest.mark.points(1)
@pytest.mark.probe("context_vectors", inputs=X)
def test_all_context_vectors_other_sizes(probed):
    close(context_of(probed), own_weights_context(probed, X),
          what="all_context_vectors on 5 tokens of size 4 (with your all_attention_weights)")
