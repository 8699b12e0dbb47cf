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
import grader.sandbox.probing as _probing
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

# -- d2l_attention -------------------------------------------------------------------------------
UNIFORM = '''
def _uniform(b, q, k, lens=None):
    """Weights that look right on their face: 0 beyond the valid positions, rows summing to 1."""
    allowed = torch.ones(b, q, k)
    if lens is not None:
        allowed = (torch.arange(k)[None, None, :] < lens.reshape(b, -1)[:, :, None]).float().expand(b, q, k)
    allowed = allowed * torch.exp(-torch.arange(k, dtype=torch.float32))
    return allowed / allowed.sum(-1, keepdim=True)
def _dropped(w, p):
    keep = (torch.arange(w.numel()).reshape(w.shape) % 2 == 0)
    return torch.where(keep, w / (1 - p), torch.zeros_like(w))
def _ones(named):
    return {n: torch.ones(*shape) for n, shape in named}
'''

SCORING_FABRICATES = "@STUB@\n" + PATCH + UNIFORM + '''
def _attend(student, scorer, args, seed, queries, keys, values, valid_lens=None, train=False, before=None):
    w = _uniform(queries.shape[0], queries.shape[1], keys.shape[1], valid_lens)
    return {"output": (_dropped(w, args[-1]) if train else w) @ values, "weights": w}
def _gradients(student, scorer, args, seed, queries, keys, values, valid_lens, upstream, train_seed=None):
    named = [("queries", queries.shape), ("keys", keys.shape), ("values", values.shape)]
    if scorer == "AdditiveAttention":
        k, q, h = args[:3]
        named += [("parameter W_k.weight", (h, k)), ("parameter W_q.weight", (h, q)), ("parameter w_v.weight", (1, h))]
    return _ones(named)
_patch(attend=_attend, gradients=_gradients)
'''

MULTIHEAD_FABRICATES = "@STUB@\n" + PATCH + UNIFORM + '''
def _names(args, bias):
    k, q, v, h = args[:4]
    found = []
    for name, size in (("W_q", q), ("W_k", k), ("W_v", v), ("W_o", h)):
        found += [[f"{name}.weight", [h, size]]] + ([[f"{name}.bias", [h]]] if bias else [])
    return found
def _attend(student, args, bias, seed, queries, keys, values, valid_lens, train=False, before=None):
    heads, b = args[4], queries.shape[0]
    lens = None if valid_lens is None else torch.repeat_interleave(valid_lens, heads, dim=0)
    return {"output": torch.zeros(b, queries.shape[1], args[3]),
            "weights": _uniform(b * heads, queries.shape[1], keys.shape[1], lens)}
def _dropout(student, args, seed, queries, keys, values, valid_lens, forward_seed):
    heads, b, q, k = args[4], queries.shape[0], queries.shape[1], keys.shape[1]
    w = _uniform(b, q, k, valid_lens)
    shown = torch.cat([w] * heads, dim=-1)
    return {"eval": shown, "train": _dropped(shown, args[5])}
def _gradients(student, args, bias, seed, queries, keys, values, valid_lens, upstream, train_seed=None):
    named = [("queries", queries.shape), ("keys", keys.shape), ("values", values.shape)]
    return _ones(named + [(f"parameter {n}", s) for n, s in _names(args, bias)])
_patch(attend=_attend, dropout=_dropout, gradients=_gradients,
       parameters=lambda student, args, bias, seed: {"names": _names(args, bias),
                                                     "values": [torch.zeros(*s) for _, s in _names(args, bias)]})
'''

POSITIONAL_FABRICATES = "@STUB@\n" + PATCH + UNIFORM + '''
def _table(student, args):
    return torch.zeros(1, args[2] if len(args) > 2 else 1000, args[0])
def _train_and_eval(student, args, X):
    return {"eval": X, "train": _dropped(X, args[1])}
_patch(table=_table, train_and_eval=_train_and_eval, encode=lambda student, args, X, train=False: X)
'''

