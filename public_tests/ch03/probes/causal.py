"""Public probes for causal.py (run in the sandbox: inputs only, no expected value)."""

import torch

from grader.sandbox import probing
from grader.sandbox.probing import ProbeError

CLASS = "CausalAttention"


def output(student, seed, args, x, kwargs=None, name=CLASS):
    """``name(*args, **kwargs)`` built right after ``torch.manual_seed(seed)``, in eval mode, applied to ``x``."""
    module = probing.build(student, name, *args, seed=seed, train=False, kwargs=kwargs)
    return probing.traced(module, x)


def outputs(student, seed, args, xs, name=CLASS):
    """One module (eval mode) applied to each input of ``xs`` in turn: a later call must not
    depend on an earlier one."""
    module = probing.build(student, name, *args, seed=seed, train=False)
    return [probing.output(module, x) for x in xs]


def unchanged_input(student, function, given, args):
    """``function(given, *args)`` with its steps (where a wrong value or shape was made, as the
    hidden grade's probe records them), and ``given`` afterwards (it must not change)."""
    target = probing.part(student, function, "function")
    with probing.recorded_if_sent() as recorder:
        result = probing.call(target, given, *args)
    return probing.with_steps({"result": probing.tensor(result, f"the result of {function}"), "input_after": given},
                              recorder)


def dropout(student, seed, n, p, name=CLASS, args=None):
    """Dropout seen by its behaviour: ``name(*args)`` (default ``CausalAttention(n, 2n, n, p)``) whose
    value layer gives values [I | I ...] and whose output projection, if any, is the identity, applied
    to the identity: the output shows the attention weights themselves, each block a copy. Returns it
    in eval and in training mode (after ``torch.manual_seed(seed + 1)``)."""
    args = args or [n, 2 * n, n, p]
    d_out = args[1]
    module = probing.build(student, name, *args, seed=seed)
    value, out_proj = probing.attribute(module, "W_value"), probing.attribute(module, "out_proj")
    if not isinstance(value, torch.nn.Linear) or tuple(value.weight.shape) != (d_out, n):
        raise ProbeError(f"self.W_value should be nn.Linear({n}, {d_out})")
    with torch.no_grad(), probing.student_code():
        value.weight.copy_(torch.eye(n).repeat(d_out // n, 1))
        if value.bias is not None:
            value.bias.zero_()
        if isinstance(out_proj, torch.nn.Linear) and tuple(out_proj.weight.shape) == (d_out, d_out):
            out_proj.weight.copy_(torch.eye(d_out))
            if out_proj.bias is not None:
                out_proj.bias.zero_()
    x = torch.eye(n).repeat(2, 1, 1)  # (2, n, n)
    probing.call(module.eval)
    with torch.no_grad():
        evaluated = probing.output(module, x)
        probing.call(module.train)
        probing.seed(seed + 1)
        trained = probing.output(module, x)
    return {"eval": evaluated, "train": trained}


def structure(student, args, name=CLASS):
    """The names of the module's buffers and of its state_dict entries."""
    module = probing.build(student, name, *args, seed=0)
    with probing.student_code():
        return {"buffers": sorted(n for n, _ in module.named_buffers()), "state_dict": sorted(module.state_dict())}


def gradients(student, seed, args, x, kwargs=None, name=CLASS, train_seed=None):
    """A forward and backward pass in training mode first (dropout active, after seeding with
    ``train_seed``: what it does in place must not break backward), its gradients cleared; then
    backpropagate a weighted sum of the output in eval mode: the gradient of every parameter."""
    module = probing.build(student, name, *args, seed=seed, kwargs=kwargs)
    if train_seed is not None:
        probing.call(module.train)
        probing.seed(train_seed)
        probing.backward(probing.call(module, x))
        with probing.student_code():
            for parameter in module.parameters():
                parameter.grad = None
    probing.call(module.eval)
    probing.backward(probing.call(module, x))
    return probing.gradients(module)
