"""How the ``nn.Linear`` layers a probe builds get their parameters, where they are not drawn at random.

The machinery behind :func:`grader.sandbox.probing.build`'s ``initialize=False`` (a probe that
reads only a module's configuration: no numbers drawn) and ``fixed=True`` (a module too large to
draw its weights at every run: the same fixed numbers each time, the reference built the same
way). Apart from the probing API because the zygote draws the fixed numbers once for a batch's
workers (:func:`fixed_values`), and a hidden suite's trusted tests build the reference with
:func:`linear_layers_fixed` (which :mod:`grader.sandbox.probing` offers them).
"""

from __future__ import annotations

import contextlib

import torch


@contextlib.contextmanager
def _linear_layers_reset_by(reset):
    """Within this block, ``nn.Linear`` calls ``reset(layer)`` where it would draw its parameters."""
    original = torch.nn.Linear.reset_parameters
    torch.nn.Linear.reset_parameters = reset
    try:
        yield
    finally:
        torch.nn.Linear.reset_parameters = original


def linear_layers_uninitialized():
    """Within this block, ``nn.Linear`` skips ``reset_parameters`` (see :func:`grader.sandbox.probing.build`)."""
    return _linear_layers_reset_by(lambda layer: None)


FIXED_VALUES = 1 << 22  # numbers in fixed_values(): more than a GPT-2-size attention module's 2,360,064 parameters
_fixed: torch.Tensor | None = None


def fixed_values() -> torch.Tensor:
    """The same ``FIXED_VALUES`` numbers, uniform in [-0.05, 0.05), wherever they are asked for:
    drawn once per process from a generator of their own (the global one is untouched); in a
    batch, by the sandbox's zygote before any worker is forked, so that a worker reads them without
    drawing, copying or faulting in a page."""
    global _fixed
    if _fixed is None:
        generator = torch.Generator().manual_seed(0)
        _fixed = torch.empty(FIXED_VALUES).uniform_(-0.05, 0.05, generator=generator)
    return _fixed


def linear_layers_fixed():
    """Within this block, each ``nn.Linear`` built takes its weight, then its bias, from the next
    numbers of :func:`fixed_values` (views: nothing drawn or copied) where it would draw them at
    random: in the order the layers are built, as a seeded random stream would be drawn, so a
    module is given what the reference built the same way is given exactly when it builds the same
    layers in the same order (whatever order it then registers them in). A parameter for which no
    numbers are left is all zeros (a configuration that large is not the reference's, whose checks
    say so; nothing is left to chance). Being views, the parameters share the numbers: code that
    writes into them in place changes them for every later build in the same process (in the
    sandbox, the worker's own copy; in the trusted process, keep such code out of these builds)."""
    values, taken = fixed_values(), 0

    def take(layer) -> None:
        nonlocal taken
        for parameter in (layer.weight, layer.bias):
            if parameter is None:
                continue
            count = parameter.numel()
            if taken + count > FIXED_VALUES:
                taken = FIXED_VALUES
                torch.nn.init.zeros_(parameter)
            else:
                parameter.data = values[taken:taken + count].view_as(parameter)
                taken += count

    return _linear_layers_reset_by(take)
