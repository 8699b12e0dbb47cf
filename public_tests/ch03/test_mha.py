"""Public tests for section 3.6 (multi-head attention) and Exercises 3.2 and 3.3: the book's values,
then other sizes, fewer tokens than context_length, dropout, the mask buffer and gradients.

Here MultiHeadAttentionWrapper runs on YOUR CausalAttention from causal.py; on GitHub it is
graded with the reference CausalAttention, so a mistake in causal.py costs points only once.
"""

import pytest

from book_values import BATCH, EXERCISE_3_2, GPT2_PARAMETERS, MHA_SEED_123, WRAPPER_ROW_1, random_inputs
from dropout_behaviour import check_dropout
from grader.suite.exact import check_head_arguments_not_swapped
from grader.suite.public_reference import same
from grader.suite.comparisons import close, require


@pytest.mark.points(1)
@pytest.mark.probe("output", cls="MultiHeadAttentionWrapper", seed=123, args=[3, 2, 6, 0.0], kwargs={"num_heads": 2}, x=BATCH)
def test_wrapper_textbook(probed):
    require(getattr(probed, "shape", None) == (2, 6, 4), "the wrapper's output should have shape (2, 6, 4)",
            what="MultiHeadAttentionWrapper(3, 2, 6, 0.0, num_heads=2)(batch)", expected="shape (2, 6, 4)",
            actual=str(getattr(probed, "shape", type(probed))), hint="Concatenate the heads along the last dimension.")
    close(probed[0, 0], WRAPPER_ROW_1, what="first row of MultiHeadAttentionWrapper(3, 2, 6, 0.0, num_heads=2)(batch)")


@pytest.mark.points(1)
@pytest.mark.probe("output", cls="MultiHeadAttention", seed=123, args=[3, 2, 6, 0.0], kwargs={"num_heads": 2}, x=BATCH)
def test_multi_head_attention_textbook(probed):
    require(getattr(probed, "shape", None) == (2, 6, 2), "the output should have shape (2, 6, 2)",
            what="MultiHeadAttention(3, 2, 6, 0.0, num_heads=2)(batch)", expected="shape (2, 6, 2)",
            actual=str(getattr(probed, "shape", type(probed))))
    close(probed[0], MHA_SEED_123, what="MultiHeadAttention(3, 2, 6, 0.0, num_heads=2)(batch), first batch item")


EXERCISE_3_2_HINT = ("Exercise 3.2 keeps MultiHeadAttentionWrapper(d_in, ..., context_length, dropout, num_heads=2), two "
                     "CausalAttention heads side by side, and changes one of its arguments; MultiHeadAttention (one "
                     "projection split into heads, then out_proj) computes other numbers.")


@pytest.mark.points(1)
@pytest.mark.probe("exercise_3_2", seed=123, x=BATCH)
def test_exercise_3_2(probed):
    count = probed["heads"]
    heads = "" if count is None else f" with {count} head{'s' if count != 1 else ''}"
    require(probed["type"] == "MultiHeadAttentionWrapper" and count == 2,
            f"expected a MultiHeadAttentionWrapper with 2 heads, got a {probed['type']}{heads}",
            what="exercise_3_2_wrapper(3, 6)", hint=EXERCISE_3_2_HINT)
    out = probed["out"]
    close(out[0] if out.dim() == 3 else out, EXERCISE_3_2,
          what="exercise_3_2_wrapper(3, 6)(batch), first batch item (the book's published notebook prints a stale "
               "output from an older softmax(dim=1) version; these values are the correct ones)")


@pytest.mark.points(1)
@pytest.mark.probe("parameter_count")
def test_exercise_3_3_parameters(probed):
    # A hint only where the difference in the count says exactly what is off (768 = d_out).
    hint = {-768: "out_proj = nn.Linear(d_out, d_out) keeps its bias (whatever qkv_bias is).",
            3 * 768: "W_query, W_key and W_value have no bias in Exercise 3.3 (qkv_bias=False).",
            -(768 * 768 + 768): "MultiHeadAttention ends with out_proj = nn.Linear(d_out, d_out)."}
    difference = probed - GPT2_PARAMETERS if type(probed) is int else None
    require(probed == GPT2_PARAMETERS, f"exercise_3_3_gpt2_attention() has {probed} parameters, expected {GPT2_PARAMETERS:,}",
            what="sum(p.numel() for p in exercise_3_3_gpt2_attention().parameters())", hint=hint.get(difference, ""))



@pytest.mark.points(1)
@pytest.mark.probe("exercise_3_3_configuration")
def test_exercise_3_3_configuration(probed):
    got = probed if isinstance(probed, dict) else {}
    what = "exercise_3_3_gpt2_attention(): num_heads, the shape of its mask buffer, its dropout rate"
    require(got.get("num_heads") == 12, f"num_heads is {got.get('num_heads')}, expected 12", what=what,
            expected="12", actual=str(got.get("num_heads")), hint="GPT-2 small has 12 attention heads.")
    mask = got.get("mask_shape")
    require(mask == [1024, 1024], f"the mask has shape {mask}, expected [1024, 1024]" if mask is not None
            else "the module has no buffer named mask (register_buffer('mask', ...)), expected one of shape [1024, 1024]",
            what=what, expected="[1024, 1024]", actual=str(mask),
            hint="GPT-2 small has a context length of 1024 tokens (context_length sets the mask's size, "
                 "not the number of parameters).")
    require(got.get("dropout") == 0.0, f"dropout is {got.get('dropout')}, expected 0.0", what=what,
            expected="0.0", actual=str(got.get("dropout")))


