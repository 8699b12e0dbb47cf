"""Section 3.3: attention without trainable weights."""

import pytest
import torch

import simple_attention as ref
from grader.suite.comparisons import close
from grader.suite.plugin import calls
from textbook import (
    ALL_CONTEXT, ALL_SCORES_ROW_1, ALL_WEIGHTS_ROW_1, CONTEXT_2, INPUTS, NAIVE_WEIGHTS_2, SCORES_2,
    SOFTMAX_WEIGHTS_2, random_inputs,
)

X = random_inputs(11, 5, 4)  # 5 tokens, 4-dimensional: not the book's sizes
Q = random_inputs(12, 4)
S_MIXED = 3 * random_inputs(14, 7) - 1  # two scores negative, the sum 4.66 (far from 0): not an L1 norm
S2 = torch.randn(4, 3, generator=torch.Generator().manual_seed(14))
W = torch.softmax(random_inputs(15, 5), dim=0)


# One check per case: the student's function on these inputs against the reference's value,
# computed here once (the book's printed values for the *textbook* cases).
CASES = [
    pytest.param(SCORES_2, "attention_scores(inputs, inputs[1])",
                 marks=calls("attention_scores", INPUTS, INPUTS[1]), id="attention_scores_textbook"),
    pytest.param(ref.attention_scores(X, Q), "attention_scores on 5 tokens of size 4",
                 marks=calls("attention_scores", X, Q), id="attention_scores_other_sizes"),
    pytest.param(NAIVE_WEIGHTS_2, "normalize_naive(scores)",
                 marks=calls("normalize_naive", SCORES_2), id="normalize_naive_textbook"),
    pytest.param(ref.normalize_naive(S_MIXED), "normalize_naive on 7 other scores, two of them negative",
                 marks=calls("normalize_naive", S_MIXED), id="normalize_naive_mixed_signs"),
    pytest.param(SOFTMAX_WEIGHTS_2, "softmax_naive(scores)",
                 marks=calls("softmax_naive", SCORES_2), id="softmax_naive_textbook"),
    pytest.param(ref.softmax_naive(S2), "softmax_naive on a (4, 3) tensor (normalise along dim 0)",
                 marks=calls("softmax_naive", S2), id="softmax_naive_dim_0"),
    pytest.param(CONTEXT_2, "context_vector(inputs, attn_weights)",
                 marks=calls("context_vector", INPUTS, SOFTMAX_WEIGHTS_2), id="context_vector_textbook"),
    pytest.param(ref.context_vector(X, W), "context_vector on 5 tokens of size 4",
                 marks=calls("context_vector", X, W), id="context_vector_other_sizes"),
    pytest.param(ref.all_attention_scores(X), "all_attention_scores on 5 tokens of size 4",
                 marks=calls("all_attention_scores", X), id="all_attention_scores_other_sizes"),
]


@pytest.mark.points(1)
@pytest.mark.parametrize("expected, what", CASES)
def test_matches_reference(probed, expected, what):
    close(probed, expected, what=what)


@pytest.mark.points(1)
@calls("all_attention_scores", INPUTS)
def test_all_attention_scores_textbook(probed):
    close(probed[0] if getattr(probed, "dim", lambda: 0)() == 2 else probed, ALL_SCORES_ROW_1,
          what="row 1 of all_attention_scores(inputs)")


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
