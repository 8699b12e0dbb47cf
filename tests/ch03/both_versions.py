"""The tests SelfAttention_v1 and SelfAttention_v2 share (sections 3.4.1-3.4.2).

Both versions compute the same function; only the way they keep their weights differs
(nn.Parameter matrices, nn.Linear layers). So the checks of behaviour are written once, here:
``test_self_attention_v1.py`` and ``test_self_attention_v2.py`` each take them by assignment
(``test_forward_other = both_versions.test_forward_other``), which makes pytest collect them there,
in that place of the file, as tests of that exercise with their points. Each suite takes the fixture
``version`` too, and defines ``VERSION``, the :class:`Version` that fixture gives: made when the
suite is collected, so the reference's outputs are computed then, once, and a batch's grading
processes share them.

Every probe marker and the text saying what was run are made from the same numbers, here
(``run``, ``call``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import pytest
import torch

from behaviour import check_outputs

from grader.suite.comparisons import close, graph_cut, require
from textbook import INPUTS, random_inputs

ORDER = ("W_query", "W_key", "W_value")
X_OTHER = random_inputs(21, 7, 5)  # 7 tokens of size 5: not the book's sizes
X_LONG = random_inputs(22, 9, 3)
X_SQUARE = random_inputs(23, 5, 5)  # as many tokens as value dimensions: weights recoverable
X_GRAD = random_inputs(24, 4, 3)

# (case, seed, d_in, d_out, inputs): the module built after torch.manual_seed(seed), applied to each input
FORWARD = [
    ("other_seed", 7, 3, 2, [INPUTS]),
    ("other_sizes", 11, 5, 4, [X_OTHER]),
    ("other_lengths", 8, 3, 2, [INPUTS[:1], INPUTS[:2], X_LONG]),
]
IN_ORDER = {"seed": 2024, "d_in": 4, "d_out": 3}
SQUARE = {"seed": 5, "d_in": 5, "d_out": 6}
GRADIENTS = {"seed": 3, "d_in": 3, "d_out": 2}


def run(name: str, seed: int, d_in: int, d_out: int, x: torch.Tensor) -> str:
    """What was run, in the words of the feedback: said from the same numbers as the probe marker."""
    if x is INPUTS:
        return f"torch.manual_seed({seed}); {name}({d_in}, {d_out})(inputs)"
    tokens = f"{x.shape[0]} token{'s' if x.shape[0] != 1 else ''}"
    return f"{name}({d_in}, {d_out}) on {tokens} of size {x.shape[1]} (seed {seed})"


@dataclass
class Version:
    """What the shared tests need to know of one version, and the reference's values they compare with."""

    name: str  # the class: SelfAttention_v1 or SelfAttention_v2
    reference: Callable  # (seed, d_in, d_out) -> the reference module, built after torch.manual_seed(seed)
    parameters: Callable  # (module) -> its W_query, W_key, W_value as it keeps them (matrices, or nn.Linear weights)
    read_parameters: Callable  # (probed params, d_in, d_out, what) -> the same of the student's, once checked
    value_matrix: Callable  # (its W_value as kept) -> the (d_in, d_out) matrix such that values = x @ it
    attention_weights: Callable  # (module, x) -> the reference's attention weights on x
    parameters_text: str  # how the feedback names the three as kept
    uses: str  # the hint when the output depends on no parameter
    reaches: str  # the hint when a matrix got no gradient
    missing_what: str = ""  # put before a matrix's name in "no gradient reached ..."
    # The reference's values, computed when the suite is collected:
    forward: dict = field(init=False)  # FORWARD case -> its outputs on the case's inputs
    in_order: torch.Tensor = field(init=False)  # its three parameters, stacked, built as IN_ORDER says
    square: torch.Tensor = field(init=False)  # its output on X_SQUARE, built as SQUARE says
    square_weights: torch.Tensor = field(init=False)  # the attention weights behind that output
    gradients: dict = field(init=False)  # the gradients of its three matrices as kept, built as GRADIENTS says

    def __post_init__(self):
        with torch.no_grad():
            self.forward = {case: [self.reference(seed, d_in, d_out)(x) for x in xs]
                            for case, seed, d_in, d_out, xs in FORWARD}
            self.in_order = torch.stack([w.detach() for w in self.parameters(self.reference(**IN_ORDER))])
            square = self.reference(**SQUARE)
            self.square = square(X_SQUARE)
            self.square_weights = self.attention_weights(square, X_SQUARE)
        module = self.reference(**GRADIENTS)
        (module(X_GRAD).float() ** 2).sum().backward()
        self.gradients = {name: w.grad.detach().clone() for name, w in zip(ORDER, self.parameters(module), strict=True)}


