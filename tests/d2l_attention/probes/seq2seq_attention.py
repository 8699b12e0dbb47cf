"""Probes for seq2seq_attention.py. They run INSIDE the sandbox, next to the student's code
(which imports the reference AdditiveAttention as ``scoring``): inputs only, never an
expected value. Every probe builds the decoder right after ``torch.manual_seed(seed)``, as
the trusted tests build the reference, and feeds it encoder outputs made by the tests.
"""

import torch

from grader.sandbox.worker import ProbeError


def build(student, name: str, args: list, seed: int | None = None, train: bool = False):
    """``student.<name>(*args)`` (after seeding torch if asked), in train or eval mode."""
    cls = getattr(student, name, None)
    if cls is None:
        raise ProbeError(f"your module has no class named {name!r}")
    if seed is not None:
        torch.manual_seed(seed)
    module = cls(*args)
    if not isinstance(module, torch.nn.Module):
        raise ProbeError(f"{name} should be a subclass of nn.Module")
    module.train(train)
    return module


def as_list(value, what: str) -> list:
    """A returned state as a list (a tuple or list of three items), else a ProbeError."""
    if type(value) not in (list, tuple) or len(value) != 3:
        raise ProbeError(f"{what} should be a list or tuple of 3 items: enc_outputs, hidden_state, enc_valid_lens")
    return list(value)


def kept_weights(module):
    """``module.attention_weights`` as a list of tensors, or None if it is not one (a test says why)."""
    try:
        weights = module.attention_weights
    except NotImplementedError:
        raise
    except Exception:  # noqa: BLE001 - a broken property is reported by the test as missing weights
        return None
    if type(weights) not in (list, tuple) or not all(type(w) is torch.Tensor for w in weights):
        return None
    return list(weights)


def step(module, X, state):
    """One forward call; the output and the returned state."""
    result = module(X, state)
    if type(result) not in (list, tuple) or len(result) != 2:
        raise ProbeError("forward should return a pair (outputs, state)")
    return result[0], as_list(result[1], "the state that forward returns")


def decode(student, args, seed, enc_outputs, enc_state, X, enc_valid_lens, train=False):
    """``init_state`` then ``forward`` on encoder outputs given by the test."""
    module = build(student, "Seq2SeqAttentionDecoder", args, seed, train)
    state = as_list(module.init_state((enc_outputs, enc_state), enc_valid_lens), "init_state's result")
    output, new_state = step(module, X, state)
    return {"init": state, "output": output, "state": new_state, "weights": kept_weights(module)}


def decode_twice(student, args, seed, enc_outputs, enc_state, X, enc_valid_lens):
    """Two forward calls of the same decoder in eval mode, from the same state."""
    module = build(student, "Seq2SeqAttentionDecoder", args, seed)
    state = as_list(module.init_state((enc_outputs, enc_state), enc_valid_lens), "init_state's result")
    return {"first": step(module, X, state)[0], "second": step(module, X, state)[0]}


def book_example(student, args, seed, X):
    """The book's example: the student's encoder and decoder, seeded one after the other, eval mode."""
    torch.manual_seed(seed)
    encoder = build(student, "Seq2SeqEncoder", args)
    decoder = build(student, "Seq2SeqAttentionDecoder", args)
    state = as_list(decoder.init_state(encoder(X), None), "init_state's result")
    output, new_state = step(decoder, X, state)
    return {"output": output, "state": new_state, "weights": kept_weights(decoder)}


def parameters(student, args, seed):
    """Names and shapes of the decoder's parameters, in the order they were registered."""
    module = build(student, "Seq2SeqAttentionDecoder", args, seed)
    return [[name, list(p.shape)] for name, p in module.named_parameters()]


def gradients(student, args, seed, enc_outputs, enc_state, X, enc_valid_lens, upstream):
    """Gradients of ``(output * upstream).sum()`` for every parameter and the encoder's outputs and state."""
    module = build(student, "Seq2SeqAttentionDecoder", args, seed)
    enc_outputs.requires_grad_(True)
    enc_state.requires_grad_(True)
    state = as_list(module.init_state((enc_outputs, enc_state), enc_valid_lens), "init_state's result")
    output, _ = step(module, X, state)
    if not isinstance(output, torch.Tensor) or output.shape != upstream.shape:
        raise ProbeError(f"forward should return outputs of shape {tuple(upstream.shape)}")
    if output.requires_grad:
        (output * upstream).sum().backward()
    grads = {f"parameter {name}": p.grad for name, p in module.named_parameters()}
    grads.update({"encoder outputs": enc_outputs.grad, "encoder state": enc_state.grad})
    return grads


def init(student, args, seed, enc_outputs, enc_state, X, enc_valid_lens):
    """``init_state`` alone (``X`` is unused: the tests pass every probe the same inputs)."""
    module = build(student, "Seq2SeqAttentionDecoder", args, seed)
    return as_list(module.init_state((enc_outputs, enc_state), enc_valid_lens), "init_state's result")