# Inputs no book printed; the expected results are the reference's (catalog.json).
X_SHORT = random_inputs(61, 2, 5, 4)  # 5 tokens for context_length 8
X_THREE, X_SEVEN = random_inputs(62, 2, 3, 4), random_inputs(63, 2, 7, 4)
X_DROP = random_inputs(64, 2, 6, 4)
X_GRAD = random_inputs(65, 2, 5, 4)
DROPOUT_P = 0.3  # not the book's 0.5, nor GPT-2's 0.1


@pytest.mark.points(1)
@pytest.mark.probe("output", cls="MultiHeadAttentionWrapper", seed=4, args=[4, 3, 8, 0.0],
                   kwargs={"num_heads": 3, "qkv_bias": True}, x=X_SHORT)
def test_wrapper_other_sizes(probed, reference):
    same(probed, reference, what="torch.manual_seed(4); MultiHeadAttentionWrapper(4, 3, 8, 0.0, num_heads=3, "
                                 "qkv_bias=True)(x), x of 5 tokens (2, 5, 4)")


@pytest.mark.points(1)
@pytest.mark.probe("wrapper_heads", seed=3, args=[4, 3, 7, 0.25], kwargs={"num_heads": 3})
def test_wrapper_registers_its_heads(probed, reference):
    what = ("MultiHeadAttentionWrapper(4, 3, 7, 0.25, num_heads=3): the number of its parameters, whether model.eval() "
            "reaches every head (nn.ModuleList), each head's dropout rate and whether it has a qkv bias")
    if isinstance(probed, dict):
        check_head_arguments_not_swapped(probed.get("dropout"), probed.get("bias"), 0.25, False, what)
    same(probed, reference, what=what)


@pytest.mark.points(1)
@pytest.mark.probe("output", cls="MultiHeadAttention", seed=21, args=[4, 6, 8, 0.0],
                   kwargs={"num_heads": 2, "qkv_bias": True}, x=X_SHORT)
def test_multi_head_attention_other_sizes(probed, reference):
    same(probed, reference, what="torch.manual_seed(21); MultiHeadAttention(4, 6, 8, 0.0, num_heads=2, "
                                 "qkv_bias=True)(x): 2 heads of 3 features, x of 5 tokens (2, 5, 4)")


@pytest.mark.points(1)
@pytest.mark.probe("outputs", cls="MultiHeadAttention", seed=22, args=[4, 4, 8, 0.0, 2], xs=[X_THREE, X_SEVEN])
def test_multi_head_attention_shorter_then_longer(probed, reference):
    same(probed, reference, what="torch.manual_seed(22); m = MultiHeadAttention(4, 4, 8, 0.0, 2); m(x of 3 tokens), "
                                 "then m(x of 7 tokens)")


@pytest.mark.points(1)
@pytest.mark.probe("output", cls="MultiHeadAttention", seed=24, args=[4, 6, 6, 0.5], kwargs={"num_heads": 2}, x=X_DROP)
def test_multi_head_attention_eval_mode(probed, reference):
    same(probed, reference, what="torch.manual_seed(24); MultiHeadAttention(4, 6, 6, 0.5, num_heads=2) in eval mode, "
                                 "applied to x (2, 6, 4): no dropout")


@pytest.mark.points(1)
@pytest.mark.probe("dropout", seed=25, n=5, p=DROPOUT_P)
def test_multi_head_attention_dropout(probed, reference):
    check_dropout(probed, reference["eval"], n=5, p=DROPOUT_P, pairs=[(0, 1), (2, 3)],
                  what=f"MultiHeadAttention(5, 20, 5, {DROPOUT_P}, 2) with values [I | I] per head and out_proj "
                       "the identity, applied to the identity in eval mode, then in training mode")


@pytest.mark.points(1)
@pytest.mark.probe("structure", cls="MultiHeadAttention", args=[4, 6, 5, 0.0, 3])
def test_multi_head_attention_mask_is_a_buffer(probed, reference):
    what = "MultiHeadAttention(4, 6, 5, 0.0, 3): the names of its buffers and state_dict entries"
    for part in ("buffers", "state_dict"):  # which names differ, where both are lists of names
        mine = probed.get(part) if isinstance(probed, dict) else None
        if isinstance(mine, list):
            missing = [name for name in reference[part] if name not in mine]
            extra = [str(name) for name in mine if name not in reference[part]]
            said = "; ".join(text for text in (missing and "no " + ", ".join(missing),
                                               extra and "unexpected " + ", ".join(extra)) if text)
            require(not said, f"{what}: {part} has {said}"[:300], what=what)
    same(probed, reference, what=what)


@pytest.mark.points(1)
@pytest.mark.probe("gradients", cls="MultiHeadAttention", seed=26, args=[4, 6, 5, 0.5, 2], kwargs={"qkv_bias": True},
                   x=X_GRAD, train_seed=2)
def test_multi_head_attention_gradients(probed, reference):
    same(probed, reference, what="torch.manual_seed(26); MultiHeadAttention(4, 6, 5, 0.5, 2, qkv_bias=True): one "
                                 "forward and backward pass in training mode, then the gradients of a weighted sum "
                                 "of the output in eval mode")
