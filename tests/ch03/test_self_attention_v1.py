"""Sections 3.4.1-3.4.2: self-attention with trainable weights stored as nn.Parameter."""

import pytest
import torch

import self_attention_v1 as ref
from behaviour import check_gradients, check_outputs, check_recovered_weights, forward_cases
from grader.comparisons import close, require
from textbook import (
    INPUTS, STEP_ATTN_SCORE_22, STEP_ATTN_SCORES_2, STEP_ATTN_WEIGHTS_2, STEP_CONTEXT_2, STEP_QUERY_2,
    V1_SEED_123, random_inputs,
)

ORDER = ("W_query", "W_key", "W_value")
X_OTHER = random_inputs(21, 7, 5)  # 7 tokens of size 5: not the book's sizes
X_LONG = random_inputs(22, 9, 3)
X_SQUARE = random_inputs(23, 5, 5)  # as many tokens as value dimensions: weights recoverable
X_GRAD = random_inputs(24, 4, 3)


def reference(seed, d_in, d_out):
    """The reference module built after ``torch.manual_seed(seed)``."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return ref.SelfAttention_v1(d_in, d_out)


def attention_weights(module, x):
    """The attention weights of ``module`` on ``x``."""
    with torch.no_grad():
        queries, keys = x @ module.W_query, x @ module.W_key
        return torch.softmax(queries @ keys.T / keys.shape[-1] ** 0.5, dim=-1)  # (num_tokens, num_tokens)


def expected(seed, d_in, d_out, x):
    """What the reference module returns."""
    with torch.no_grad():
        return reference(seed, d_in, d_out)(x)


X_LENGTHS = [INPUTS[:1], INPUTS[:2], X_LONG]
# What the reference gives on the checks' inputs: computed once, when the suite is collected (a batch's
# grading processes share them), not in every submission's checks.
IN_ORDER_2024 = torch.stack([getattr(reference(2024, 4, 3), n).data for n in ORDER])
FORWARD = forward_cases("SelfAttention_v1", expected, X_OTHER, X_LENGTHS)
SQUARE = expected(5, 5, 6, X_SQUARE)
SQUARE_WEIGHTS = attention_weights(reference(5, 5, 6), X_SQUARE)


def matrices(params, d_in, d_out, what):
    """The student's W_query, W_key, W_value values, after checking they are (d_in, d_out) tensors."""
    values = []
    for name in ORDER:
        info = params["attributes"][name]
        kind = info["kind"]
        require(kind != "missing", f"self.{name} is missing", what=what,
                hint=f"Create self.{name} = nn.Parameter(torch.rand(d_in, d_out)) in __init__.")
        require(kind in ("Parameter", "Tensor"), f"self.{name} is a {kind}, not a matrix", what=what,
                hint="Version 1 keeps plain matrices, nn.Parameter(torch.rand(d_in, d_out)); nn.Linear is version 2.")
        shape = info["shape"]
        transposed = " Yours is transposed." if shape == [d_out, d_in] else ""
        require(shape == [d_in, d_out], f"self.{name} has shape {tuple(shape)}, expected ({d_in}, {d_out})", what=what,
                hint=f"Each matrix is (d_in, d_out), so that x @ W maps a token of size d_in to size d_out.{transposed}",
                expected=f"({d_in}, {d_out})", actual=str(tuple(shape)))
        values.append(info["value"])
    return values


@pytest.mark.points(2)
@pytest.mark.probe("forward", seed=123, d_in=3, d_out=2, xs=[INPUTS])
def test_forward_textbook(probed):
    close(probed["outs"][0], V1_SEED_123, what="torch.manual_seed(123); SelfAttention_v1(3, 2)(inputs)")


