"""Public probes for seq2seq_attention.py (run in the sandbox: inputs only, no expected value)."""

import torch

from grader.sandbox.worker import ProbeError


def _get(student, name):
    found = getattr(student, name, None)
    if found is None:
        raise ProbeError(f"your module has no function or class named {name!r}")
    return found


def book_example(student, X, enc_valid_lens):
    """The book's encoder and decoder, (10, 8, 16, 2), in eval mode on ``X``: shapes and attention weights."""
    torch.manual_seed(0)
    encoder = _get(student, "Seq2SeqEncoder")(10, 8, 16, 2).eval()
    decoder = _get(student, "Seq2SeqAttentionDecoder")(10, 8, 16, 2).eval()
    output, state = decoder(X, decoder.init_state(encoder(X), enc_valid_lens))
    weights = decoder.attention_weights
    if type(weights) not in (list, tuple):
        raise ProbeError("attention_weights should be a list with one tensor per decoding step")
    return {"output_shape": list(output.shape), "state_shapes": [list(s.shape) for s in state[:2]],
            "state_length": len(state), "weights": list(weights)}


def scores(student, cases):
    """``bleu(pred, label, k)`` for every case."""
    return [_get(student, "bleu")(pred, label, k) for pred, label, k in cases]
