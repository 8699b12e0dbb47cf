"""Public tests for multi-head attention: the reshaping helpers, the book's shapes, the layers' sizes.

Here MultiHeadAttention runs on YOUR DotProductAttention from scoring.py; on GitHub it is
graded with the reference one, so a mistake in scoring.py costs points only once.
"""

import pytest
import torch

from book_values import MHA_KEYS, MHA_QUERIES, MHA_VALID_LENS, generated
from grader.suite.public_reference import same
from grader.suite.exact import require_same_names
from grader.suite.comparisons import close, require


TRANSPOSES = ["transpose_qkv", "transpose_output"]  # the functions the round trip calls by name


@pytest.mark.points(1)
@pytest.mark.probe("round_trip", x=MHA_QUERIES, num_heads=5, functions=TRANSPOSES)
def test_transpose_round_trip(probed):
    split = probed["split"]
    require(getattr(split, "shape", None) == (10, 4, 20), "transpose_qkv(X of shape (2, 4, 100), 5) should have shape (10, 4, 20)",
            what="transpose_qkv(X, 5)", expected="shape (10, 4, 20)", actual=str(getattr(split, "shape", type(split))))
    close(probed["back"], MHA_QUERIES, what="transpose_output(transpose_qkv(X, 5), 5) (should give X back)")


@pytest.mark.points(1)
@pytest.mark.probe("output", queries=MHA_QUERIES, keys=MHA_KEYS, valid_lens=MHA_VALID_LENS)
def test_multi_head_attention_book_shape(probed):
    require(getattr(probed, "shape", None) == (2, 4, 100), "the output should have shape (2, 4, 100)",
            what="MultiHeadAttention(100, 100, 100, 100, 5, 0.5) in eval mode", expected="shape (2, 4, 100)",
            actual=str(getattr(probed, "shape", type(probed))))


# Other sizes and values (the reference's results, from catalog.json).
X_SPLIT = generated(41, 2, 4, 6)
Q, K, V = generated(42, 2, 4, 5), generated(43, 2, 6, 6), generated(44, 2, 6, 7)
LENS = torch.tensor([2, 5])
LENS_PER_QUERY = torch.tensor([[1, 6, 3, 2], [5, 2, 6, 4]])  # (batch_size, num_queries): one length per query


@pytest.mark.points(1)
@pytest.mark.probe("round_trip", x=X_SPLIT, num_heads=3, functions=TRANSPOSES)
def test_transpose_qkv_values(probed, reference):
    same(probed, reference, what="transpose_qkv(X of shape (2, 4, 6), 3) and transpose_output of that")


@pytest.mark.points(1)
@pytest.mark.probe("attend", args=[6, 5, 7, 12, 3, 0.5], seed=7, queries=Q, keys=K, values=V, valid_lens=LENS)
def test_multi_head_attention_other_sizes(probed, reference):
    same(probed, reference, what="torch.manual_seed(7); MultiHeadAttention(key_size=6, query_size=5, value_size=7, "
                                 "num_hiddens=12, num_heads=3, dropout=0.5) in eval mode on queries (2, 4, 5), keys "
                                 "(2, 6, 6), values (2, 6, 7), valid_lens [2, 5]")


@pytest.mark.points(1)
@pytest.mark.probe("attend", args=[6, 5, 7, 12, 3, 0.5], seed=7, queries=Q, keys=K, values=V, valid_lens=LENS_PER_QUERY)
def test_multi_head_attention_valid_lens_per_query(probed, reference):
    same(probed, reference, what="torch.manual_seed(7); MultiHeadAttention(key_size=6, query_size=5, value_size=7, "
                                 "num_hiddens=12, num_heads=3, dropout=0.5) in eval mode on queries (2, 4, 5), keys "
                                 "(2, 6, 6), values (2, 6, 7), valid_lens [[1, 6, 3, 2], [5, 2, 6, 4]] of shape (2, 4): "
                                 "one valid length per query, the same for every head")


@pytest.mark.points(1)
@pytest.mark.probe("attend", args=[6, 5, 7, 12, 3, 0.5], seed=7, queries=Q, keys=K, values=V, valid_lens=None)
def test_multi_head_attention_without_valid_lens(probed, reference):
    same(probed, reference, what="torch.manual_seed(7); MultiHeadAttention(key_size=6, query_size=5, value_size=7, "
                                 "num_hiddens=12, num_heads=3, dropout=0.5) in eval mode on queries (2, 4, 5), keys "
                                 "(2, 6, 6), values (2, 6, 7), valid_lens None (every key counts; nothing to repeat "
                                 "per head)")

@pytest.mark.points(1)
@pytest.mark.probe("parameters", args=[6, 5, 7, 12, 3, 0.5])
def test_layer_sizes(probed, reference):
    what = ("MultiHeadAttention(key_size=6, query_size=5, value_size=7, num_hiddens=12, num_heads=3, dropout=0.5): "
            "its parameters' names and shapes, in creation order")
    shapes = dict((name, shape) for name, shape in probed) if isinstance(probed, list) else {}
    for layer, size, name in (("W_q", 5, "query_size"), ("W_k", 6, "key_size"), ("W_v", 7, "value_size")):
        weight = shapes.get(f"{layer}.weight")
        require(not (isinstance(weight, list) and len(weight) == 2 and weight[1] != size),
                f"{layer}.weight has shape {tuple(weight or ())}: {layer} takes inputs of {(weight or [0, 0])[-1]} "
                f"features, expected {name} = {size}", what=what,
                hint=f"{layer} = nn.Linear({name}, num_hiddens, bias=bias): it projects the "
                     f"{name.split('_')[0]}s, of {name} features.")
    require_same_names(shapes, reference, what)
    same(probed, reference, what=what)


@pytest.mark.points(1)
@pytest.mark.probe("train_then_eval", args=[6, 5, 7, 12, 3, 0.5], seed=7, queries=Q, keys=K, values=V, valid_lens=LENS)
def test_dropout_acts_in_training(probed):
    what = ("torch.manual_seed(7); MultiHeadAttention(key_size=6, query_size=5, value_size=7, num_hiddens=12, "
            "num_heads=3, dropout=0.5) on queries (2, 4, 5), keys (2, 6, 6), values (2, 6, 7), valid_lens [2, 5], in "
            "training mode, then in eval mode")
    train, evaluated = (probed.get(key) if isinstance(probed, dict) else None for key in ("train", "eval"))
    require(isinstance(train, torch.Tensor) and isinstance(evaluated, torch.Tensor) and train.shape == evaluated.shape,
            "forward should return one tensor of the same shape in both modes", what=what)
    require(not torch.allclose(train.double(), evaluated.double(), atol=1e-6),
            "the output in training mode equals the output in eval mode: with dropout=0.5, dropout does nothing",
            what=what, hint="In training mode the attention drops weights at the constructor's rate "
                           "(self.attention = DotProductAttention(dropout)), and its output goes on to W_o.")