@pytest.mark.points(1)
@pytest.mark.probe("forward", seed=123, d_in=3, d_out=2, xs=[])
def test_step_by_step_textbook(probed):
    what = "the step-by-step values of 3.4.1, computed from your W_query, W_key, W_value after torch.manual_seed(123)"
    w_query, w_key, w_value = matrices(probed["params"], 3, 2, what)
    query_2, keys, values = INPUTS[1] @ w_query, INPUTS @ w_key, INPUTS @ w_value
    scores_2 = query_2 @ keys.T
    weights_2 = torch.softmax(scores_2 / keys.shape[-1] ** 0.5, dim=-1)
    close(query_2, STEP_QUERY_2, what="query_2 = inputs[1] @ W_query")
    close(query_2 @ keys[1], STEP_ATTN_SCORE_22, what="attn_score_22 = query_2 . keys[1]")
    close(scores_2, STEP_ATTN_SCORES_2, what="attn_scores_2 = query_2 @ keys.T")
    close(weights_2, STEP_ATTN_WEIGHTS_2, what="attn_weights_2 = softmax(attn_scores_2 / sqrt(d_k))")
    close(weights_2 @ values, STEP_CONTEXT_2, what="context_vec_2 = attn_weights_2 @ values")


@pytest.mark.points(1)
@pytest.mark.probe("forward", seed=1, d_in=5, d_out=4, xs=[])
def test_parameters_are_nn_parameters(probed):
    what = "W_query, W_key, W_value of SelfAttention_v1(5, 4)"
    matrices(probed["params"], 5, 4, what)
    for name in ORDER:
        info = probed["params"]["attributes"][name]
        require(info["kind"] == "Parameter", f"self.{name} is a plain tensor, not an nn.Parameter", what=what,
                hint="Wrap it in nn.Parameter(...): then the module registers it and training updates it.")
        require(info["requires_grad"], f"self.{name} does not require gradients", what=what,
                hint="Keep the default requires_grad=True of nn.Parameter: the matrices are trained.")
    named = [name for name, _ in probed["params"]["named"]]
    require(sorted(named) == sorted(ORDER), f"the module's parameters are {named}", what=what,
            hint="Register exactly three parameters, W_query, W_key and W_value, and create no others.",
            expected=str(list(ORDER)), actual=str(named))


@pytest.mark.points(1, cases=3)
@pytest.mark.parametrize("outputs, xs, what", FORWARD)
def test_forward_other(probed, outputs, xs, what):
    check_outputs(probed["outs"], outputs, xs, what=what)


@pytest.mark.points(1)
@pytest.mark.probe("forward", seed=2024, d_in=4, d_out=3, xs=[])
def test_parameters_created_in_order(probed):
    what = "W_query, W_key, W_value of SelfAttention_v1(4, 3) after torch.manual_seed(2024)"
    values = torch.stack(matrices(probed["params"], 4, 3, what))
    close(values, IN_ORDER_2024, what=what + " (stacked)")


@pytest.mark.points(1)
@pytest.mark.probe("forward", seed=5, d_in=5, d_out=6, xs=[X_SQUARE])
def test_attention_weights_rows_sum_to_one(probed):
    what = "attention weights of SelfAttention_v1(5, 6) on 5 tokens, recovered from your output (output = weights @ values)"
    check_recovered_weights(
        probed["outs"][0], SQUARE,
        lambda: X_SQUARE.double() @ matrices(probed["params"], 5, 6, what)[2].double(),
        SQUARE_WEIGHTS, what=what, call="SelfAttention_v1(5, 6) on 5 tokens of size 5 (seed 5)")


@pytest.mark.points(1)
@pytest.mark.probe("gradients", seed=3, d_in=3, d_out=2, x=X_GRAD)
def test_gradients_reach_every_parameter(probed):
    check_gradients(
        probed, ORDER, what="which parameters of SelfAttention_v1(3, 2) receive a gradient from (output ** 2).sum().backward()",
        uses="Compute the output from self.W_query, self.W_key and self.W_value: no hard-coded values, .detach() or torch.no_grad().",
        reaches="Each matrix must be an nn.Parameter that forward uses directly (not through .detach() or .data).")
