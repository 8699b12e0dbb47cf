"""Public tests for Bahdanau attention: the book's shapes, the attention weights per step, BLEU, the
decoder's parameters and its GRU's dropout.

Here the decoder runs on YOUR AdditiveAttention from scoring.py; on GitHub it is graded
with the reference one, so a mistake in scoring.py costs points only once.
"""

import math

import pytest
import torch

from book_values import SEQ2SEQ_X, generated
from grader.suite.public_reference import same
from grader.suite.exact import require_same_names
from grader.suite.comparisons import require

LENS = torch.tensor([7, 3, 5, 1])


@pytest.mark.points(1)
@pytest.mark.probe("book_example", X=SEQ2SEQ_X, enc_valid_lens=None)
def test_book_shapes(probed):
    got = (probed["output_shape"], probed["state_length"], probed["state_shapes"])
    expected = ([4, 7, 10], 3, [[4, 7, 16], [2, 4, 16]])
    require(got[0] != [7, 4, 10], "the output has shape (7, 4, 10): (num_steps, batch_size, vocab_size), not "
            "(batch_size, num_steps, vocab_size)", what="Seq2SeqAttentionDecoder(10, 8, 16, 2)(X of shape (4, 7), state)",
            expected="output (4, 7, 10)", actual="output (7, 4, 10)",
            hint="outputs are (batch_size, num_steps, vocab_size): apply dense to the concatenated GRU outputs "
                 "(num_steps, batch_size, num_hiddens), then permute(1, 0, 2).")
    require(got == expected, "the shapes differ from the book's",
            what="Seq2SeqEncoder(10, 8, 16, 2), Seq2SeqAttentionDecoder(10, 8, 16, 2), X zeros (4, 7)",
            expected="output (4, 7, 10); state of 3 items, state[0] (4, 7, 16), state[1] (2, 4, 16)",
            actual=f"output {tuple(got[0])}; state of {got[1]} items, shapes {got[2]}")


@pytest.mark.points(1)
@pytest.mark.probe("book_example", X=SEQ2SEQ_X, enc_valid_lens=LENS)
def test_attention_weights_per_step(probed):
    weights = probed["weights"]
    what = "decoder.attention_weights with enc_valid_lens [7, 3, 5, 1]"
    require(len(weights) == 7 and all(getattr(w, "shape", None) == (4, 1, 7) for w in weights),
            "attention_weights should hold 7 tensors (one per decoding step) of shape (4, 1, 7)", what=what,
            expected="7 tensors of shape (4, 1, 7)", actual=f"{len(weights)} items")
    for step, w in enumerate(weights):
        require(torch.allclose(w.sum(-1), torch.ones(4, 1), atol=1e-4), f"step {step}: the weights do not sum to 1",
                what=what)
        beyond = torch.arange(7)[None, None, :] >= LENS[:, None, None]
        require(bool((w[beyond].abs() < 1e-6).all()), f"step {step}: padding positions get weight",
                what=what, hint="Pass enc_valid_lens on to self.attention.")


@pytest.mark.points(1)
@pytest.mark.probe("scores", cases=[["a b c d", "a b c d", 2], ["a b", "c d", 2]])
def test_bleu_exact_match_and_no_overlap(probed):
    require([round(s, 6) if type(s) in (int, float) else s for s in probed] == [1.0, 0.0], "bleu should give 1 for an exact match, 0 without overlap",
            what="bleu('a b c d', 'a b c d', 2) and bleu('a b', 'c d', 2)", expected="[1.0, 0.0]", actual=repr(probed)[:80])


# Values, not only shapes (the reference's results, from catalog.json): teacher forcing on other tokens.
TOKENS = generated(51, 3, 5).mul(10).long()  # (3, 5) tokens of a vocabulary of 10
TOKEN_LENS = torch.tensor([5, 2, 4])
SEEDED = "torch.manual_seed(3); Seq2SeqEncoder(10, 8, 16, 2), Seq2SeqAttentionDecoder(10, 8, 16, 2) in eval mode"


@pytest.mark.points(1)
@pytest.mark.probe("teacher_forced", seed=3, X=TOKENS, enc_valid_lens=TOKEN_LENS)
def test_teacher_forced_values(probed, reference):
    same(probed, reference, what=f"{SEEDED}; decoder(X, decoder.init_state(encoder(X), [5, 2, 4])), X of shape (3, 5): "
                                 "the output, the new state's hidden state and valid lengths, and the attention weights")


@pytest.mark.points(1)
@pytest.mark.probe("teacher_forced", seed=3, X=TOKENS, enc_valid_lens=TOKEN_LENS, calls=2)
def test_second_call(probed, reference):
    weights, steps = probed["weights"], len(reference["weights"])
    require(len(weights) == steps, f"attention_weights should hold the {steps} steps of the last call only",
            what=f"{SEEDED}; the decoder called twice from the same state: decoder.attention_weights",
            expected=f"{steps} tensors (the second call's steps)", actual=f"{len(weights)} tensors",
            hint="Start a new list at the beginning of forward and append self.attention.attention_weights at "
                 "every step: the attention_weights property returns the list of the last forward call"
                 + (", not of every call so far." if len(weights) > steps else "."))
    same(probed, reference, what=f"{SEEDED}; the decoder called twice from the same state: the second call's output, "
                                 "hidden state and attention weights (one per step of that call)")


