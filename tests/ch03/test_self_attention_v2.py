"""Section 3.4.2: self-attention with nn.Linear projections (listing 3.2)."""

import pytest
import torch

import both_versions
import self_attention_v2 as ref
from both_versions import ORDER, Version
from grader.suite.comparisons import close, require
from textbook import INPUTS, V2_SEED_789, V2_WEIGHTS_ROW_1, random_inputs

X_BIAS = random_inputs(34, 4, 3)

BIAS_HINT = "Pass bias=qkv_bias to each of the three nn.Linear layers."


def reference(seed, d_in, d_out, qkv_bias=False):
    """The reference module built after ``torch.manual_seed(seed)``."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return ref.SelfAttention_v2(d_in, d_out, qkv_bias=qkv_bias)


def weights_of(queries, keys):
    """The textbook's attention weights, from queries and keys."""
    return torch.softmax(queries @ keys.T / keys.shape[-1] ** 0.5, dim=-1)  # (num_tokens, num_tokens)


def expected(seed, d_in, d_out, x, qkv_bias=False):
    """What the reference module returns."""
    with torch.no_grad():
        return reference(seed, d_in, d_out, qkv_bias)(x)


def projections(module, x):
    """The queries and keys of ``module`` on ``x``."""
    with torch.no_grad():
        return {"queries": module.W_query(x), "keys": module.W_key(x)}


# What the reference gives on the checks' inputs: computed once, when the suite is collected (a batch's
# grading processes share them), not in every submission's checks.
TEXTBOOK_PROJECTIONS = projections(reference(789, 3, 2), INPUTS)
TEXTBOOK_WEIGHTS = weights_of(**TEXTBOOK_PROJECTIONS)
WITH_BIAS = expected(3, 3, 2, X_BIAS, qkv_bias=True)


def linear_layers(params, d_in, d_out, bias, what):
    """The student's three layers, after checking they are nn.Linear(d_in, d_out, bias=bias)."""
    layers = params["layers"]
    for name in ORDER:
        info = layers[name]
        kind = info["kind"]
        require(kind != "missing", f"self.{name} is missing", what=what,
                hint=f"Create self.{name} = nn.Linear(d_in, d_out, bias=qkv_bias) in __init__.")
        require(kind == "Linear", f"self.{name} is a {kind}, not an nn.Linear", what=what,
                hint="Version 2 uses nn.Linear(d_in, d_out, bias=qkv_bias) layers (nn.Parameter matrices are version 1).")
        sizes = (info["in_features"], info["out_features"])
        swapped = " Yours has them the other way round." if sizes == (d_out, d_in) else ""
        require(sizes == (d_in, d_out), f"self.{name} is nn.Linear{sizes}, expected nn.Linear({d_in}, {d_out})", what=what,
                hint=f"nn.Linear(d_in, d_out): the input size comes first.{swapped}",
                expected=f"in_features={d_in}, out_features={d_out}", actual=f"in_features={sizes[0]}, out_features={sizes[1]}")
        if bias:
            require(info["bias"] is not None, f"self.{name} has no bias although qkv_bias=True", what=what, hint=BIAS_HINT)
        else:
            require(info["bias"] is None, f"self.{name} has a bias although qkv_bias=False", what=what,
                    hint=BIAS_HINT + " By default qkv_bias is False: no bias.")
    return layers


def named(params):
    """The names of the module's registered parameters."""
    return [name for name, _ in params["named"]]


def layer_weights(params, d_in, d_out, what):
    """The weights of the student's three layers, after checking they are nn.Linear(d_in, d_out) without bias."""
    layers = linear_layers(params, d_in, d_out, False, what)
    return [layers[name]["weight"] for name in ORDER]


