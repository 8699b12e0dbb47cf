"""Section 11.4: Bahdanau attention in a sequence-to-sequence decoder, and BLEU
(graded with the reference AdditiveAttention)."""

import pytest
import torch

import seq2seq_attention as ref
from book import SEQ2SEQ_ARGS, SEQ2SEQ_OUTPUT_SHAPE, SEQ2SEQ_STATE_SHAPES, SEQ2SEQ_X, random_inputs, random_tokens
from grader.suite.comparisons import close, require
from grader.suite.plugin import calls
from hints import check_gradients, masked_weight_problem, same_seed, worked_bleu

SEED = 11
# Encoder outputs and states are made here, not by an encoder. They are large (3 * normal) so
# that the tanh of additive attention works outside its linear range: there, the weights
# depend on the query (with small inputs, tanh is nearly linear and the query's share of
# every score is the same, so the weights hardly depend on which hidden state is the query).
# Not the book's sizes. One layer: 3 sources of 5 steps, 4 target steps, vocabulary 11.
ARGS = [11, 6, 8, 1, 0.0]  # vocab_size, embed_size, num_hiddens, num_layers, dropout
ENC_OUT, ENC_STATE = 3 * random_inputs(81, 5, 3, 8), 3 * random_inputs(82, 1, 3, 8)
X = random_tokens(83, 11, 3, 4)
LENS = torch.tensor([2, 5, 3])
# Two layers (the query must come from the last one), 2 sources of 6 steps, 5 target steps.
ARGS_2 = [7, 5, 6, 2, 0.0]
ENC_OUT_2, ENC_STATE_2 = 3 * random_inputs(84, 6, 2, 6), 3 * random_inputs(85, 2, 2, 6)
X_2 = random_tokens(86, 7, 2, 5)
LENS_2 = torch.tensor([6, 1])
# Three layers with dropout 0.5: in eval mode nothing is dropped.
ARGS_3 = [9, 4, 6, 3, 0.5]
ENC_STATE_3 = 3 * random_inputs(87, 3, 2, 6)
UPSTREAM = random_inputs(88, 2, 5, 7)
X_FIRST = random_tokens(89, 7, 2, 3)  # a first call before the probed one (3 steps, not 5)
ARGS_DROPOUT = [7, 5, 6, 2, 0.3]  # gradients: a training-mode pass with dropout above 0 comes first


def probe(name, args, enc_outputs, enc_state, tokens, lens, **kwargs):
    """Marker: run the probe ``name`` on ``Seq2SeqAttentionDecoder(*args)`` (seeded) in the sandbox."""
    return pytest.mark.probe(name, args=args, seed=SEED, enc_outputs=enc_outputs, enc_state=enc_state, X=tokens,
                             enc_valid_lens=lens, **kwargs)


def reference(args, enc_outputs, enc_state, tokens, lens):
    """Output, state after decoding and per-step attention weights of the reference, in eval mode."""
    module = same_seed(SEED, ref.Seq2SeqAttentionDecoder, *args)
    with torch.no_grad():
        output, state = module(tokens, module.init_state((enc_outputs, enc_state), lens))
    return output, state, module.attention_weights


def trained_output(args, enc_outputs, enc_state, tokens, lens):
    """The reference's output in training mode (dropout active), its random draws right after being
    built (as the probe's): a correct decoder draws them in the same order (attention, then the GRU)."""
    module = same_seed(SEED, ref.Seq2SeqAttentionDecoder, *args).train()
    with torch.no_grad():
        return module(tokens, module.init_state((enc_outputs, enc_state), lens))[0]


def book_output():
    """The book's example: the reference encoder, then the decoder, built after one seed, in eval mode:
    output, state, attention weights per step."""
    torch.manual_seed(SEED)
    encoder, decoder = ref.Seq2SeqEncoder(*SEQ2SEQ_ARGS).eval(), ref.Seq2SeqAttentionDecoder(*SEQ2SEQ_ARGS).eval()
    with torch.no_grad():
        output, state = decoder(SEQ2SEQ_X, decoder.init_state(encoder(SEQ2SEQ_X), None))
    return output, state, decoder.attention_weights


