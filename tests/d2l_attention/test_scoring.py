"""Section 11.3: additive and scaled dot-product attention (graded with the reference masked_softmax)."""


import pytest
import torch

import scoring as ref
from book import ADDITIVE_ARGS, ADDITIVE_QUERIES, DOT_QUERIES, KEYS, POOLED, VALID_LENS, VALUES, random_inputs, random_lens
from grader.suite.comparisons import close, require
from grader.suite.exact import WEIGHTS_AFTER_DROPOUT, check_inputs_unchanged, dropout_factor, is_dropout_of
from hints import check_gradients, same_seed

SEED = 5
# Not the book's sizes: 2 batch items, 4 queries, 7 key-value pairs; keys differ, so weights do too.
ADD_ARGS = [3, 5, 6, 0.2]  # key_size, query_size, num_hiddens, dropout
ADD_Q, ADD_K, V = random_inputs(41, 2, 4, 5), random_inputs(42, 2, 7, 3), random_inputs(43, 2, 7, 3)
LENS_1D = torch.tensor([3, 7])
LENS_2D = random_lens(44, 7, 2, 4)
DOT_Q, DOT_K = 2 * random_inputs(45, 2, 4, 6), 2 * random_inputs(46, 2, 7, 6)  # d = 6
# Values that show dropout: [I | I], so both halves of each output row are the dropped-out weights.
EYE_VALUES = torch.eye(7).repeat(2, 1, 2)  # (2, 7, 14)
UPSTREAM = random_inputs(47, 2, 4, 3)
DROPOUT_P = 0.3  # not the book's rate: a rate written into the code instead of `dropout` fails
# A first call on other queries before the probed one: the weights kept must be the last call's.
ADD_Q_FIRST, DOT_Q_FIRST = random_inputs(48, 2, 4, 5), 2 * random_inputs(49, 2, 4, 6)


def probe(scorer, args, queries, keys, values, valid_lens=None, **kwargs):
    """Marker: run ``scorer(*args)`` (seeded) on these inputs in the sandbox."""
    return pytest.mark.probe("attend", scorer=scorer, args=args, seed=SEED, queries=queries, keys=keys,
                             values=values, valid_lens=valid_lens, **kwargs)


def reference(scorer, args, queries, keys, values, valid_lens=None):
    """Output and attention weights of the reference scorer built the same way, in eval mode."""
    module = same_seed(SEED, getattr(ref, scorer), *args)
    with torch.no_grad():
        output = module(queries, keys, values, valid_lens)
    return output, module.attention_weights


def check_weights(probed, scorer, expected):
    """``self.attention_weights`` is kept, masked, normalised and equal to the reference's (``expected``)."""
    weights = probed["weights"]
    require(weights is not None, f"{scorer} does not keep its attention weights",
            what=f"{scorer}.attention_weights after forward",
            hint="Store the weights of the last call in self.attention_weights (a tensor), before dropout.")
    close(weights, expected, what=f"{scorer}.attention_weights, shape (batch_size, num_queries, num_kv_pairs)",
          grid=True)


def check_dropout(probed, scorer, reference_weights):
    """In training, dropout (rate DROPOUT_P, not the book's) zeroes some attention weights and
    scales the rest by 1 / (1 - p): judged against the reference's weights (computed here).

    When the student's own ``attention_weights`` differ from the reference's, that is said
    instead (a mistake in the scores is not a mistake of dropout).
    """
    weights = reference_weights.double()
    own = probed["weights"] if isinstance(probed, dict) else None
    if isinstance(own, torch.Tensor) and own.shape == weights.shape and own.is_floating_point():
        require(not is_dropout_of(own, reference_weights, DROPOUT_P),
                "attention_weights in training mode are the weights after dropout (each 0 or scaled by 1 / (1 - p))",
                what=f"{scorer}.attention_weights in training mode (kept before dropout)", proven=True,
                hint=WEIGHTS_AFTER_DROPOUT)
        close(own, reference_weights, grid=True,
              what=f"{scorer}.attention_weights in training mode (before dropout): dropout cannot be judged on "
                   "other weights")
    output = probed["output"]
    require(isinstance(output, torch.Tensor) and tuple(output.shape) == (2, 4, 14),
            "expected an output of shape (2, 4, 14)", what=f"{scorer}(...) in training mode on values of shape (2, 7, 14)",
            expected="shape (2, 4, 14)", actual=str(tuple(output.shape)) if isinstance(output, torch.Tensor) else repr(output)[:80])
    left, right = output[..., :7].double(), output[..., 7:].double()
    scale = 1 / (1 - DROPOUT_P)
    what = (f"{scorer} in training mode with dropout {DROPOUT_P}, values [I | I] (each output row shows the "
            "dropped-out weights twice)")
    require(torch.allclose(left, right, atol=1e-5), "the two halves differ: dropout did not act on the attention weights",
            what=what, hint="Apply self.dropout to the attention weights, then multiply with the values (not dropout on the output).")
    require(not torch.allclose(left, weights, atol=1e-5), "the output shows the attention weights unchanged: no dropout",
            what=what, hint="Apply self.dropout to the attention weights in forward (it is active in training mode); "
                            "keep self.attention_weights as they were before dropout.")
    kept, dropped, valid = (left - scale * weights).abs() < 1e-4, left.abs() < 1e-6, weights.abs() > 1e-6
    factor = dropout_factor(weights, left, DROPOUT_P)
    require(factor is None, f"your dropout scales the weights it keeps by {round(factor or 0, 4)}, that is a rate of "
            f"{round(1 - 1 / (factor or 1), 4)}, but dropout={DROPOUT_P} was passed", what=what,
            hint="Use the dropout rate the constructor is given: self.dropout = nn.Dropout(dropout).")
    # No single rate explains what was kept: dropout acted on another tensor than the weights.
    require(bool((kept | dropped).all()), f"some output entries are neither 0 nor {scale:.4f} x the attention weight "
            f"(1 / (1 - {DROPOUT_P}))", what=what,
            hint="Apply self.dropout to the attention weights after masked_softmax (not to the scores before it), "
                 "then multiply by the values.")
    require(bool((dropped & valid).any()) and bool((kept & valid).any()), "dropout should drop some weights and keep others",
            what=what, hint="Apply self.dropout = nn.Dropout(dropout) to the attention weights in forward.")