# What the checks both versions share (both_versions.py) need of this one; the reference's values are
# computed here, when the suite is collected.
VERSION = Version(
    name="SelfAttention_v2", parameters_text="the weights of W_query, W_key, W_value", missing_what="the weight of ",
    uses="Compute the output with self.W_query, self.W_key and self.W_value: no hard-coded values, .detach() or torch.no_grad().",
    reaches="Apply each nn.Linear layer to x in forward (not through .detach() or .data): queries, keys and values all need it.",
    reference=reference, parameters=lambda module: [getattr(module, n).weight for n in ORDER],
    read_parameters=layer_weights, value_matrix=lambda weight: weight.T,
    attention_weights=lambda module, x: weights_of(**projections(module, x)))


@pytest.mark.points(2)
@pytest.mark.probe("forward", seed=789, d_in=3, d_out=2, xs=[INPUTS])
def test_forward_textbook(probed):
    close(probed["outs"][0], V2_SEED_789, what="torch.manual_seed(789); SelfAttention_v2(3, 2)(inputs)")


@pytest.mark.points(1)
@pytest.mark.probe("projections", seed=789, d_in=3, d_out=2, x=INPUTS)
def test_attention_weights_textbook(probed):
    for name, layer in (("queries", "W_query"), ("keys", "W_key")):
        close(probed[name], TEXTBOOK_PROJECTIONS[name], what=f"sa_v2.{layer}(inputs) after torch.manual_seed(789)")
    weights = weights_of(probed["queries"], probed["keys"])
    close(weights, TEXTBOOK_WEIGHTS, what="softmax(queries @ keys.T / sqrt(d_k)) from your W_query and W_key (seed 789)",
          grid=True)
    close(weights[0], V2_WEIGHTS_ROW_1, what="row 1 of softmax(queries @ keys.T / sqrt(d_k)) from your W_query and W_key")


WEIGHTS_SEED_1 = torch.stack([w.detach() for w in VERSION.parameters(reference(1, 5, 4))])


@pytest.mark.points(1)
@pytest.mark.probe("forward", seed=1, d_in=5, d_out=4, xs=[])
def test_layers_are_linear(probed):
    what = "W_query, W_key, W_value of SelfAttention_v2(5, 4)"
    layers = linear_layers(probed["params"], 5, 4, False, what)
    for name in ORDER:
        shape = list(layers[name]["weight"].shape)
        require(shape == [4, 5], f"self.{name}.weight has shape {tuple(shape)}, expected (4, 5)", what=what,
                hint="Keep nn.Linear's own weight: it is stored as (d_out, d_in).")
    require(sorted(named(probed["params"])) == sorted(f"{n}.weight" for n in ORDER),
            f"the module's parameters are {named(probed['params'])}", what=what,
            hint="The three layers' weights should be the only parameters: create no others.",
            expected=str([f"{n}.weight" for n in ORDER]), actual=str(named(probed["params"])))
    close(torch.stack([layers[name]["weight"] for name in ORDER]), WEIGHTS_SEED_1,
          what=what + ": their weights after torch.manual_seed(1) (stacked)")


@pytest.mark.points(1)
@pytest.mark.probe("forward", seed=3, d_in=3, d_out=2, xs=[X_BIAS], qkv_bias=True)
def test_qkv_bias(probed):
    what = "SelfAttention_v2(3, 2, qkv_bias=True)"
    layers = linear_layers(probed["params"], 3, 2, True, what)
    for name in ORDER:
        shape = list(layers[name]["bias"].shape)
        require(shape == [2], f"self.{name}.bias has shape {tuple(shape)}, expected (2,)", what=what, hint=BIAS_HINT)
    close(probed["outs"][0], WITH_BIAS, what=what + " on 4 tokens (seed 3)")


# The checks both versions share, collected here, in this order, as tests of this exercise, and
# the fixture they read this suite's VERSION with.
version = both_versions.version
test_forward_other = both_versions.test_forward_other
test_parameters_created_in_order = both_versions.test_parameters_created_in_order
test_attention_weights_rows_sum_to_one = both_versions.test_attention_weights_rows_sum_to_one
test_gradients_reach_every_parameter = both_versions.test_gradients_reach_every_parameter
