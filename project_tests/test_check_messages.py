"""The checks' own messages: a failing check states the cause where an exact test of the student's
values confirms it (and only then), in the hidden suite and in the public one alike.

The suites' test functions are called here, in this process, with values a probe could have
returned; the suites' folders are on ``sys.path`` only while one is loaded (they share module names).
"""

from __future__ import annotations

import importlib.util
import sys

import pytest
import torch
from torch import nn

from grader.suite.comparisons import Mismatch
from grader.suite.exact import NOT_COPIED_HINT
from project_tests.helpers import ROOT

ORDER = ("W_query", "W_key", "W_value")


def load(suite: str, name: str, *extra: str):
    """``<suite>/<name>.py`` as a fresh module, with its folder (and ``extra`` folders) importable
    while it loads; the modules it imported are forgotten afterwards."""
    folders = [str(ROOT / suite), *(str(ROOT / e) for e in extra)]
    path, modules = list(sys.path), dict(sys.modules)
    sys.path[:0] = folders
    try:
        spec = importlib.util.spec_from_file_location(f"suite_{suite.replace('/', '_')}_{name}", ROOT / suite / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module
    finally:
        sys.path[:] = path
        for added in set(sys.modules) - set(modules):
            del sys.modules[added]


@pytest.fixture(scope="module")
def suites(request):
    """The suites' modules this file calls (their markers registered first: --strict-markers)."""
    for marker in ("points(n): the check's points", "probe(name, **kwargs): the probe a check reads"):
        request.config.addinivalue_line("markers", marker)
    return {
        "hidden_transfer": load("tests/ch03", "test_weight_transfer", "solutions/ch03"),
        "public_transfer": load("public_tests/ch03", "test_weight_transfer"),
        "hidden_behaviour": load("tests/ch03", "behaviour"),
        "public_dropout": load("public_tests/ch03", "dropout_behaviour"),
        "public_v2": load("public_tests/ch03", "test_self_attention_v2"),
        "public_mha": load("public_tests/ch03", "test_mha"),
        "public_s2s": load("public_tests/d2l_attention", "test_seq2seq_attention"),
        "public_multihead": load("public_tests/d2l_attention", "test_multihead"),
    }


def failure(check, *args, **kwargs) -> Mismatch:
    with pytest.raises(Mismatch) as caught:
        check(*args, **kwargs)
    return caught.value


# -- Exercise 3.1: what sa_v1's matrix holds after the copy ---------------------------------------------


def hidden_copy(transfer, matrices: dict) -> dict:
    """What the hidden probe returns for a copy that left ``matrices`` in sa_v1 (before any output)."""
    return {"v1_matrices": matrices, "v1_params": {}, "v1_error": "not run here"}


def test_hidden_transfer_names_the_layer_whose_weights_w_query_holds(suites):
    t = suites["hidden_transfer"].SEED_42
    matrices = {**t.matrices, "W_query": t.v2_weights["W_key"].T.clone()}
    found = failure(suites["hidden_transfer"].test_other_seed, hidden_copy(t, matrices))
    assert found.message == "after the copy sa_v1.W_query holds sa_v2.W_key.weight.T (W_key's weights, not W_query's)"
    assert "same name" in found.feedback.hint


def test_hidden_transfer_says_reshaped_not_transposed_and_for_square_weights_not_transposed(suites):
    t = suites["hidden_transfer"].SIZES_5_4
    matrices = {**t.matrices, "W_key": t.v2_weights["W_key"].reshape(5, 4)}
    found = failure(suites["hidden_transfer"].test_other_sizes, hidden_copy(t, matrices))
    assert found.message == "after the copy sa_v1.W_key holds sa_v2.W_key.weight reshaped to (5, 4), not transposed"
    assert "reshape" in found.feedback.hint
    square = suites["hidden_transfer"].SQUARE
    matrices = {**square.matrices, "W_value": square.v2_weights["W_value"].clone()}
    found = failure(suites["hidden_transfer"].test_square_weights_transposed, hidden_copy(square, matrices))
    assert found.message == "after the copy sa_v1.W_value holds sa_v2.W_value.weight itself, not transposed"


def test_hidden_transfer_says_which_matrix_the_copy_never_changed(suites):
    t = suites["hidden_transfer"].SEED_11  # v1 built after its own seed: its matrices before the copy are known here
    matrices = {**t.matrices, "W_value": t.before["W_value"].clone()}
    found = failure(suites["hidden_transfer"].test_v1_start_does_not_matter, hidden_copy(t, matrices))
    assert found.message == ("after the copy sa_v1.W_value still holds the values it had before the copy: "
                             "the copy never changed it")
    assert found.feedback.hint == NOT_COPIED_HINT


def test_hidden_transfer_says_nothing_of_a_cause_without_an_exact_relation(suites):
    t = suites["hidden_transfer"].SEED_42
    matrices = {**t.matrices, "W_query": t.v2_weights["W_key"].T + 1e-3}  # close to W_key's, not equal
    found = failure(suites["hidden_transfer"].test_other_seed, hidden_copy(t, matrices))
    assert "holds" not in found.message and "values differ" in found.message and not found.feedback.hint


def public_copy(v2: dict, v1: dict, before: dict | None = None) -> dict:
    before = before or {name: torch.full(w.T.shape, 0.5) for name, w in v2.items()}
    return {"v1": v1, "v2": v2, "v1_before": before}


def test_public_transfer_says_what_the_hidden_grade_says(suites):
    torch.manual_seed(0)
    v2 = {name: torch.rand(2, 3) for name in ORDER}
    right = {name: w.T.clone() for name, w in v2.items()}
    check = suites["public_transfer"].test_copies_transposed_weights
    check(public_copy(v2, right))  # passes
    found = failure(check, public_copy(v2, {**right, "W_key": v2["W_key"].clone()}))
    assert found.message == "sa_v1.W_key has shape (2, 3) after the copy, expected (3, 2)"
    assert found.feedback.hint == suites["hidden_transfer"].NOT_TRANSPOSED_HINT
    found = failure(check, public_copy(v2, {**right, "W_query": v2["W_key"].T.clone()}))
    assert found.message == "after the copy sa_v1.W_query holds sa_v2.W_key.weight.T (W_key's weights, not W_query's)"
    found = failure(check, public_copy(v2, {**right, "W_key": v2["W_key"].reshape(3, 2)}))
    assert found.message == "after the copy sa_v1.W_key holds sa_v2.W_key.weight reshaped to (3, 2), not transposed"
    found = failure(check, public_copy(v2, {**right, "W_key": right["W_key"] + 1e-3}))
    assert "holds" not in found.message
    before = {name: torch.rand(3, 2) for name in ORDER}
    found = failure(check, public_copy(v2, {**right, "W_query": before["W_query"].clone()}, before))
    assert found.message == ("after the copy sa_v1.W_query still holds the values it had before the copy: "
                             "the copy never changed it")
    assert found.feedback.hint == NOT_COPIED_HINT


def effects(kinds: dict | None = None, names: list | None = None) -> dict:
    return {"v1_kinds": {name: "Parameter" for name in ORDER} | (kinds or {}), "v1_names": names or sorted(ORDER),
            "v2_names": sorted(f"{name}.weight" for name in ORDER), "v2_unchanged": {name: True for name in ORDER}}


def test_public_transfer_accepts_new_parameters_as_the_hidden_grade_and_the_book_do(suites):
    suites["public_transfer"].test_only_v1_changes(effects())  # new nn.Parameter objects, or the old ones: either passes
    found = failure(suites["public_transfer"].test_only_v1_changes, effects(kinds={"W_value": "Tensor"}))
    assert found.message == "after the copy, sa_v1.W_value is a Tensor, not an nn.Parameter"
    found = failure(suites["public_transfer"].test_only_v1_changes, effects(names=["W_key", "W_query"]))
    assert found.message == "after the copy, sa_v1's parameters are ['W_key', 'W_query']"


# -- dropout: a rate other than the one given, named only when every kept weight shows it ----------------


def dropped(weights: torch.Tensor, factor: float, noise: float = 0.0) -> dict:
    """Two copies of ``weights`` side by side (n = 5), dropped alike: every other weight zeroed, the
    rest times ``factor`` (plus ``noise`` on one of them)."""
    keep = (torch.arange(weights.numel()) % 2 == 0).reshape(weights.shape)
    after = torch.where(keep, weights * factor, torch.zeros(()))
    after[0, -1, 0] += noise
    return {"eval": torch.cat([weights, weights], dim=-1), "train": torch.cat([after, after], dim=-1)}


WEIGHTS = torch.softmax(torch.rand(2, 5, 5) + torch.triu(torch.full((5, 5), -torch.inf), 1), dim=-1)


@pytest.mark.parametrize("side", ["hidden", "public"])
def test_dropout_with_another_rate_names_it_only_when_one_factor_explains_every_weight(suites, side):
    if side == "hidden":
        def check(probed):
            suites["hidden_behaviour"].check_dropout(probed, n=5, p=0.3, blocks=[(0, 1)], what="w", expected_eval=probed["eval"])
    else:
        def check(probed):
            suites["public_dropout"].check_dropout(probed, torch.cat([WEIGHTS, WEIGHTS], dim=-1), n=5, p=0.3, pairs=[(0, 1)],
                                         what="w")
    check(dropped(WEIGHTS, 1 / 0.7))  # the rate given: passes
    found = failure(check, dropped(WEIGHTS, 2.0))
    assert found.message.endswith("your dropout scales the weights it keeps by 2.0, that is a rate of 0.5, "
                                  "but dropout=0.3 was passed")
    found = failure(check, dropped(WEIGHTS, 2.0, noise=0.05))  # one weight off: no single factor
    assert "rate" not in found.message and "neither 0 nor scaled" in found.message
    # Weights neither 0 nor scaled show only that dropout acted on a tensor they are computed from
    # (the scores, or the input x as well): the hint says so, and names no one of them as the cause.
    assert "this check cannot tell which" in found.feedback.hint and "self.dropout(attn_weights)" in found.feedback.hint
    assert "dropout on the scores before softmax leaves" not in found.feedback.hint


# -- structure the public checks now test as the hidden grade does ---------------------------------------


def layers(without: dict, with_bias: dict) -> dict:
    linear = {"kind": "Linear", "sizes": [4, 3]}
    return {"False": {name: {**linear, "bias": without.get(name, False)} for name in ORDER},
            "True": {name: {**linear, "bias": with_bias.get(name, True)} for name in ORDER}}


def test_public_v2_names_the_layer_with_a_wrong_bias(suites):
    suites["public_v2"].test_layers_and_their_bias(layers({}, {}))
    found = failure(suites["public_v2"].test_layers_and_their_bias, layers({"W_key": True}, {}))
    assert found.message == "self.W_key has a bias although qkv_bias=False"
    found = failure(suites["public_v2"].test_layers_and_their_bias, layers({}, {"W_query": False}))
    assert found.message == "self.W_query has no bias although qkv_bias=True"


def test_public_exercise_3_2_counts_the_heads(suites):
    out = torch.zeros(2, 6, 2)
    found = failure(suites["public_mha"].test_exercise_3_2, {"type": "MultiHeadAttentionWrapper", "heads": 1, "out": out})
    assert found.message == "expected a MultiHeadAttentionWrapper with 2 heads, got a MultiHeadAttentionWrapper with 1 head"


def test_public_exercise_3_2_names_the_class_it_asks_for(suites):
    # The efficient class has no list of heads: the message names the class, with no count of None heads.
    found = failure(suites["public_mha"].test_exercise_3_2, {"type": "MultiHeadAttention", "heads": None,
                                                             "out": torch.zeros(2, 6, 2)})
    assert found.message == "expected a MultiHeadAttentionWrapper with 2 heads, got a MultiHeadAttention"
    assert "keeps MultiHeadAttentionWrapper" in found.feedback.hint


def test_public_mha_structure_names_the_missing_entry(suites):
    reference = {"buffers": ["mask"], "state_dict": ["W_key.weight", "W_query.weight", "W_value.weight", "mask",
                                                     "out_proj.bias", "out_proj.weight"]}
    mine = {"buffers": ["mask"], "state_dict": [n for n in reference["state_dict"] if n != "out_proj.bias"]}
    found = failure(suites["public_mha"].test_multi_head_attention_mask_is_a_buffer, mine, reference)
    assert found.message.endswith("state_dict has no out_proj.bias")


def test_public_seq2seq_says_time_first_outputs_and_the_gru_input_size(suites):
    found = failure(suites["public_s2s"].test_book_shapes, {"output_shape": [7, 4, 10], "state_length": 3,
                                                  "state_shapes": [[4, 7, 16], [2, 4, 16]]})
    assert found.message.startswith("the output has shape (7, 4, 10): (num_steps, batch_size, vocab_size)")
    assert "permute(1, 0, 2)" in found.feedback.hint
    torch.manual_seed(0)
    decoder = nn.GRU(8, 16, 2)  # the mistake: only the embedded token goes in
    mine = [[f"rnn.{name}", list(p.shape)] for name, p in decoder.named_parameters()]
    reference = [[f"rnn.{name}", list(p.shape)] for name, p in nn.GRU(24, 16, 2).named_parameters()]
    found = failure(suites["public_s2s"].test_decoder_parameters, mine, reference)
    assert found.message.startswith("rnn.weight_ih_l0 has shape (48, 8): the GRU takes inputs of 8 numbers")
    assert "nn.GRU(embed_size + num_hiddens" in found.feedback.hint


def test_public_bleu_works_out_the_case_that_differs(suites):
    reference = [0.5373, 0.3679, 0.5623, 0.5368]
    found = failure(suites["public_s2s"].test_bleu_repeated_ngrams_and_lengths, [0.5373, 1.0, 0.5623, 0.5368], reference)
    assert found.message == "bleu('a b c', 'a b c d e f', 2): expected 0.3679, got 1.0"
    assert "exp(min(0, 1 - 6/3))" in found.feedback.hint


def test_public_multihead_names_the_layer_of_the_wrong_input_size(suites):
    reference = [["W_q.weight", [12, 5]], ["W_k.weight", [12, 6]], ["W_v.weight", [12, 7]], ["W_o.weight", [12, 12]]]
    mine = [reference[0], ["W_k.weight", [12, 5]], *reference[2:]]
    found = failure(suites["public_multihead"].test_layer_sizes, mine, reference)
    assert found.message == "W_k.weight has shape (12, 5): W_k takes inputs of 5 features, expected key_size = 6"
    assert found.feedback.hint.startswith("W_k = nn.Linear(key_size, num_hiddens")


def test_public_multihead_names_a_parameter_the_reference_does_not_have(suites):
    reference = [["W_q.weight", [12, 5]], ["W_k.weight", [12, 6]], ["W_v.weight", [12, 7]], ["W_o.weight", [12, 12]]]
    found = failure(suites["public_multihead"].test_layer_sizes, [*reference, ["W_o.bias", [12]]], reference)
    assert found.message.endswith(": unexpected W_o.bias")


def test_a_list_of_another_length_shows_yours_beside_the_expected():
    """The public check's "yours:" is never blank for a list of another length (it said nothing)."""
    import pytest

    from grader.suite.comparisons import Mismatch
    from grader.suite.public_reference import same

    with pytest.raises(Mismatch) as raised:
        same([1.0] * 10, [1.0] * 5, what="weights")
    assert raised.value.feedback.expected == "5 items" and raised.value.feedback.actual == "10 items"
    assert raised.value.message == "weights: expected 5 items, got 10"
    with pytest.raises(Mismatch) as raised:
        same(None, [1.0] * 5, what="weights")
    assert raised.value.feedback.actual == "a NoneType"


def test_the_rotation_check_fails_a_table_with_nan_as_the_students_check_never_as_an_error():
    """A position table holding nan or inf is the student's failed check, with where; it never reaches
    lstsq (which raises an internal error on it) on either side."""
    import pytest

    from grader.suite.comparisons import Mismatch
    from grader.suite.exact import positions_are_rotations

    angles = torch.arange(64.0).reshape(-1, 1) / torch.pow(10000, torch.arange(0, 16, 2) / 16)
    table = torch.zeros(64, 16)
    table[:, 0::2], table[:, 1::2] = torch.sin(angles), torch.cos(angles)
    positions_are_rotations(table, 16)  # the formula's table passes
    for bad in (float("nan"), float("inf")):
        broken = table.clone()
        broken[5:, 2] = bad
        with pytest.raises(Mismatch) as raised:
            positions_are_rotations(broken, 16)
        assert raised.value.message.endswith("not finite (nan or inf), first at [5, 2]")
    frequency = table.clone()
    frequency[:, 2:4] = table[:, 4:6]  # pair 1 holds pair 2's frequency: a fixed map, not the rotation
    with pytest.raises(Mismatch) as raised:
        positions_are_rotations(frequency, 16)
    assert raised.value.feedback.hint.startswith("P[i + delta] is a fixed map of P[i], but not the rotation")