def gradients(args, enc_outputs, enc_state, tokens, lens, upstream):
    """The reference's gradients of ``(output * upstream).sum()``: every parameter's, the encoder's outputs' and state's."""
    module = same_seed(SEED, ref.Seq2SeqAttentionDecoder, *args)
    enc_outputs, enc_state = enc_outputs.clone().requires_grad_(), enc_state.clone().requires_grad_()
    output, _ = module(tokens, module.init_state((enc_outputs, enc_state), lens))
    (output * upstream).sum().backward()
    found = {f"parameter {name}": p.grad for name, p in module.named_parameters()}
    return {**found, "encoder outputs": enc_outputs.grad, "encoder state": enc_state.grad}


# What the reference gives on the checks' inputs: computed once, when the suite is collected (a batch's
# grading processes share them), not in every submission's checks. Each: (output, state, weights per step).
DECODED = reference(ARGS, ENC_OUT, ENC_STATE, X, LENS)
DECODED_2 = reference(ARGS_2, ENC_OUT_2, ENC_STATE_2, X_2, LENS_2)
DECODED_NO_LENS = reference(ARGS, ENC_OUT, ENC_STATE, X, None)
DECODED_3 = reference(ARGS_3, ENC_OUT_2, ENC_STATE_3, X_2, LENS_2)
BOOK_OUTPUT, BOOK_STATE, BOOK_WEIGHTS = book_output()
PARAMETERS_2 = [[n, list(p.shape)] for n, p in ref.Seq2SeqAttentionDecoder(*ARGS_2).named_parameters()]
PARAMETER_VALUES_2 = [p.detach() for p in same_seed(SEED, ref.Seq2SeqAttentionDecoder, *ARGS_2).parameters()]
TRAINED = trained_output(ARGS_DROPOUT, ENC_OUT_2, ENC_STATE_2, X_2, LENS_2)
GRADIENTS_2 = gradients(ARGS_DROPOUT, ENC_OUT_2, ENC_STATE_2, X_2, LENS_2, UPSTREAM)


def shape_of(value) -> str:
    """A value's shape for a message, or its type."""
    return str(tuple(value.shape)) if isinstance(value, torch.Tensor) else type(value).__name__


def first_step(actual, expected: torch.Tensor) -> str:
    """Where outputs ``(batch, steps, vocab)`` first differ from the reference: which decoding step."""
    if not isinstance(actual, torch.Tensor) or actual.shape != expected.shape:
        return ""
    differs = ~torch.isclose(actual.double(), expected.double(), atol=1e-4, rtol=0)
    steps = differs.any(dim=2).any(dim=0).nonzero()
    if len(steps) == 0:
        return ""
    step = int(steps[0])
    if step == 0:
        return "Your outputs differ from the reference's from the first decoding step on."
    matching = "Decoding step 0 matches" if step == 1 else f"Decoding steps 0 to {step - 1} match"
    return f"{matching} the reference's; step {step} is the first that differs."


# -- the book's example ----------------------------------------------------------------------------
@pytest.mark.points(1)
@pytest.mark.probe("book_example", args=list(SEQ2SEQ_ARGS), seed=SEED, X=SEQ2SEQ_X)
def test_book_shapes(probed):
    output, state, weights = probed["output"], probed["state"], probed["weights"]
    what = "the book's example: Seq2SeqEncoder(10, 8, 16, 2), Seq2SeqAttentionDecoder(10, 8, 16, 2), X (4, 7) zeros"
    got = [shape_of(output), shape_of(state[0]), shape_of(state[1])]
    expected = [str(SEQ2SEQ_OUTPUT_SHAPE), *map(str, SEQ2SEQ_STATE_SHAPES)]
    require(got == expected, "the shapes differ from the book's", what=what,
            expected=f"output {expected[0]}, state[0] {expected[1]}, state[1] {expected[2]}",
            actual=f"output {got[0]}, state[0] {got[1]}, state[1] {got[2]}",
            hint="outputs are (batch_size, num_steps, vocab_size): apply dense to the concatenated GRU outputs "
                 "(num_steps, batch_size, num_hiddens), then permute(1, 0, 2); state[0] is the encoder's outputs "
                 "batch first, state[1] the GRU's hidden state (num_layers, batch_size, num_hiddens).")
    require(weights is not None and len(weights) == 7, "attention_weights should hold one tensor per decoding step",
            what=f"{what}: decoder.attention_weights", expected="a list of 7 tensors",
            actual="not a list of tensors" if weights is None else f"{len(weights)} tensors",
            hint="Append self.attention.attention_weights to a list at every step of the loop, and return that list "
                 "from the attention_weights property.")
    close(output, BOOK_OUTPUT, what=f"{what}: the output")
    close(state[0], BOOK_STATE[0], what=f"{what}: state[0]")
    close(state[1], BOOK_STATE[1], what=f"{what}: state[1]")
    for step, (mine, theirs) in enumerate(zip(weights, BOOK_WEIGHTS, strict=True)):
        close(mine, theirs, grid=True, what=f"{what}: decoder.attention_weights, decoding step {step}")


