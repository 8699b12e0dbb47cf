"""Section 11.5: multi-head attention (graded with the reference DotProductAttention)."""

import pytest
import torch

import multihead as ref
from book import (
    BATCH_SIZE, MHA_ARGS, MHA_OUTPUT_SHAPE, MHA_VALID_LENS, NUM_HEADS, NUM_HIDDENS, NUM_KVPAIRS, NUM_QUERIES,
    random_inputs, random_lens,
)
from grader.suite.comparisons import close, require
from grader.suite.plugin import calls
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
# A first call on other inputs before the probed one: the weights kept must be the last call's.
Q_FIRST, K_FIRST = random_inputs(71, 2, 4, 5), random_inputs(72, 2, 6, 3)
# Dropout at a rate that is not the book's (0.5): 2 heads of 4 features, values [I | I] (4 keys),
# W_v and W_o the identity (set by the probe), so each head's output shows its attention weights.
DROPOUT_P = 0.3
DROPOUT_ARGS = [4, 4, 8, 8, 2, DROPOUT_P]
DROPOUT_Q, DROPOUT_K = 2 * random_inputs(73, 2, 3, 4), 2 * random_inputs(74, 2, 4, 4)
DROPOUT_V = torch.eye(4).repeat(2, 1, 2)  # (2, 4, 8)
DROPOUT_LENS = torch.tensor([3, 4])


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


def dropout_eval():
    """What the ``dropout`` probe's module gives in eval mode (W_v and W_o the identity), on the reference."""
    module = same_seed(SEED, ref.MultiHeadAttention, *DROPOUT_ARGS)
    with torch.no_grad():
        for layer in (module.W_v, module.W_o):
            layer.weight.copy_(torch.eye(layer.weight.shape[0]))
        return module(DROPOUT_Q, DROPOUT_K, DROPOUT_V, DROPOUT_LENS)


# What the reference gives on the checks' inputs: computed once, when the suite is collected (a batch's
# grading processes share them), not in every submission's checks. Each: (output, head weights).
BOOK = reference(list(MHA_ARGS), BOOK_Q, BOOK_KV, BOOK_KV, MHA_VALID_LENS)
BOOK_ONES = reference(list(MHA_ARGS), torch.ones(BATCH_SIZE, NUM_QUERIES, NUM_HIDDENS),
                      torch.ones(BATCH_SIZE, NUM_KVPAIRS, NUM_HIDDENS), torch.ones(BATCH_SIZE, NUM_KVPAIRS, NUM_HIDDENS),
                      MHA_VALID_LENS)
PARAMETERS = [p.detach() for p in same_seed(SEED, ref.MultiHeadAttention, *ARGS, bias=True).parameters()]
DROPOUT_EVAL = dropout_eval()
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
    close(output, BOOK_ONES[0], what="the book's example (inputs of ones) in eval mode, same seed as the reference")


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
    names = probed["names"] if isinstance(probed, dict) else None
    expected = [["W_q.weight", [12, 5]], ["W_q.bias", [12]], ["W_k.weight", [12, 3]], ["W_k.bias", [12]],
                ["W_v.weight", [12, 7]], ["W_v.bias", [12]], ["W_o.weight", [12, 12]], ["W_o.bias", [12]]]
    what = "parameters of MultiHeadAttention(3, 5, 7, 12, 3, 0.2, bias=True), in creation order"
    require(names == expected, "the parameters are not W_q, W_k, W_v, W_o (with bias) in that order", what=what,
            expected=", ".join(f"{n} {tuple(s)}" for n, s in expected),
            actual=", ".join(f"{n} {tuple(s)}" for n, s in names)[:600] if isinstance(names, list) else repr(names)[:80],
            hint="nn.Linear(query_size, num_hiddens, bias=bias) for W_q, key_size for W_k, value_size for W_v, "
                 "then W_o = nn.Linear(num_hiddens, num_hiddens, bias=bias); pass bias on to every layer.")
    values = probed["values"]
    require(isinstance(values, list) and len(values) == len(PARAMETERS), "no values of the parameters came back", what=what)
    for (name, _), mine, theirs in zip(expected, values, PARAMETERS, strict=True):
        close(mine, theirs, what=f"{what}: {name} after torch.manual_seed({SEED}) (the order of creation decides it)")


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
@probe(ARGS, Q, K, V, LENS_2D, before=[Q_FIRST, K_FIRST, V, LENS_1D])
def test_attention_weights(probed):
    weights = probed["weights"]
    require(weights is not None, "self.attention.attention_weights is missing after forward",
            what="the attention weights of the heads, self.attention.attention_weights",
            hint="Run the heads through self.attention = DotProductAttention(dropout); it keeps the weights.")
    close(weights, PER_QUERY[1], grid=True,
          what="self.attention.attention_weights after a second call: (batch_size * num_heads, num_queries, "
               "num_kv_pairs), each head masked with its batch item's valid lengths, those of the last call")


@pytest.mark.points(1)
@probe([3, 5, 7, 12, 3, 0.9], Q, K, V, LENS_1D)
def test_eval_disables_dropout(probed):
    close(probed["output"], DROPOUT_0_9[0],
          what="MultiHeadAttention(3, 5, 7, 12, 3, 0.9) in eval mode (dropout must do nothing)")


@pytest.mark.points(1)
@pytest.mark.probe("gradients", args=ARGS, bias=True, seed=SEED, queries=Q, keys=K, values=V, valid_lens=LENS_1D,
                   upstream=UPSTREAM, train_seed=3)
def test_gradients(probed):
    check_gradients(probed, GRADIENTS, "gradients through MultiHeadAttention (every W_q, W_k, W_v, W_o parameter, the inputs)")


@pytest.mark.points(1)
@pytest.mark.probe("dropout", args=DROPOUT_ARGS, seed=SEED, queries=DROPOUT_Q, keys=DROPOUT_K, values=DROPOUT_V,
                   valid_lens=DROPOUT_LENS, forward_seed=4)
def test_dropout_in_training(probed):
    what = (f"MultiHeadAttention(4, 4, 8, 8, 2, {DROPOUT_P}) with W_v and W_o the identity, values [I | I]: each head's "
            "output shows its attention weights after dropout")
    evaluated, trained = (probed.get("eval"), probed.get("train")) if isinstance(probed, dict) else (None, None)
    close(evaluated, DROPOUT_EVAL, what=f"{what}, in eval mode (the attention weights themselves)")
    close(trained, DROPOUT_EVAL, what=f"{what}, in training mode: its shape", atol=float("inf"))
    shown, out, scale = DROPOUT_EVAL.double(), trained.double(), 1 / (1 - DROPOUT_P)
    kept, dropped, valid = (out - scale * shown).abs() < 1e-4, out.abs() < 1e-6, shown.abs() > 1e-6
    what += f", in training mode (dropout {DROPOUT_P})"
    require(bool((kept | dropped).all()), f"some output entries are neither 0 nor {scale:.4f} x the attention weight "
            f"(1 / (1 - {DROPOUT_P}))", what=what,
            hint="Pass the constructor's dropout on to DotProductAttention(dropout), which drops the attention weights.")
    require(bool((dropped & valid).any()) and bool((kept & valid).any()), "dropout should drop some weights and keep others",
            what=what, hint="self.attention = DotProductAttention(dropout) applies dropout to the weights in training mode.")
