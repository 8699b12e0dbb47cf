"""Sections 3.4.1-3.4.2: self-attention with trainable weights stored as nn.Parameter."""

import pytest
import torch

import both_versions
import self_attention_v1 as ref
from both_versions import ORDER, Version
from grader.suite.comparisons import close, require
from textbook import (
    INPUTS, STEP_ATTN_SCORE_22, STEP_ATTN_SCORES_2, STEP_ATTN_WEIGHTS_2, STEP_CONTEXT_2, STEP_QUERY_2, V1_SEED_123,
)


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


# What the checks both versions share (both_versions.py) need of this one; the reference's values are
# computed here, when the suite is collected.
VERSION = Version(
    name="SelfAttention_v1", parameters_text="W_query, W_key, W_value",
    uses="Compute the output from self.W_query, self.W_key and self.W_value: no hard-coded values, .detach() or torch.no_grad().",
    reaches="Each matrix must be an nn.Parameter that forward uses directly (not through .detach() or .data).",
    reference=reference, parameters=lambda module: [getattr(module, n) for n in ORDER], read_parameters=matrices,
    value_matrix=lambda w: w, attention_weights=attention_weights)


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


PARAMETERS_SEED_1 = torch.stack([w.detach() for w in VERSION.parameters(reference(1, 5, 4))])


@pytest.mark.points(1)
@pytest.mark.probe("forward", seed=1, d_in=5, d_out=4, xs=[])
def test_parameters_are_nn_parameters(probed):
    what = "W_query, W_key, W_value of SelfAttention_v1(5, 4)"
    close(torch.stack(matrices(probed["params"], 5, 4, what)), PARAMETERS_SEED_1,
          what=what + " after torch.manual_seed(1) (stacked)")
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


# The checks both versions share, collected here, in this order, as tests of this exercise, and
# the fixture they read this suite's VERSION with.
version = both_versions.version
test_forward_other = both_versions.test_forward_other
test_parameters_created_in_order = both_versions.test_parameters_created_in_order
test_attention_weights_rows_sum_to_one = both_versions.test_attention_weights_rows_sum_to_one
test_gradients_reach_every_parameter = both_versions.test_gradients_reach_every_parameter