@pytest.fixture(scope="module")
def version(request) -> Version:
    """The version of the suite running the test: its ``VERSION``."""
    return request.module.VERSION


def call(version: Version, sizes: dict) -> str:
    """``SelfAttention_vX(d_in, d_out)`` for the sizes of a probe marker."""
    return f"{version.name}({sizes['d_in']}, {sizes['d_out']})"


@pytest.mark.points(1, cases=3)
@pytest.mark.parametrize("case, seed, d_in, d_out, xs", [
    pytest.param(*row, id=row[0], marks=pytest.mark.probe("forward", seed=row[1], d_in=row[2], d_out=row[3], xs=row[4]))
    for row in FORWARD])
def test_forward_other(probed, version, case, seed, d_in, d_out, xs):
    check_outputs(probed["outs"], version.forward[case], xs, what=lambda x: run(version.name, seed, d_in, d_out, x))


@pytest.mark.points(1)
@pytest.mark.probe("forward", **IN_ORDER, xs=[])
def test_parameters_created_in_order(probed, version):
    what = f"{version.parameters_text} of {call(version, IN_ORDER)} after torch.manual_seed({IN_ORDER['seed']})"
    read = version.read_parameters(probed["params"], IN_ORDER["d_in"], IN_ORDER["d_out"], what)
    close(torch.stack(read), version.in_order, what=what + " (stacked)")


@pytest.mark.points(1)
@pytest.mark.probe("forward", **SQUARE, xs=[X_SQUARE])
def test_attention_weights_rows_sum_to_one(probed, version):
    """With as many tokens as value dimensions the values have full rank, so ``out @ pinv(values)``
    gives back the attention weights the student's module used; they are compared with the
    reference's as a grid, then the output itself."""
    what = (f"attention weights of {call(version, SQUARE)} on {X_SQUARE.shape[0]} tokens, recovered from your output "
            "(output = weights @ values)")
    ran = run(version.name, **SQUARE, x=X_SQUARE)
    out = probed["outs"][0]
    if not (isinstance(out, torch.Tensor) and out.shape == version.square.shape):
        close(out, version.square, what=ran)
    read = version.read_parameters(probed["params"], SQUARE["d_in"], SQUARE["d_out"], what)
    values = X_SQUARE.double() @ version.value_matrix(read[2]).double()
    recovered = (out.double() @ torch.linalg.pinv(values)).float()
    close(recovered, version.square_weights, what=what, grid=True)
    close(out, version.square, what=ran)


@pytest.mark.points(1)
@pytest.mark.probe("gradients", **GRADIENTS, x=X_GRAD)
def test_gradients_reach_every_parameter(probed, version):
    """Gradients from ``(output ** 2).sum().backward()`` reach each of the three matrices and every parameter."""
    what = f"which parameters of {call(version, GRADIENTS)} receive a gradient from (output ** 2).sum().backward()"
    require(probed["output_requires_grad"], "the output does not depend on any trainable parameter", what=what,
            hint=version.uses)
    missing = [name for name in ORDER if not probed["attributes"][name]]
    # The hint names a cut graph only when that is confirmed: the other matrices got the reference's gradients.
    cut = graph_cut(probed.get("gradients"), version.gradients, missing)
    require(not missing, f"no gradient reached {version.missing_what}{', '.join(missing)}", what=what,
            hint=version.reaches if cut else "", expected=str(list(ORDER)),
            actual=str([n for n in ORDER if n not in missing]))
    idle = [name for name, reached in probed["parameters"].items() if not reached]
    require(not idle, f"no gradient reached the parameter(s) {', '.join(idle)}", what=what,
            hint="Every parameter of the module should take part in forward; create no others.")
    gradients = probed.get("gradients")
    require(isinstance(gradients, dict), "no gradients came back", what=what)
    for name in ORDER:
        close(gradients.get(name), version.gradients[name], what=f"{what}: the gradient of {name}", atol=1e-5)
