"""Hostile submissions that attack the checks themselves: probes patched to fabricate claims
("reached", "equal", a dropout pattern, names and counts), empty lists where a check loops over
outputs, a SelfAttention_v1 whose forward is v2's, and values of unexpected type, shape or size.

Each row is ``(assignment, stem, source)``: ``source`` replaces that module of the reference
solutions (``@STUB@`` is the module's honest stub). Graded through the real command line by
``test_hostile_checks.py``: each must gain nothing (the module scores as its stub, 0) and void
nothing (exit 0, a grade, no grader error).
"""

from __future__ import annotations

# Student code runs in the same process as the probes: it can find their module and replace them.
PATCH = '''
import gc, types, torch
def _patch(**fake):
    for m in [m for m in gc.get_objects() if isinstance(m, types.ModuleType)
              and m.__name__.startswith(("_probes_", "_trusted_probes_"))]:
        for name, function in fake.items():
            if hasattr(m, name):
                setattr(m, name, function)
def _claims(student, **kwargs):
    return _patch_later
'''

DROPOUT = '''
def _weights(n):
    w = torch.tril(torch.ones(n, n))
    return w / w.sum(-1, keepdim=True)
def _dropout(student, seed, n, p, heads=None):
    w = _weights(n).repeat(2, 1, 1)
    blocks = 2 if heads is None else 4
    e = torch.cat([w] * blocks, dim=-1)
    keep = (torch.arange(n * n).reshape(n, n) % 2 == 0).repeat(2, 1, 1)
    t = torch.cat([torch.where(keep, w / (1 - p), torch.zeros_like(w))] * blocks, dim=-1)
    return {"eval": e, "train": t}
'''

MHA_NAMES = ["W_query.weight", "W_query.bias", "W_key.weight", "W_key.bias", "W_value.weight", "W_value.bias",
             "out_proj.weight", "out_proj.bias"]

MHA_FABRICATES = "@STUB@\n" + PATCH + DROPOUT + f'''
_patch(
    gradients=lambda student, seed, name, args, x, kwargs=None, train_seed=None: {{
        n: torch.ones(6, 4) if n.endswith("weight") and not n.startswith("out") else torch.ones(6, 6)
        if n == "out_proj.weight" else torch.ones(6) for n in {MHA_NAMES!r}}},
    mha_structure=lambda student, args, indivisible, x=None: {{
        "indivisible": "AssertionError", "out_proj": "Linear", "out_proj_shape": [6, 6, True], "num_heads": 3,
        "head_dim": 2, "parameters": [], "buffers": ["mask"], "state_dict": ["mask"], "mask_attribute": "Tensor",
        "mask": torch.triu(torch.ones(5, 5), 1), "out": None if x is None else torch.zeros(*x.shape[:2], 6)}},
    dropout=lambda student, seed, n, p: _dropout(student, seed, n, p, heads=True),
    future=lambda student, seed, args, x, changed: {{"out": torch.zeros(2, 7, 6), "out_changed": torch.zeros(2, 7, 6),
                                                   "weights": None}},
    wrapper_heads=lambda student, seed, args, x, kwargs=None: {{
        "heads_type": "ModuleList", "module_list": True, "head_types": ["CausalAttention"] * 3, "parameters": 135,
        "dropout": [0.25] * 3, "bias": [True] * 3, "out": torch.zeros(2, 7, 9), "head_outputs": [torch.zeros(2, 7, 3)] * 3}},
    exercise_3_2=lambda student, seed, args, x: {{"type": "MultiHeadAttentionWrapper", "heads": 2, "dropout": [0.3, 0.3],
                                                 "out": torch.zeros(x.shape[0], x.shape[1], 2)}},
    exercise_3_3=lambda student, seed, x=None: {{"type": "MultiHeadAttention", "parameters": 2360064, "shapes": {{}},
                                               "num_heads": 12, "mask_shape": [1024, 1024], "dropout": 0.0,
                                               "head_dim": 64, "d_out": 768, "out": torch.zeros(1, 3, 768)}},
    shorter=lambda student, seed, name, args, x: {{"out": torch.zeros(2, 5, 4), "error": None}},
)
import grader.probing as _probing
_probing.reached = lambda value: True
_probing.gradients = lambda named, prefix="": {{}}
'''

