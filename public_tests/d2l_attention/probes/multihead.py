"""Public probes for multihead.py (run in the sandbox: inputs only, no expected value)."""

from grader.sandbox import probing


def round_trip(student, x, num_heads, functions=()):
    """``transpose_qkv(x)`` and ``transpose_output`` of that (``functions``: their names, which the
    diagnosis reads to know which functions of the module these checks call by name)."""
    split = probing.call(probing.part(student, "transpose_qkv"), x, num_heads)
    return {"split": split, "back": probing.call(probing.part(student, "transpose_output"), split, num_heads)}


def output(student, queries, keys, valid_lens):
    """The book's ``MultiHeadAttention(100, 100, 100, 100, 5, 0.5)`` in eval mode."""
    module = probing.build(student, "MultiHeadAttention", 100, 100, 100, 100, 5, 0.5, seed=0, train=False)
    return probing.traced(module, queries, keys, keys, valid_lens)


def attend(student, args, seed, queries, keys, values, valid_lens):
    """``MultiHeadAttention(*args)`` built right after ``torch.manual_seed(seed)``, in eval mode."""
    module = probing.build(student, "MultiHeadAttention", *args, seed=seed, train=False)
    return probing.traced(module, queries, keys, values, valid_lens)


def parameters(student, args):
    """The names and shapes of ``MultiHeadAttention(*args)``'s parameters, in creation order."""
    module = probing.build(student, "MultiHeadAttention", *args, seed=0, train=False)
    with probing.student_code():
        return [[str(name)[:80], [int(n) for n in p.shape]] for name, p in module.named_parameters()]


def train_then_eval(student, args, seed, queries, keys, values, valid_lens):
    """``MultiHeadAttention(*args)`` built right after ``torch.manual_seed(seed)``: its output in
    training mode, then in eval mode (the test compares the two: dropout must act in training)."""
    module = probing.build(student, "MultiHeadAttention", *args, seed=seed, train=True)
    trained = probing.call(module, queries, keys, values, valid_lens)
    probing.call(module.train, False)
    return {"train": trained, "eval": probing.call(module, queries, keys, values, valid_lens)}
