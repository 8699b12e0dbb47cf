"""Probes for seq2seq_attention.py. They run INSIDE the sandbox, next to the student's code
(which imports the reference AdditiveAttention as ``scoring``): inputs only, never an
expected value. Every probe builds the decoder right after ``torch.manual_seed(seed)``, as
the trusted tests build the reference, and feeds it encoder outputs made by the tests.
"""

import torch

from grader.sandbox import probing
from grader.sandbox.probing import ProbeError

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


def decode(student, args, seed, enc_outputs, enc_state, X, enc_valid_lens, train=False, before=None):
    """``init_state`` then ``forward`` on encoder outputs given by the test. With ``before`` (target
    tokens), a first ``forward`` on them from the same state comes before: the attention weights
    kept must then be those of the last call."""
    module = probing.build(student, DECODER, *args, seed=seed, train=train)
    with probing.recorded_if_sent(module) as recorder:  # from init_state on: where a wrong state was made
        state = start(module, enc_outputs, enc_state, enc_valid_lens)
        if before is not None:
            step(module, before, state)
        output, new_state = step(module, X, state)
    return probing.with_steps({"init": state, "output": output, "state": new_state, "weights": kept_weights(module)},
                              recorder)


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
    with probing.recorded_if_sent(decoder) as recorder:  # the encoder and init_state too
        state = as_list(probing.call(decoder.init_state, probing.call(encoder, X), None), "init_state's result")
        output, new_state = step(decoder, X, state)
    return probing.with_steps({"output": output, "state": new_state, "weights": kept_weights(decoder)}, recorder)


def parameters(student, args, seed):
    """Names and shapes of the decoder's parameters, in the order they were registered, and their values."""
    module = probing.build(student, DECODER, *args, seed=seed, train=False)
    with probing.student_code():
        named = list(module.named_parameters())
    return {"names": [[name, list(p.shape)] for name, p in named],
            "values": [probing.tensor(p.detach(), f"parameter {name}") for name, p in named]}


def gradients(student, args, seed, enc_outputs, enc_state, X, enc_valid_lens, upstream, train_seed=None):
    """Gradients of ``(output * upstream).sum()`` in eval mode for every parameter and the encoder's
    outputs and state. With ``train_seed``, a forward and backward pass in training mode first
    (dropout active: what it does in place must not break backward), its gradients then cleared."""
    module = probing.build(student, DECODER, *args, seed=seed, train=False)
    inputs = {"encoder outputs": enc_outputs, "encoder state": enc_state}

    def run():
        return step(module, X, start(module, enc_outputs, enc_state, enc_valid_lens))[0]

    if train_seed is not None:
        probing.train_then_clear(module, run, inputs, upstream, train_seed)
    return probing.gradients_through(module, run, inputs, upstream)


def init(student, args, seed, enc_outputs, enc_state, X, enc_valid_lens):
    """``init_state`` alone (``X`` is unused: the tests pass every probe the same inputs)."""
    module = probing.build(student, DECODER, *args, seed=seed, train=False)
    return start(module, enc_outputs, enc_state, enc_valid_lens)
