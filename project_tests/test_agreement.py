"""The public check and the hidden grade agree (issue 34, items 3 and 4): for the same code they
catch the same mistakes and name the same concept, and a correct alternative passes both.

Each case is one submission (the reference solutions with one text change, as in
``unseen_mistakes.toml``), graded in the hidden grade and checked with the public check of a
released template; the assertions read the reports both print.
"""

from __future__ import annotations

import pytest

from project_tests.test_unseen_mistakes import graded_as_students, unseen

CASES = [
    # Correct alternatives: full marks on both sides.
    {"id": "pe-table-frozen-parameter", "assignment": "d2l_attention", "module": "positional_encoding",
     "old": "self.P[:, :, 1::2] = torch.cos(X)",
     "new": "self.P[:, :, 1::2] = torch.cos(X)\n        self.P = nn.Parameter(self.P, requires_grad=False)"},
    {"id": "pe-table-parameter", "assignment": "d2l_attention", "module": "positional_encoding",
     "old": "self.P[:, :, 1::2] = torch.cos(X)",
     "new": "self.P[:, :, 1::2] = torch.cos(X)\n        self.P = nn.Parameter(self.P)"},
    {"id": "ms-finite-minimum", "assignment": "d2l_attention", "module": "masked_softmax",
     "old": "valid_lens, value=-1e6", "new": "valid_lens, value=torch.finfo(X.dtype).min"},
    # Mistakes: both sides lose points and say the same thing.
    {"id": "dot-queries-scaled-in-place", "assignment": "d2l_attention", "module": "scoring",
     "old": "d = queries.shape[-1]\n        scores = torch.bmm(queries, keys.transpose(1, 2)) / math.sqrt(d)",
     "new": "d = queries.shape[-1]\n        queries /= math.sqrt(d)\n        scores = torch.bmm(queries, keys.transpose(1, 2))"},
    {"id": "pe-added-in-place", "assignment": "d2l_attention", "module": "positional_encoding",
     "old": "X = X + self.P[:, : X.shape[1], :].to(X.device)", "new": "X += self.P[:, : X.shape[1], :].to(X.device)"},
    {"id": "ms-minus-inf", "assignment": "d2l_attention", "module": "masked_softmax",
     "old": "valid_lens, value=-1e6", "new": "valid_lens, value=float('-inf')"},
    {"id": "causal-dropout-on-scores", "assignment": "ch03", "module": "causal",
     "old": "        attn_scores.masked_fill_(",
     "new": "        attn_scores = self.dropout(attn_scores)\n        attn_scores.masked_fill_("},
    {"id": "mha-sdpa-dropout-in-eval", "assignment": "ch03", "module": "mha",
     "old": "        attn_scores = queries @ keys.transpose(2, 3)  # (b, num_heads, num_tokens, num_tokens)\n",
     "new": "        context_vec = torch.nn.functional.scaled_dot_product_attention(\n"
            "            queries, keys, values, dropout_p=self.dropout.p, is_causal=True).transpose(1, 2)\n"
            "        return self.out_proj(context_vec.contiguous().view(b, num_tokens, self.d_out))\n"
            "        attn_scores = queries @ keys.transpose(2, 3)  # (b, num_heads, num_tokens, num_tokens)\n"},
    {"id": "s2s-weights-kept-across-calls", "assignment": "d2l_attention", "module": "seq2seq_attention",
     "old": "outputs, self._attention_weights = [], []", "new": "outputs = []"},
    {"id": "additive-weights-after-dropout", "assignment": "d2l_attention", "module": "scoring",
     "old": "        self.attention_weights = masked_softmax(scores, valid_lens)\n        return torch.bmm(self.dropout(self.attention_weights), values)  # (b, num_queries, value_size)\n        ### END SOLUTION\n\n\nclass DotProductAttention",
     "new": "        self.attention_weights = self.dropout(masked_softmax(scores, valid_lens))\n        return torch.bmm(self.attention_weights, values)  # (b, num_queries, value_size)\n        ### END SOLUTION\n\n\nclass DotProductAttention"},
    {"id": "wrapper-head-arguments-swapped", "assignment": "ch03", "module": "mha",
     "old": "CausalAttention(d_in, d_out, context_length, dropout, qkv_bias)\n",
     "new": "CausalAttention(d_in, d_out, context_length, dropout=qkv_bias, qkv_bias=dropout)\n"},
    {"id": "bleu-each-n-gram-once", "assignment": "d2l_attention", "module": "seq2seq_attention",
     "old": "        for i in range(len_pred - n + 1):\n"
            "            if label_subs[\" \".join(pred_tokens[i: i + n])] > 0:\n"
            "                num_matches += 1\n"
            "                label_subs[\" \".join(pred_tokens[i: i + n])] -= 1\n",
     "new": "        seen = set()\n"
            "        for i in range(len_pred - n + 1):\n"
            "            gram = \" \".join(pred_tokens[i: i + n])\n"
            "            if label_subs[gram] > 0 and gram not in seen:\n"
            "                num_matches += 1\n"
            "                seen.add(gram)\n"},
    # Blind spots of the public check: inputs the books' code handles that only the hidden suite tried.
    {"id": "mh-valid-lens-none-unguarded", "assignment": "d2l_attention", "module": "multihead",
     "old": "        if valid_lens is not None:\n            valid_lens = torch.repeat_interleave(\n"
            "                valid_lens, repeats=self.num_heads, dim=0\n            )",
     "new": "        valid_lens = torch.repeat_interleave(valid_lens, repeats=self.num_heads, dim=0)"},
    {"id": "s2s-query-second-layer", "assignment": "d2l_attention", "module": "seq2seq_attention",
     "old": "query = torch.unsqueeze(hidden_state[-1], dim=1)", "new": "query = torch.unsqueeze(hidden_state[1], dim=1)"},
    {"id": "ex32-efficient-class", "assignment": "ch03", "module": "mha",
     "old": "return MultiHeadAttentionWrapper(d_in, 1, context_length, dropout, num_heads=2)",
     "new": "return MultiHeadAttention(d_in, 2, context_length, dropout, num_heads=2)"},
]
CORRECT = {"pe-table-frozen-parameter", "pe-table-parameter", "ms-finite-minimum"}
SIDES = ("hidden", "public")


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    return graded_as_students(CASES, tmp_path_factory, "agreement")


