"""Public tests for Bahdanau attention: the book's shapes, the attention weights per step, BLEU.

Here the decoder runs on YOUR AdditiveAttention from scoring.py; on GitHub it is graded
with the reference one, so a mistake in scoring.py costs points only once.
"""

import pytest
import torch

from book_values import SEQ2SEQ_X, generated
from grader.suite.public_reference import same
from grader.suite.comparisons import require

LENS = torch.tensor([7, 3, 5, 1])


@pytest.mark.points(1)
@pytest.mark.probe("book_example", X=SEQ2SEQ_X, enc_valid_lens=None)
def test_book_shapes(probed):
    got = (probed["output_shape"], probed["state_length"], probed["state_shapes"])
    expected = ([4, 7, 10], 3, [[4, 7, 16], [2, 4, 16]])
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
    same(probed, reference, what=f"{SEEDED}; the decoder called twice from the same state: the second call's output, "
                                 "hidden state and attention weights (one per step of that call)")


@pytest.mark.points(1)
@pytest.mark.probe("scores", cases=[["a a a b", "a b c d", 2], ["a b c", "a b c d e f", 2], ["a b c d e f", "a b c", 2],
                                    ["the cat the cat sat", "the cat sat on the mat", 3]])
def test_bleu_repeated_ngrams_and_lengths(probed, reference):
    same(probed, reference, what="bleu(pred, label, k) for ('a a a b', 'a b c d', 2), ('a b c', 'a b c d e f', 2), "
                                 "('a b c d e f', 'a b c', 2), ('the cat the cat sat', 'the cat sat on the mat', 3)")
