"""Probes for simple_attention.py (section 3.3). They run inside the sandbox: inputs only."""

from grader.sandbox.trace import recording
from grader.sandbox.worker import ProbeError, exact_tensor


def context_vectors(student, inputs):
    """all_context_vectors(inputs), and the student's own all_attention_weights(inputs) it builds on."""
    for name in ("all_context_vectors", "all_attention_weights"):
        if not callable(getattr(student, name, None)):
            raise ProbeError(f"your module has no function named {name!r}")
    with recording() as recorder:
        context = exact_tensor(student.all_context_vectors(inputs.clone()), "the result of all_context_vectors")
    try:
        weights = exact_tensor(student.all_attention_weights(inputs.clone()), "the result of all_attention_weights")
    except NotImplementedError:
        weights = None
    return {"$traced": {"context": context, "weights": weights}, "steps": recorder.steps}