CAUSAL_EMPTY = "@STUB@\n" + PATCH + DROPOUT + '''
_patch(
    masks=lambda student, sizes: [],
    gradients=lambda student, seed, args, x, kwargs=None, name=None, train_seed=None: {
        n: torch.ones(3, 4) if n.endswith("weight") else torch.ones(3)
        for n in ["W_query.weight", "W_query.bias", "W_key.weight", "W_key.bias", "W_value.weight", "W_value.bias"]},
    structure=lambda student, args, name=None, x=None: {
        "buffers": ["mask"], "parameters": [], "state_dict": ["mask"], "mask_attribute": "Tensor",
        "mask": torch.triu(torch.ones(5, 5), 1), "out": None},
    dropout=lambda student, seed, n, p, heads=None: _dropout(student, seed, n, p),
    future=lambda student, seed, args, x, changed, name=None, dims=None: {
        "out": torch.zeros(2, 7, 3), "out_changed": torch.zeros(2, 7, 3), "weights": None},
    renormalize=lambda student, weights: {"result": torch.empty(0), "input_after": weights},
    causal_weights=lambda student, scores, d_k: {"result": [], "input_after": scores},
    masked_scores=lambda student, scores: {"masked": torch.empty(0), "weights": None},
)
'''

TRANSFER_FORWARD_REPLACED = '''
def copy_v2_weights_into_v1(sa_v1, sa_v2):
    """No weight copied: v1 answers with v2, through the object and through its class."""
    sa_v1.forward = sa_v2.forward
    type(sa_v1).forward = lambda self, x: sa_v2(x)
'''

TRANSFER_EMPTY = "@STUB@\n" + PATCH + '''
_patch(transfer=lambda student, seed, d_in, d_out, xs, v1_seed=None: {
    "v1_params": {n: {"kind": "Parameter", "shape": [d_in, d_out]} for n in ("W_query", "W_key", "W_value")},
    "v1_matrices": {}, "v1_named": ["W_query", "W_key", "W_value"], "v2_weights": {}, "v2_named": [],
    "v2": [], "v1": [], "v1_gradients": {n: True for n in ("W_query", "W_key", "W_value")}})
'''

ODD_VALUES = "@STUB@\n" + PATCH + '''
_odd = iter([{"a": 1}, [1, 2], "text", None, 3.5, torch.empty(0), torch.empty(0, 3), torch.full((2, 6, 3), float("nan")),
             torch.full((2, 2), 1e308, dtype=torch.float64), {"$traced": torch.empty(0, 2), "steps": [["softmax", "x"]]},
             {"out": torch.empty(0), "error": None}, {"eval": torch.zeros(0), "train": 5}, torch.zeros(2, 3, dtype=torch.bool),
             torch.zeros(2, 2, dtype=torch.complex64), [torch.empty(0)] * 9, {"W_query.weight": "nan"}])
def _next(*args, **kwargs):
    global _odd
    try:
        return next(_odd)
    except StopIteration:
        _odd = iter([{"a": 1}, [], torch.empty(0, 0)])
        return next(_odd)
_patch(**{name: _next for name in ("masks", "renormalize", "causal_weights", "masked_scores", "forward", "shorter",
                                   "future", "dropout", "structure", "gradients", "wrapper_heads", "mha_structure",
                                   "exercise_3_2", "exercise_3_3", "transfer")})
'''

# name -> (assignment, stem, source)
ATTACKS = {
    "mha_fabricates_claims": ("ch03", "mha", MHA_FABRICATES),
    "causal_empty_lists_and_forged_claims": ("ch03", "causal", CAUSAL_EMPTY),
    "transfer_v1_forward_is_v2s": ("ch03", "weight_transfer", TRANSFER_FORWARD_REPLACED),
    "transfer_empty_lists": ("ch03", "weight_transfer", TRANSFER_EMPTY),
    "causal_odd_values": ("ch03", "causal", ODD_VALUES),
    "mha_odd_values": ("ch03", "mha", ODD_VALUES),
    "transfer_odd_values": ("ch03", "weight_transfer", ODD_VALUES),
}
