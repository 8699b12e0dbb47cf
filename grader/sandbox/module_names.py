"""The names a recorded ``nn.Module`` gives its steps, read from its structure.

What each named submodule receives and returns is a step under the submodule's name (forward
hooks: ``W_query``, ``out_proj input``); a matmul with one of its parameters is labelled with the
parameter's name (``x @ W_query``); its own tensors are parents under the attribute that holds
them (``W_query`` for ``W_query.weight``, ``P`` for ``self.P``). Apart from the recorder
(:mod:`grader.sandbox.trace`), which sees only torch functions and tensors, because these are
read from a module of the student's making, before the recording starts.
"""

from __future__ import annotations

from typing import Protocol

import torch


class Steps(Protocol):
    """Where the hooks write: the recorder (:class:`grader.sandbox.trace.Recorder`)."""

    def keep(self, label: str, value, parents=()) -> int | None: ...

    def sources(self, value) -> set: ...

    def note(self, value, parents) -> None: ...


def parameter_names(module) -> dict[int, str]:
    """``{id(parameter): the last part of its name}`` (``W_query`` for a parameter ``self.W_query``,
    ``weight`` for a layer's), the labels of matmuls with it; {} for anything but an ``nn.Module``."""
    parameters = {}
    if isinstance(module, torch.nn.Module):
        parameters = {id(p): name.rsplit(".", 1)[-1] for name, p in module.named_parameters()}
    return parameters


def submodule_hooks(module, recorder: Steps) -> list:
    """Forward hooks that note what every named submodule receives (first input) and returns."""
    handles = []
    if not isinstance(module, torch.nn.Module):
        return handles
    for name, sub in module.named_modules():
        if not name:
            continue
        short = name.rsplit(".", 1)[-1]

        def hook(_mod, inputs, output, short=short):
            if inputs and isinstance(inputs[0], torch.Tensor):
                recorder.keep(f"{short} input", inputs[0], recorder.sources(inputs[0]))
            index = recorder.keep(short, output, recorder.sources(output))
            if index is not None:
                recorder.note(output, (index,))

        handles.append(sub.register_forward_hook(hook))
    return handles


def attributes_of(module) -> dict[int, tuple]:
    """``{id(tensor): (tensor, attribute)}`` for the module's own tensors: each parameter and buffer
    under the name of the attribute that holds it (``W_query`` for ``W_query.weight``), and tensors
    kept as plain attributes (``self.P``)."""
    found: dict[int, tuple] = {}
    if not isinstance(module, torch.nn.Module):
        return found
    try:
        named = [*module.named_parameters(), *module.named_buffers()]
        named += [(key, value) for key, value in vars(module).items() if isinstance(value, torch.Tensor)]
    except Exception:  # noqa: BLE001 - a module of the student's making
        return found
    for name, value in named[:256]:
        if isinstance(name, str) and isinstance(value, torch.Tensor):
            found.setdefault(id(value), (value, name.split(".", 1)[0][:40]))
    return found
