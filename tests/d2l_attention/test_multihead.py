"""Section 11.5: multi-head attention (graded with the reference DotProductAttention)."""

import pytest
import torch

import multihead as ref
from book import (
    BATCH_SIZE, MHA_ARGS, MHA_OUTPUT_SHAPE, MHA_VALID_LENS, NUM_HEADS, NUM_HIDDENS, NUM_KVPAIRS, NUM_QUERIES,
    random_inputs, random_lens,
)
from grader.comparisons import close, require
from grader.plugin import calls
from hints import check_gradients, same_seed

SEED = 9
# The book's sizes with random inputs, so that the values (not only the shape) are checked.
BOOK_Q = random_inputs(61, BATCH_SIZE, NUM_QUERIES, NUM_HIDDENS)
BOOK_KV = random_inputs(62, BATCH_SIZE, NUM_KVPAIRS, NUM_HIDDENS)
# Other sizes: every input has its own size, 3 heads of 4 features, with bias.
ARGS = [3, 5, 7, 12, 3, 0.2]  # key_size, query_size, value_size, num_hiddens, num_heads, dropout
Q, K, V = random_inputs(63, 2, 4, 5), random_inputs(64, 2, 6, 3), random_inputs(65, 2, 6, 7)
LENS_1D = torch.tensor([3, 6])
LENS_2D = random_lens(66, 6, 2, 4)
UPSTREAM = random_inputs(67, 2, 4, 12)
# transpose_qkv / transpose_output inputs
X_BOOK = random_inputs(68, 2, 4, 100)
X_OTHER = random_inputs(69, 3, 5, 12)
HEADS_OTHER = random_inputs(70, 6, 5, 3)  # (batch_size * num_heads, n, head_size) for 2 heads


def probe(args, queries, keys, values, valid_lens, bias=False, **kwargs):
    """Marker: run ``MultiHeadAttention(*args, bias=bias)`` (seeded) on these inputs in the sandbox."""
    return pytest.mark.probe("attend", args=args, bias=bias, seed=SEED, queries=queries, keys=keys, values=values,
                             valid_lens=valid_lens, **kwargs)


def reference(args, queries, keys, values, valid_lens, bias=False):
    """Output and head weights of the reference built the same way, in eval mode."""
    module = same_seed(SEED, ref.MultiHeadAttention, *args, bias=bias)
    with torch.no_grad():
        output = module(queries, keys, values, valid_lens)
    return output, module.attention.attention_weights


def gradients(args, queries, keys, values, valid_lens, upstream, bias=False):
    """The reference's gradients of ``(output * upstream).sum()``: every parameter's and the inputs'."""
    module = same_seed(SEED, ref.MultiHeadAttention, *args, bias=bias)
    inputs = {"queries": queries.clone().requires_grad_(), "keys": keys.clone().requires_grad_(),
              "values": values.clone().requires_grad_()}
    (module(*inputs.values(), valid_lens) * upstream).sum().backward()
    found = {f"parameter {name}": p.grad for name, p in module.named_parameters()}
    return {**found, **{name: t.grad for name, t in inputs.items()}}


# What the reference gives on the checks' inputs: computed once, when the suite is collected (a batch's
# grading processes share them), not in every submission's checks. Each: (output, head weights).
BOOK = reference(list(MHA_ARGS), BOOK_Q, BOOK_KV, BOOK_KV, MHA_VALID_LENS)
WITH_BIAS = reference(ARGS, Q, K, V, LENS_1D, bias=True)
PER_QUERY = reference(ARGS, Q, K, V, LENS_2D)
NO_LENS = reference(ARGS, Q, K, V, None)
DROPOUT_0_9 = reference([3, 5, 7, 12, 3, 0.9], Q, K, V, LENS_1D)
GRADIENTS = gradients(ARGS, Q, K, V, LENS_1D, UPSTREAM, bias=True)


# -- reshaping for parallel heads ----------------------------------------------------------------
@pytest.mark.points(1)
@calls("transpose_qkv", X_BOOK, NUM_HEADS)
def test_transpose_qkv_book_shape(probed):
    close(probed, ref.transpose_qkv(X_BOOK, NUM_HEADS), what="transpose_qkv(X of shape (2, 4, 100), 5): (10, 4, 20)")


@pytest.mark.points(1)
@calls("transpose_qkv", X_OTHER, 4)
def test_transpose_qkv_other_sizes(probed):
    close(probed, ref.transpose_qkv(X_OTHER, 4), what="transpose_qkv(X of shape (3, 5, 12), 4): (12, 5, 3)")


@pytest.mark.points(1)
@calls("transpose_output", ref.transpose_qkv(X_OTHER, 4), 4)
def test_transpose_output_inverts_transpose_qkv(probed):
    close(probed, X_OTHER, what="transpose_output(transpose_qkv(X, 4), 4) == X for X of shape (3, 5, 12)")


@pytest.mark.points(1)
@calls("transpose_output", HEADS_OTHER, 2)
def test_transpose_output_other_sizes(probed):
    close(probed, ref.transpose_output(HEADS_OTHER, 2), what="transpose_output(X of shape (6, 5, 3), 2): (3, 5, 6)")