@pytest.mark.points(1)
@pytest.mark.probe("teacher_forced", seed=3, X=TOKENS, enc_valid_lens=TOKEN_LENS, num_layers=1)
def test_one_gru_layer(probed, reference):
    same(probed, reference, what="torch.manual_seed(3); Seq2SeqEncoder(10, 8, 16, 1), Seq2SeqAttentionDecoder(10, 8, "
                                 "16, 1) in eval mode (one GRU layer: the query is the last layer's state, "
                                 "hidden_state[-1]); decoder(X, decoder.init_state(encoder(X), [5, 2, 4])): the output, "
                                 "the new state's hidden state and valid lengths, and the attention weights")


def worked_bleu(pred: str, label: str, matches: list[tuple[int, int]]) -> str:
    """Every factor of the expected BLEU, worked out by hand: the brevity penalty and each clipped
    precision p_n = matches / n-grams of the prediction (``matches[n - 1]``), then their product."""
    len_pred, len_label = len(pred.split(" ")), len(label.split(" "))
    penalty = math.exp(min(0, 1 - len_label / len_pred))
    powered = [(num / den) ** (0.5 ** n) for n, (num, den) in enumerate(matches, 1)]
    formula = " * ".join(["penalty", *(f"p_{n} ** (1/{2 ** n})" for n in range(1, len(matches) + 1))])
    grams = {1: "unigram", 2: "bigram", 3: "trigram"}
    clipped = "; a label n-gram matches at most as often as it occurs there"
    precisions = [f"p_{n} = {num}/{den} ({num} of the prediction's {den} {grams[n]}{'s' if den != 1 else ''} found "
                  f"in the label{clipped if n == 1 else ''})" for n, (num, den) in enumerate(matches, 1)]
    return (f"BLEU = {formula}, with penalty = exp(min(0, 1 - {len_label}/{len_pred})) = {penalty:.4f} (label of "
            f"{len_label} tokens, prediction of {len_pred}); {'; '.join(precisions)}: BLEU = "
            f"{' * '.join(f'{f:.4f}' for f in [penalty, *powered])} = {math.prod([penalty, *powered]):.4f}.")


# Each case of test_bleu_repeated_ngrams_and_lengths, its factors worked out by hand (the value itself is the
# reference's): (pred, label, k, [(numerator, denominator) of p_1 .. p_k], a note).
BLEU_CASES = [
    ("a a a b", "a b c d", 2, [(2, 4), (1, 3)], "\"a\" counts once: the label has one; only \"a b\" is in the label."),
    ("a b c", "a b c d e f", 2, [(3, 3), (2, 2)], ""),
    ("a b c d e f", "a b c", 2, [(3, 6), (2, 5)], ""),
    ("the cat the cat sat", "the cat sat on the mat", 3, [(4, 5), (2, 4), (1, 3)],
     "\"the\" counts twice and \"cat\" once: the label has two and one."),
]


@pytest.mark.points(1)
@pytest.mark.probe("scores", cases=[list(case[:3]) for case in BLEU_CASES])
def test_bleu_repeated_ngrams_and_lengths(probed, reference):
    require(isinstance(probed, list) and len(probed) == len(BLEU_CASES), "bleu should give one number per case",
            what="bleu(pred, label, k)")
    for (pred, label, k, matches, note), mine, theirs in zip(BLEU_CASES, probed, reference, strict=True):
        require(type(mine) in (int, float) and abs(mine - theirs) <= 1e-4,
                f"bleu({pred!r}, {label!r}, {k}): expected {theirs:.4f}, got {mine!r}"[:300],
                what=f"bleu({pred!r}, {label!r}, {k})", expected=f"{theirs:.4f}", actual=repr(mine)[:80],
                hint=f"Worked out: {worked_bleu(pred, label, matches)} {note}".strip())


@pytest.mark.points(1)
@pytest.mark.probe("parameters", args=[10, 8, 16, 2])
def test_decoder_parameters(probed, reference):
    what = "Seq2SeqAttentionDecoder(10, 8, 16, 2): its parameters' names and shapes, in creation order"
    shapes = dict((name, shape) for name, shape in probed) if isinstance(probed, list) else {}
    gru_input = shapes.get("rnn.weight_ih_l0")
    require(not (isinstance(gru_input, list) and len(gru_input) == 2 and gru_input[0] == 3 * 16 and gru_input[1] != 8 + 16),
            f"rnn.weight_ih_l0 has shape {tuple(gru_input or ())}: the GRU takes inputs of {(gru_input or [0, 0])[1]} "
            "numbers, expected 8 + 16 = 24 (the embedded token and the context)", what=what,
            hint="rnn = nn.GRU(embed_size + num_hiddens, num_hiddens, num_layers, dropout=dropout): at every step its "
                 "input is the context and the embedded token, concatenated.")
    require_same_names(shapes, reference, what)
    same(probed, reference, what=what)


@pytest.mark.points(1)
@pytest.mark.probe("gru_dropout", args=[10, 8, 16, 2, 0.3])
def test_decoder_gru_dropout(probed):
    require(probed == 0.3, f"the GRU's dropout is {probed!r}, expected 0.3", what="Seq2SeqAttentionDecoder(10, 8, 16, 2, "
            "dropout=0.3): the dropout of its GRU, self.rnn (between its two layers)", expected="0.3", actual=repr(probed),
            hint="rnn = nn.GRU(embed_size + num_hiddens, num_hiddens, num_layers, dropout=dropout): the constructor's "
                 "dropout goes to the GRU too.")