@pytest.mark.points(1)
@pytest.mark.probe("book_example", args=list(SEQ2SEQ_ARGS), seed=SEED, X=SEQ2SEQ_X)
def test_book_values(probed):
    close(probed["output"], BOOK_OUTPUT, what="the book's example, values (encoder then decoder built after one seed)")


# -- structure ------------------------------------------------------------------------------------
@pytest.mark.points(1)
@pytest.mark.probe("parameters", args=ARGS_2, seed=SEED)
def test_parameters(probed):
    expected, names = PARAMETERS_2, probed["names"] if isinstance(probed, dict) else None
    what = "parameters of Seq2SeqAttentionDecoder(7, 5, 6, 2), in creation order"
    require(names == expected, "the parameters are not those of attention, embedding, rnn, dense in that order",
            what=what, expected=", ".join(f"{n} {tuple(s)}" for n, s in expected),
            actual=", ".join(f"{n} {tuple(s)}" for n, s in names)[:800] if isinstance(names, list) else repr(names)[:80],
            hint="attention = AdditiveAttention(num_hiddens, num_hiddens, num_hiddens, dropout); embedding = "
                 "nn.Embedding(vocab_size, embed_size); rnn = nn.GRU(embed_size + num_hiddens, num_hiddens, "
                 "num_layers, dropout=dropout) (its input is the context and the embedded token); dense = "
                 "nn.Linear(num_hiddens, vocab_size).")
    values = probed["values"]
    require(isinstance(values, list) and len(values) == len(PARAMETER_VALUES_2), "no values of the parameters came back",
            what=what)
    for (name, _), mine, theirs in zip(expected, values, PARAMETER_VALUES_2, strict=True):
        close(mine, theirs, what=f"{what}: {name} after torch.manual_seed({SEED}) (the order of creation decides it)")


@pytest.mark.points(1)
@probe("init", ARGS, ENC_OUT, ENC_STATE, None, LENS)
def test_init_state(probed):
    enc_outputs, hidden, lens = probed
    what = "init_state((outputs of shape (5, 3, 8), state of shape (1, 3, 8)), enc_valid_lens [2, 5, 3])"
    close(enc_outputs, ENC_OUT.permute(1, 0, 2), what=f"{what}[0]: the encoder's outputs, batch first (3, 5, 8)")
    close(hidden, ENC_STATE, what=f"{what}[1]: the encoder's final state, unchanged")
    require(isinstance(lens, torch.Tensor) and lens.tolist() == LENS.tolist(), "enc_valid_lens is not passed on",
            what=f"{what}[2]", expected=str(LENS.tolist()), actual=repr(lens)[:80],
            hint="Keep enc_valid_lens in the state: every decoding step masks the padding with it.")


# -- decoding -------------------------------------------------------------------------------------
def check_outputs(actual, expected: torch.Tensor, what: str) -> None:
    """The outputs equal the reference's (``expected``); else say at which decoding step they first differ."""
    step = first_step(actual, expected)
    close(actual, expected, what=f"{what} ({step})" if step else what)