def reference_gradients(scorer, args, queries, keys, values, valid_lens):
    """The reference's gradients of ``(output * UPSTREAM).sum()``."""
    module = same_seed(SEED, getattr(ref, scorer), *args)
    inputs = {"queries": queries.clone().requires_grad_(), "keys": keys.clone().requires_grad_(),
              "values": values.clone().requires_grad_()}
    (module(*inputs.values(), valid_lens) * UPSTREAM).sum().backward()
    grads = {f"parameter {name}": p.grad for name, p in module.named_parameters()}
    grads.update({name: t.grad for name, t in inputs.items()})
    return grads


# What the reference gives on the checks' inputs: computed once, when the suite is collected (a batch's
# grading processes share them), not in every submission's checks. Each: (output, attention weights).
ADDITIVE = reference("AdditiveAttention", ADD_ARGS, ADD_Q, ADD_K, V, LENS_1D)
ADDITIVE_PER_QUERY = reference("AdditiveAttention", ADD_ARGS, ADD_Q, ADD_K, V, LENS_2D)
ADDITIVE_DROPOUT_0_9 = reference("AdditiveAttention", [3, 5, 6, 0.9], ADD_Q, ADD_K, V, LENS_1D)
ADDITIVE_EYE = reference("AdditiveAttention", [3, 5, 6, DROPOUT_P], ADD_Q, ADD_K, EYE_VALUES, LENS_1D)
ADDITIVE_GRADIENTS = reference_gradients("AdditiveAttention", ADD_ARGS, ADD_Q, ADD_K, V, LENS_1D)
DOT = reference("DotProductAttention", [0.2], DOT_Q, DOT_K, V, LENS_1D)
DOT_PER_QUERY = reference("DotProductAttention", [0.2], DOT_Q, DOT_K, V, LENS_2D)
DOT_NO_LENS = reference("DotProductAttention", [0.2], DOT_Q, DOT_K, V, None)
DOT_DROPOUT_0_9 = reference("DotProductAttention", [0.9], DOT_Q, DOT_K, V, LENS_1D)
DOT_EYE = reference("DotProductAttention", [DROPOUT_P], DOT_Q, DOT_K, EYE_VALUES, LENS_1D)
DOT_GRADIENTS = reference_gradients("DotProductAttention", [DROPOUT_P], DOT_Q, DOT_K, V, LENS_1D)


