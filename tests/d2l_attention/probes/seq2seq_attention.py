"""Probes for seq2seq_attention.py. They run INSIDE the sandbox, next to the student's code
(which imports the reference AdditiveAttention as ``scoring``): inputs only, never an
expected value. Every probe builds the decoder right after ``torch.manual_seed(seed)``, as
the trusted tests build the reference, and feeds it encoder outputs made by the tests.
"""

import torch

from grader import probing
from grader.probing import ProbeError

DECODER, ENCODER = "Seq2SeqAttentionDecoder", "Seq2SeqEncoder"


def as_list(value, what: str) -> list:
    """A returned state as a list (a tuple or list of three items), else a ProbeError."""
    if type(value) not in (list, tuple) or len(value) != 3:
        raise ProbeError(f"{what} should be a list or tuple of 3 items: enc_outputs, hidden_state, enc_valid_lens")
    return list(value)


def kept_weights(module):
    """``module.attention_weights`` as a list of tensors, or None if it is not one (a test says why)."""
    weights = probing.attribute(module, "attention_weights")
    if type(weights) not in (list, tuple) or not all(type(w) is torch.Tensor for w in weights):
        return None
    return list(weights)


def start(module, enc_outputs, enc_state, enc_valid_lens) -> list:
    """The decoder's ``init_state`` on encoder outputs given by the test."""
    state = probing.call(module.init_state, (enc_outputs, enc_state), enc_valid_lens)
    return as_list(state, "init_state's result")


def step(module, X, state):
    """One forward call; the output and the returned state."""
    result = probing.call(module, X, state)
    if type(result) not in (list, tuple) or len(result) != 2:
        raise ProbeError("forward should return a pair (outputs, state)")
    return result[0], as_list(result[1], "the state that forward returns")


def decode(student, args, seed, enc_outputs, enc_state, X, enc_valid_lens, train=False):
    """``init_state`` then ``forward`` on encoder outputs given by the test."""
    module = probing.build(student, DECODER, *args, seed=seed, train=train)
    state = start(module, enc_outputs, enc_state, enc_valid_lens)
    output, new_state = step(module, X, state)
    return {"init": state, "output": output, "state": new_state, "weights": kept_weights(module)}


def decode_twice(student, args, seed, enc_outputs, enc_state, X, enc_valid_lens):
    """Two forward calls of the same decoder in eval mode, from the same state."""
    module = probing.build(student, DECODER, *args, seed=seed, train=False)
    state = start(module, enc_outputs, enc_state, enc_valid_lens)
    return {"first": step(module, X, state)[0], "second": step(module, X, state)[0]}


def book_example(student, args, seed, X):
    """The book's example: the student's encoder and decoder, seeded one after the other, eval mode."""
    probing.seed(seed)
    encoder = probing.build(student, ENCODER, *args, train=False)
    decoder = probing.build(student, DECODER, *args, train=False)
    state = as_list(probing.call(decoder.init_state, probing.call(encoder, X), None), "init_state's result")
    output, new_state = step(decoder, X, state)
    return {"output": output, "state": new_state, "weights": kept_weights(decoder)}


def parameters(student, args, seed):
    """Names and shapes of the decoder's parameters, in the order they were registered."""
    module = probing.build(student, DECODER, *args, seed=seed, train=False)
    return [[name, list(p.shape)] for name, p in module.named_parameters()]


def gradients(student, args, seed, enc_outputs, enc_state, X, enc_valid_lens, upstream):
    """Gradients of ``(output * upstream).sum()`` for every parameter and the encoder's outputs and state."""
    module = probing.build(student, DECODER, *args, seed=seed, train=False)
    inputs = {"encoder outputs": enc_outputs, "encoder state": enc_state}
    return probing.gradients_through(
        module, lambda: step(module, X, start(module, enc_outputs, enc_state, enc_valid_lens))[0], inputs, upstream)


def init(student, args, seed, enc_outputs, enc_state, X, enc_valid_lens):
    """``init_state`` alone (``X`` is unused: the tests pass every probe the same inputs)."""
    module = probing.build(student, DECODER, *args, seed=seed, train=False)
    return start(module, enc_outputs, enc_state, enc_valid_lens)