# The decoder's outputs against the reference's (computed above once), with one GRU layer and with two.
DECODINGS = [
    pytest.param(DECODED[0], "Seq2SeqAttentionDecoder(11, 6, 8, 1): 3 sources of 5 steps, enc_valid_lens [2, 5, 3], "
                             "4 target steps (outputs (3, 4, 11), same seed as the reference)",
                 marks=probe("decode", ARGS, ENC_OUT, ENC_STATE, X, LENS), id="one_layer"),
    pytest.param(DECODED_2[0], "Seq2SeqAttentionDecoder(7, 5, 6, 2) (two GRU layers): 2 sources of 6 steps, "
                               "enc_valid_lens [6, 1], 5 target steps",
                 marks=probe("decode", ARGS_2, ENC_OUT_2, ENC_STATE_2, X_2, LENS_2), id="two_layers"),
]


@pytest.mark.points(2)
@pytest.mark.parametrize("expected, what", DECODINGS)
def test_matches_reference(probed, expected, what):
    check_outputs(probed["output"], expected, what)


@pytest.mark.points(1)
@probe("decode", ARGS_2, ENC_OUT_2, ENC_STATE_2, X_2, LENS_2)
def test_state_after_decoding(probed):
    enc_outputs, hidden, lens = probed["state"]
    _, (ref_outputs, ref_hidden, _), _ = DECODED_2
    what = "the state forward returns: [enc_outputs, hidden_state, enc_valid_lens]"
    close(enc_outputs, ref_outputs, what=f"{what}, item 0: the encoder's outputs (batch first), unchanged")
    close(hidden, ref_hidden, what=f"{what}, item 1: the GRU's hidden state after the last step (2, 2, 6)")
    require(isinstance(lens, torch.Tensor) and lens.tolist() == LENS_2.tolist(), "enc_valid_lens is not passed on",
            what=f"{what}, item 2", expected=str(LENS_2.tolist()), actual=repr(lens)[:80])


def check_weights_per_step(probed, expected: list, what):
    """One weight tensor per step, each equal to the reference's (``expected``): the first step that differs is named."""
    weights = probed["weights"]
    require(weights is not None and len(weights) == len(expected),
            "attention_weights should be a list with one tensor per decoding step", what=what,
            expected=f"a list of {len(expected)} tensors of shape {tuple(expected[0].shape)}",
            actual="not a list of tensors" if weights is None else f"{len(weights)} tensors",
            hint="Start a new list at the beginning of forward and append self.attention.attention_weights at "
                 "every step: the attention_weights property returns the list of the last forward call"
                 + (", not of every call so far." if weights is not None and len(weights) > len(expected) else "."))
    for step, (mine, theirs) in enumerate(zip(weights, expected, strict=True)):
        close(mine, theirs, grid=True, what=f"{what}, decoding step {step} (batch_size, 1, num_enc_steps)")


@pytest.mark.points(2)
@probe("decode", ARGS_2, ENC_OUT_2, ENC_STATE_2, X_2, LENS_2, before=X_FIRST)
def test_attention_weights(probed):
    check_weights_per_step(probed, DECODED_2[2],
                           "decoder.attention_weights of Seq2SeqAttentionDecoder(7, 5, 6, 2), enc_valid_lens [6, 1], "
                           "after a first call on 3 other target tokens (the weights of the last call, 5 steps)")


@pytest.mark.points(1)
@probe("decode", ARGS, ENC_OUT, ENC_STATE, X, LENS)
def test_attention_masks_padding(probed):
    weights = probed["weights"]
    what = "decoder.attention_weights with enc_valid_lens [2, 5, 3]: zero beyond each source, rows summing to 1"
    require(weights is not None and len(weights) == 4, "attention_weights should be a list of 4 tensors (4 steps)",
            what=what, hint="Keep one attention-weight tensor per decoding step.")
    for step, w in enumerate(weights):
        require(isinstance(w, torch.Tensor) and tuple(w.shape) == (3, 1, 5), f"step {step}: the weights have the wrong shape",
                what=f"{what}, decoding step {step}", expected="shape (3, 1, 5)", actual=shape_of(w))
        problem = masked_weight_problem(w, LENS, (3, 1, 5))
        require(problem == "", f"decoding step {step}: {problem}", what=f"{what}, decoding step {step}")
        close(w, DECODED[2][step], grid=True, what=f"{what}, decoding step {step}, compared with the reference's")