# One check per case: the output of a scorer on these inputs against the reference's, computed above once
# (the book's printed pooled values for the *book* cases).
OUTPUTS = [
    pytest.param(POOLED, "AdditiveAttention(2, 20, 8, 0.1) in eval mode on the book's keys, values, valid_lens [2, 6]",
                 marks=probe("AdditiveAttention", list(ADDITIVE_ARGS), ADDITIVE_QUERIES, KEYS, VALUES, VALID_LENS),
                 id="additive_book"),
    pytest.param(POOLED, "DotProductAttention(0.5) in eval mode on the book's keys, values, valid_lens [2, 6]",
                 marks=probe("DotProductAttention", [0.5], DOT_QUERIES, KEYS, VALUES, VALID_LENS), id="dot_product_book"),
    pytest.param(ADDITIVE_PER_QUERY[0], "AdditiveAttention with one valid length per query, valid_lens of shape (2, 4)",
                 marks=probe("AdditiveAttention", ADD_ARGS, ADD_Q, ADD_K, V, LENS_2D), id="additive_2d_valid_lens"),
    pytest.param(DOT_PER_QUERY[0], "DotProductAttention with one valid length per query, valid_lens of shape (2, 4)",
                 marks=probe("DotProductAttention", [0.2], DOT_Q, DOT_K, V, LENS_2D), id="dot_product_2d_valid_lens"),
    pytest.param(DOT_NO_LENS[0], "DotProductAttention(0.2)(queries, keys, values), valid_lens left at its default None",
                 marks=probe("DotProductAttention", [0.2], DOT_Q, DOT_K, V, None), id="dot_product_no_valid_lens"),
    pytest.param(ADDITIVE_DROPOUT_0_9[0], "AdditiveAttention(3, 5, 6, 0.9) in eval mode (dropout must do nothing)",
                 marks=probe("AdditiveAttention", [3, 5, 6, 0.9], ADD_Q, ADD_K, V, LENS_1D),
                 id="additive_eval_disables_dropout"),
    pytest.param(DOT_DROPOUT_0_9[0], "DotProductAttention(0.9) in eval mode (dropout must do nothing)",
                 marks=probe("DotProductAttention", [0.9], DOT_Q, DOT_K, V, LENS_1D),
                 id="dot_product_eval_disables_dropout"),
]
# The same, worth two points each: other sizes and keys, valid_lens [3, 7].
OTHER_SIZES = [
    pytest.param(ADDITIVE[0], "AdditiveAttention(3, 5, 6, 0.2) on other keys (2, 7, 3), queries (2, 4, 5), valid_lens [3, 7]",
                 marks=probe("AdditiveAttention", ADD_ARGS, ADD_Q, ADD_K, V, LENS_1D), id="additive"),
    pytest.param(DOT[0], "DotProductAttention(0.2) on queries (2, 4, 6), keys (2, 7, 6), valid_lens [3, 7]",
                 marks=probe("DotProductAttention", [0.2], DOT_Q, DOT_K, V, LENS_1D), id="dot_product"),
]
# Each after a first call on other queries (and other valid lengths): the weights of the last call.
WEIGHTS = [
    pytest.param("AdditiveAttention", ADDITIVE[1], marks=probe("AdditiveAttention", ADD_ARGS, ADD_Q, ADD_K, V, LENS_1D,
                                                               before=[ADD_Q_FIRST, ADD_K, V, LENS_2D]),
                 id="additive"),
    pytest.param("DotProductAttention", DOT_PER_QUERY[1],
                 marks=probe("DotProductAttention", [0.2], DOT_Q, DOT_K, V, LENS_2D, before=[DOT_Q_FIRST, DOT_K, V, LENS_1D]),
                 id="dot_product"),
]
DROPOUT = [
    pytest.param("AdditiveAttention", ADDITIVE_EYE[1],
                 marks=probe("AdditiveAttention", [3, 5, 6, DROPOUT_P], ADD_Q, ADD_K, EYE_VALUES, LENS_1D, train=True),
                 id="additive"),
    pytest.param("DotProductAttention", DOT_EYE[1],
                 marks=probe("DotProductAttention", [DROPOUT_P], DOT_Q, DOT_K, EYE_VALUES, LENS_1D, train=True),
                 id="dot_product"),
]
GRADIENTS = [
    pytest.param(ADDITIVE_GRADIENTS, "gradients through AdditiveAttention (W_k, W_q, w_v, queries, keys, values)",
                 marks=pytest.mark.probe("gradients", scorer="AdditiveAttention", args=ADD_ARGS, seed=SEED, queries=ADD_Q,
                                         keys=ADD_K, values=V, valid_lens=LENS_1D, upstream=UPSTREAM, train_seed=3),
                 id="additive"),
    pytest.param(DOT_GRADIENTS, "gradients through DotProductAttention (queries, keys, values)",
                 marks=pytest.mark.probe("gradients", scorer="DotProductAttention", args=[DROPOUT_P], seed=SEED,
                                         queries=DOT_Q, keys=DOT_K, values=V, valid_lens=LENS_1D, upstream=UPSTREAM,
                                         train_seed=3), id="dot_product"),
]


@pytest.mark.points(1)
@pytest.mark.parametrize("expected, what", OUTPUTS)
def test_output(probed, expected, what):
    close(probed["output"], expected, what=what)


@pytest.mark.points(2)
@pytest.mark.parametrize("expected, what", OTHER_SIZES)
def test_matches_reference(probed, expected, what):
    close(probed["output"], expected, what=what)
    check_inputs_unchanged(probed, what.split("(")[0], what)


@pytest.mark.points(1)
@pytest.mark.parametrize("scorer, expected", WEIGHTS)
def test_attention_weights(probed, scorer, expected):
    check_weights(probed, scorer, expected)


@pytest.mark.points(1)
@pytest.mark.parametrize("scorer, reference_weights", DROPOUT)
def test_dropout_on_weights(probed, scorer, reference_weights):
    check_dropout(probed, scorer, reference_weights)


@pytest.mark.points(1)
@pytest.mark.parametrize("expected, what", GRADIENTS)
def test_gradients(probed, expected, what):
    check_gradients(probed, expected, what)