# -- the book's example ----------------------------------------------------------------------
@pytest.mark.points(1)
@probe(list(MHA_ARGS), torch.ones(BATCH_SIZE, NUM_QUERIES, NUM_HIDDENS), torch.ones(BATCH_SIZE, NUM_KVPAIRS, NUM_HIDDENS),
       torch.ones(BATCH_SIZE, NUM_KVPAIRS, NUM_HIDDENS), MHA_VALID_LENS)
def test_book_shape(probed):
    output = probed["output"]
    require(isinstance(output, torch.Tensor) and tuple(output.shape) == MHA_OUTPUT_SHAPE,
            "MultiHeadAttention(100, 100, 100, 100, 5, 0.5) should map (2, 4, 100) queries to (2, 4, 100)",
            what="the book's example: queries (2, 4, 100), keys and values (2, 6, 100), valid_lens [3, 2]",
            expected=str(MHA_OUTPUT_SHAPE), actual=str(tuple(output.shape)) if isinstance(output, torch.Tensor) else "",
            hint="Merge the heads back with transpose_output before W_o: (batch_size, num_queries, num_hiddens).")


@pytest.mark.points(1)
@probe(list(MHA_ARGS), BOOK_Q, BOOK_KV, BOOK_KV, MHA_VALID_LENS)
def test_book_values(probed):
    close(probed["output"], BOOK[0],
          what="MultiHeadAttention(100, 100, 100, 100, 5, 0.5) in eval mode on random (2, 4, 100) queries, "
               "(2, 6, 100) keys and values, valid_lens [3, 2] (same seed as the reference)")


# -- behaviour -------------------------------------------------------------------------------
@pytest.mark.points(1)
@pytest.mark.probe("parameters", args=ARGS, bias=True, seed=SEED)
def test_parameters(probed):
    expected = [["W_q.weight", [12, 5]], ["W_q.bias", [12]], ["W_k.weight", [12, 3]], ["W_k.bias", [12]],
                ["W_v.weight", [12, 7]], ["W_v.bias", [12]], ["W_o.weight", [12, 12]], ["W_o.bias", [12]]]
    require(probed == expected, "the parameters are not W_q, W_k, W_v, W_o (with bias) in that order",
            what="parameters of MultiHeadAttention(3, 5, 7, 12, 3, 0.2, bias=True), in creation order",
            expected=", ".join(f"{n} {tuple(s)}" for n, s in expected),
            actual=", ".join(f"{n} {tuple(s)}" for n, s in probed)[:600],
            hint="nn.Linear(query_size, num_hiddens, bias=bias) for W_q, key_size for W_k, value_size for W_v, "
                 "then W_o = nn.Linear(num_hiddens, num_hiddens, bias=bias); pass bias on to every layer.")


@pytest.mark.points(2)
@probe(ARGS, Q, K, V, LENS_1D, bias=True)
def test_different_sizes(probed):
    close(probed["output"], WITH_BIAS[0],
          what="MultiHeadAttention(3, 5, 7, 12, 3, 0.2, bias=True): queries (2, 4, 5), keys (2, 6, 3), values (2, 6, 7), "
               "valid_lens [3, 6]")


@pytest.mark.points(1)
@probe(ARGS, Q, K, V, LENS_2D)
def test_valid_lens_2d(probed):
    close(probed["output"], PER_QUERY[0],
          what="MultiHeadAttention with one valid length per query, valid_lens of shape (2, 4)")


@pytest.mark.points(1)
@probe(ARGS, Q, K, V, None)
def test_no_valid_lens(probed):
    close(probed["output"], NO_LENS[0],
          what="MultiHeadAttention with valid_lens None (every key counts)")


@pytest.mark.points(1)
@probe(ARGS, Q, K, V, LENS_2D)
def test_attention_weights(probed):
    weights = probed["weights"]
    require(weights is not None, "self.attention.attention_weights is missing after forward",
            what="the attention weights of the heads, self.attention.attention_weights",
            hint="Run the heads through self.attention = DotProductAttention(dropout); it keeps the weights.")
    close(weights, PER_QUERY[1], grid=True,
          what="self.attention.attention_weights: (batch_size * num_heads, num_queries, num_kv_pairs), "
               "each head masked with its batch item's valid lengths")


@pytest.mark.points(1)
@probe([3, 5, 7, 12, 3, 0.9], Q, K, V, LENS_1D)
def test_eval_disables_dropout(probed):
    close(probed["output"], DROPOUT_0_9[0],
          what="MultiHeadAttention(3, 5, 7, 12, 3, 0.9) in eval mode (dropout must do nothing)")


@pytest.mark.points(1)
@pytest.mark.probe("gradients", args=ARGS, bias=True, seed=SEED, queries=Q, keys=K, values=V, valid_lens=LENS_1D,
                   upstream=UPSTREAM)
def test_gradients(probed):
    check_gradients(probed, GRADIENTS, "gradients through MultiHeadAttention (every W_q, W_k, W_v, W_o parameter, the inputs)")