@pytest.mark.points(1)
@probe("decode", ARGS, ENC_OUT, ENC_STATE, X, None)
def test_no_valid_lens(probed):
    check_outputs(probed["output"], DECODED_NO_LENS[0],
                  "Seq2SeqAttentionDecoder(11, 6, 8, 1) with enc_valid_lens None (every source step counts)")


@pytest.mark.points(1)
@probe("decode_twice", ARGS_3, ENC_OUT_2, ENC_STATE_3, X_2, LENS_2)
def test_eval_is_deterministic(probed):
    what = "Seq2SeqAttentionDecoder(9, 4, 6, 3, dropout=0.5) in eval mode"
    check_outputs(probed["first"], DECODED_3[0], f"{what}: outputs (3 GRU layers)")
    check_outputs(probed["second"], DECODED_3[0], f"{what}: a second call from the same state gives the same outputs")


@pytest.mark.points(1)
@probe("gradients", ARGS_DROPOUT, ENC_OUT_2, ENC_STATE_2, X_2, LENS_2, upstream=UPSTREAM, train_seed=3)
def test_gradients(probed):
    check_gradients(probed, GRADIENTS_2, "gradients through Seq2SeqAttentionDecoder (every parameter, the encoder's "
                                      "outputs and state)")


@pytest.mark.points(1)
@probe("decode", ARGS_DROPOUT, ENC_OUT_2, ENC_STATE_2, X_2, LENS_2, train=True)
def test_dropout_in_training(probed):
    check_outputs(probed["output"], TRAINED,
                  "Seq2SeqAttentionDecoder(7, 5, 6, 2, dropout=0.3) in training mode, right after being built with the "
                  "reference's seed: the constructor's dropout in the attention and in the GRU")


# -- BLEU -----------------------------------------------------------------------------------------


def check_bleu(probed, pred, label, k, expected, worked=""):
    """``bleu(pred, label, k)`` is a number equal to ``expected`` (worked out by hand, as ``worked`` shows)."""
    what = f"bleu({pred!r}, {label!r}, k={k})"
    require(type(probed) in (int, float), "bleu should return a number (a Python float)", what=what,
            expected=f"{expected:.4f}", actual=repr(probed)[:80])
    close(torch.tensor(float(probed), dtype=torch.float64), torch.tensor(expected, dtype=torch.float64),
          what=f"{what}; worked out: {worked}" if worked else what, atol=1e-6)


def bleu_case(pred: str, label: str, matches: list[tuple[int, int]], note: str, name: str):
    """A case of ``test_bleu``: ``bleu(pred, label, len(matches))`` should be the product of the factors
    worked out by hand (``matches``: each p_n's numerator and denominator), shown factor by factor."""
    worked, expected = worked_bleu(len(pred.split(" ")), len(label.split(" ")), matches)
    k = len(matches)
    return pytest.param(pred, label, k, expected, f"{worked} {note}" if note else worked, marks=calls("bleu", pred, label, k),
                        id=name)


BLEU = [
    bleu_case("the cat sat on the mat", "the cat sat on the mat", [(6, 6), (5, 5), (4, 4), (3, 3)],
              "\"the\" counts twice: it occurs twice in the prediction and twice in the label.", "exact_match"),
    bleu_case("il est calme", "je suis chez moi .", [(0, 3), (0, 2)],
              "No token of the prediction occurs in the label, so BLEU = 0 whatever the other factors.", "no_overlap"),
    bleu_case("a b", "a b c d", [(2, 2), (1, 1)], "", "brevity_penalty"),
    bleu_case("a b c d", "a b d c", [(4, 4), (1, 3)],
              "The bigrams ab, bc, cd of the prediction against ab, bd, dc of the label (with k = 1 BLEU would be 1).",
              "k"),
    bleu_case("a a a a", "a b", [(1, 4)],
              "\"a\" occurs once in the label, so only one of the four predicted \"a\" counts.", "clipped_counts"),
]


@pytest.mark.points(1)
@pytest.mark.parametrize("pred, label, k, expected, worked", BLEU)
def test_bleu(probed, pred, label, k, expected, worked):
    check_bleu(probed, pred, label, k, expected, worked)