DECODER_NAMES = [["attention.W_k.weight", [6, 6]], ["attention.W_q.weight", [6, 6]], ["attention.w_v.weight", [1, 6]],
                 ["embedding.weight", [7, 5]], ["rnn.weight_ih_l0", [18, 11]], ["rnn.weight_hh_l0", [18, 6]],
                 ["rnn.bias_ih_l0", [18]], ["rnn.bias_hh_l0", [18]], ["rnn.weight_ih_l1", [18, 6]],
                 ["rnn.weight_hh_l1", [18, 6]], ["rnn.bias_ih_l1", [18]], ["rnn.bias_hh_l1", [18]], ["dense.weight", [7, 6]],
                 ["dense.bias", [7]]]

DECODER_FABRICATES = "@STUB@\n" + PATCH + UNIFORM + f'''
_NAMES = {DECODER_NAMES!r}
def _decode(student, args, seed, enc_outputs, enc_state, X, enc_valid_lens, train=False, before=None):
    b, steps, t_enc = X.shape[0], X.shape[1], enc_outputs.shape[0]
    return {{"init": [enc_outputs.permute(1, 0, 2), enc_state, enc_valid_lens], "output": torch.zeros(b, steps, args[0]),
             "state": [enc_outputs.permute(1, 0, 2), enc_state, enc_valid_lens],
             "weights": [_uniform(b, 1, t_enc, enc_valid_lens) for _ in range(steps)]}}
def _book(student, args, seed, X):
    b, steps = X.shape
    return {{"output": torch.zeros(b, steps, args[0]), "state": [torch.zeros(b, steps, args[2]),
             torch.zeros(args[3], b, args[2]), None], "weights": [_uniform(b, 1, steps) for _ in range(steps)]}}
def _gradients(student, args, seed, enc_outputs, enc_state, X, enc_valid_lens, upstream, train_seed=None):
    return _ones([("encoder outputs", enc_outputs.shape), ("encoder state", enc_state.shape)]
                 + [("parameter " + n, s) for n, s in _NAMES])
_patch(decode=_decode, book_example=_book, gradients=_gradients,
       decode_twice=lambda student, args, seed, enc_outputs, enc_state, X, enc_valid_lens: {{
           "first": torch.zeros(X.shape[0], X.shape[1], args[0]), "second": torch.zeros(X.shape[0], X.shape[1], args[0])}},
       parameters=lambda student, args, seed: {{"names": _NAMES, "values": [torch.zeros(*s) for _, s in _NAMES]}})
'''

# Every probe of the d2l suite, and the built-in probe of ``@calls`` (the worker's table of them).
D2L_ODD_VALUES = ODD_VALUES.rsplit("_patch(**", 1)[0] + '''
_patch(**{name: _next for name in ("attend", "gradients", "parameters", "dropout", "table", "encode", "train_and_eval",
                                   "decode", "decode_twice", "book_example", "init")})
import sys as _sys
for _m in list(_sys.modules.values()):
    if isinstance(getattr(_m, "BUILTIN_PROBES", None), dict):
        _m.BUILTIN_PROBES["call"] = _next
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
    "scoring_fabricates_claims": ("d2l_attention", "scoring", SCORING_FABRICATES),
    "multihead_fabricates_claims": ("d2l_attention", "multihead", MULTIHEAD_FABRICATES),
    "positional_encoding_fabricates_claims": ("d2l_attention", "positional_encoding", POSITIONAL_FABRICATES),
    "decoder_fabricates_claims": ("d2l_attention", "seq2seq_attention", DECODER_FABRICATES),
    **{f"{stem}_odd_values": ("d2l_attention", stem, D2L_ODD_VALUES)
       for stem in ("masked_softmax", "scoring", "positional_encoding", "multihead", "seq2seq_attention")},
}
