"""Public probes for seq2seq_attention.py (run in the sandbox: inputs only, no expected value)."""

from grader.sandbox import probing
from grader.sandbox.probing import ProbeError


def book_example(student, X, enc_valid_lens):
    """The book's encoder and decoder, (10, 8, 16, 2), in eval mode on ``X``: shapes and attention weights."""
    probing.seed(0)
    encoder = probing.build(student, "Seq2SeqEncoder", 10, 8, 16, 2, train=False)
    decoder = probing.build(student, "Seq2SeqAttentionDecoder", 10, 8, 16, 2, train=False)
    with probing.recorded_if_sent(decoder) as recorder:  # the encoder and init_state too: where a wrong shape was made
        result = decoder(X, decoder.init_state(encoder(X), enc_valid_lens))
    if type(result) not in (list, tuple) or len(result) != 2 or type(result[1]) not in (list, tuple):
        raise ProbeError("forward should return a pair (outputs, state), the state a list")
    output, state = result
    shapes = [list(probing.tensor(s, "a tensor of the state").shape) for s in state[:2]]
    weights = probing.attribute(decoder, "attention_weights")
    if type(weights) not in (list, tuple):
        raise ProbeError("attention_weights should be a list with one tensor per decoding step")
    return probing.with_steps({"output_shape": list(probing.tensor(output, "the decoder's output").shape),
                               "state_shapes": shapes, "state_length": len(state), "weights": list(weights)}, recorder)


def scores(student, cases):
    """``bleu(pred, label, k)`` for every case (with the numbers its lines assign, for a diagnosis)."""
    bleu = probing.part(student, "bleu", "function")
    with probing.recorded_if_sent(numbers=True) as recorder:
        found = [probing.call(bleu, pred, label, k) for pred, label, k in cases]
    return probing.with_steps(found, recorder)


def teacher_forced(student, seed, X, enc_valid_lens, calls=1, num_layers=2):
    """``Seq2SeqEncoder(10, 8, 16, num_layers)`` and ``Seq2SeqAttentionDecoder(10, 8, 16, num_layers)`` built
    one after the other right after ``torch.manual_seed(seed)``, in eval mode; the decoder's forward on the
    target tokens ``X`` (teacher forcing), ``calls`` times from the same state: the last call's output, the
    state it returns and the attention weights kept."""
    probing.seed(seed)
    encoder = probing.build(student, "Seq2SeqEncoder", 10, 8, 16, num_layers, train=False)
    decoder = probing.build(student, "Seq2SeqAttentionDecoder", 10, 8, 16, num_layers, train=False)
    with probing.recorded_if_sent(decoder) as recorder:  # from the encoder on, every call
        state = decoder.init_state(encoder(X), enc_valid_lens)
        for _ in range(calls):
            result = decoder(X, state)
            if type(result) not in (list, tuple) or len(result) != 2 or type(result[1]) not in (list, tuple):
                raise ProbeError("forward should return a pair (outputs, state), the state a list")
    output, new_state = result
    weights = probing.attribute(decoder, "attention_weights")
    if type(weights) not in (list, tuple):
        raise ProbeError("attention_weights should be a list with one tensor per decoding step")
    return probing.with_steps({
        "output": probing.tensor(output, "the decoder's output"),
        "hidden_state": probing.tensor(new_state[1], "state[1], the hidden state") if len(new_state) > 1 else None,
        "valid_lens_in_state": probing.tensor_or_none(new_state[2]) if len(new_state) > 2 else None,
        "weights": [probing.tensor(w, "an attention weight") for w in weights]}, recorder)


def parameters(student, args):
    """The names and shapes of ``Seq2SeqAttentionDecoder(*args)``'s parameters, in creation order."""
    module = probing.build(student, "Seq2SeqAttentionDecoder", *args, seed=0, train=False)
    with probing.student_code():
        return [[str(name)[:80], [int(n) for n in p.shape]] for name, p in module.named_parameters()]


def gru_dropout(student, args):
    """The dropout rate of ``Seq2SeqAttentionDecoder(*args).rnn`` (its GRU), or None."""
    module = probing.build(student, "Seq2SeqAttentionDecoder", *args, seed=0, train=False)
    rate = probing.attribute(module, "rnn.dropout")
    return float(rate) if type(rate) in (int, float) else None
