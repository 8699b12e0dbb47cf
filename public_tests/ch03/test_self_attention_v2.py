"""Public tests for section 3.4.2: SelfAttention_v2 reproduces the book (seed 789), then other sizes,
seeds and qkv_bias=True (the reference's results, from catalog.json)."""

import pytest

from book_values import INPUTS, V2_SEED_789, random_inputs
from grader.suite.public_reference import same
from grader.suite.comparisons import close, require

X_OTHER = random_inputs(45, 5, 4)
BIAS_HINT = "Pass bias=qkv_bias to each of the three nn.Linear layers."


@pytest.mark.points(1)
@pytest.mark.probe("output", seed=789, d_in=3, d_out=2, x=INPUTS)
def test_forward_textbook(probed):
    close(probed, V2_SEED_789, what="torch.manual_seed(789); SelfAttention_v2(3, 2)(inputs)")


@pytest.mark.points(1)
@pytest.mark.probe("output", seed=3, d_in=4, d_out=3, x=X_OTHER, qkv_bias=True)
def test_forward_with_bias(probed, reference):
    same(probed, reference, what="torch.manual_seed(3); SelfAttention_v2(4, 3, qkv_bias=True)(x), x of shape (5, 4)")


@pytest.mark.points(1)
@pytest.mark.probe("parameters", seed=789, d_in=3, d_out=2)
def test_parameters_in_the_book_order(probed, reference):
    same(probed, reference, what="torch.manual_seed(789); SelfAttention_v2(3, 2): the weights of its layers "
                                 "(created in the order W_query, W_key, W_value)")


@pytest.mark.points(1)
@pytest.mark.probe("layers", d_in=4, d_out=3)
def test_layers_and_their_bias(probed):
    for qkv_bias in (False, True):
        what = f"SelfAttention_v2(4, 3{', qkv_bias=True' if qkv_bias else ''}): W_query, W_key, W_value"
        for name in ("W_query", "W_key", "W_value"):
            layer = probed[str(qkv_bias)][name]
            require(layer["kind"] == "Linear", f"self.{name} is {'missing' if layer['kind'] == 'missing' else 'a ' + layer['kind']}"
                    ", not an nn.Linear", what=what, hint=f"Create self.{name} = nn.Linear(d_in, d_out, bias=qkv_bias) in __init__.")
            require(layer["sizes"] == [4, 3], f"self.{name} is nn.Linear{tuple(layer['sizes'])}, expected nn.Linear(4, 3)",
                    what=what, hint="nn.Linear(d_in, d_out): the input size comes first.")
            if qkv_bias:
                require(layer["bias"], f"self.{name} has no bias although qkv_bias=True", what=what, hint=BIAS_HINT)
            else:
                require(not layer["bias"], f"self.{name} has a bias although qkv_bias=False", what=what,
                        hint=BIAS_HINT + " By default qkv_bias is False: no bias.")
