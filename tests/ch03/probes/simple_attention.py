"""Probes for simple_attention.py (section 3.3). They run inside the sandbox: inputs only."""

from grader.sandbox import probing


def context_vectors(student, inputs):
    """all_context_vectors(inputs), and the student's own all_attention_weights(inputs) it builds on."""
    context_of = probing.part(student, "all_context_vectors", "function")
    weights_of = probing.part(student, "all_attention_weights", "function")
    with probing.recorded_if_sent() as recorder:
        context = probing.tensor(context_of(inputs.clone()), "the result of all_context_vectors")
    try:
        weights = probing.tensor(probing.call(weights_of, inputs.clone()), "the result of all_attention_weights")
    except NotImplementedError:
        weights = None
    return probing.with_steps({"context": context, "weights": weights}, recorder)