def views(graded, case_id: str) -> dict:
    case = next(c for c in CASES if c["id"] == case_id)
    return {side: unseen.module_view(graded[side][case_id], case["module"]) for side in SIDES}


def said(view: dict) -> str:
    """Everything the module's feedback says: the failing checks' messages and hints, the concepts."""
    concepts = (view["diagnosis"] or {}).get("concepts") or []
    return " ".join([*(f"{t['message']} {t['hint']}" for t in view["failing"]), *concepts])


@pytest.mark.parametrize("case_id", sorted(CORRECT))
def test_a_correct_alternative_keeps_full_marks_on_both_sides(graded, case_id):
    for side, view in views(graded, case_id).items():
        assert view["score"] == view["max_score"] and not view["failing"] and not view["grader_errors"], (side, view)


@pytest.mark.parametrize("case_id, words", [
    ("dot-queries-scaled-in-place", "changed the queries it was given"),
    ("pe-added-in-place", "changed the X it was given"),
    ("ex32-efficient-class", "expected a MultiHeadAttentionWrapper with 2 heads, got a MultiHeadAttention"),
    ("causal-dropout-on-scores", "self.dropout to the attention weights"),
    ("mha-sdpa-dropout-in-eval", "Dropout stays on in eval mode: apply dropout only while training"),
    ("s2s-weights-kept-across-calls", "the list of the last forward call, not of every call so far"),
    ("additive-weights-after-dropout", "self.attention_weights holds the weights after dropout"),
    ("ms-minus-inf", "not -inf: a row of valid length 0"),
    ("bleu-each-n-gram-once", "\"the\" counts twice"),
    ("wrapper-head-arguments-swapped", "CausalAttention takes (d_in, d_out, context_length, dropout, qkv_bias)"),
    ("mh-valid-lens-none-unguarded", "TypeError: repeat_interleave()"),
    ("s2s-query-second-layer", "IndexError: index 1 is out of bounds"),
])
def test_a_mistake_loses_points_on_both_sides_and_is_named_alike(graded, case_id, words):
    for side, view in views(graded, case_id).items():
        assert view["score"] < view["max_score"] and not view["grader_errors"], (side, view)
        assert words in said(view), (side, said(view))
        assert not view["other_modules_failing"], (side, view["other_modules_failing"])


def test_dropout_on_the_scores_is_not_blamed_on_the_rate(graded):
    for side, view in views(graded, "causal-dropout-on-scores").items():
        assert "rate the constructor" not in said(view) and "nn.Dropout(dropout)." not in said(view), (side, said(view))


def test_exercise_3_2_with_another_class_shows_no_step_of_correct_code(graded):
    # MultiHeadAttention is correct code of its own: a "first step that differs" inside it would
    # point at a correct line. Both sides say plainly which class Exercise 3.2 asks for. The one line
    # of the factory, which builds the other class, may be shown: it is where the answer goes wrong.
    for side, view in views(graded, "ex32-efficient-class").items():
        diagnosis = view["diagnosis"] or {}
        assert diagnosis.get("stage", "") in ("", "result"), (side, diagnosis)
        assert diagnosis.get("code", "") in ("", "return MultiHeadAttention(d_in, 2, context_length, dropout, num_heads=2)"), (side, diagnosis)
        assert all("MultiHeadAttentionWrapper" in t["message"] for t in view["failing"]), (side, view["failing"])


def test_a_row_of_valid_length_0_is_named_on_both_sides(graded):
    for side, view in views(graded, "ms-minus-inf").items():
        concepts = (view["diagnosis"] or {}).get("concepts") or []
        assert len(concepts) == 1 and "-1e6" in concepts[0], (side, concepts)


@pytest.mark.parametrize("case_id, code", [("mh-valid-lens-none-unguarded", "torch.repeat_interleave(valid_lens"),
                                           ("s2s-query-second-layer", "hidden_state[1]")])
def test_an_error_on_an_input_the_book_handles_is_shown_at_the_same_line_on_both_sides(graded, case_id, code):
    for side, view in views(graded, case_id).items():
        assert code in (view["diagnosis"] or {}).get("code", ""), (side, view["diagnosis"])
