"""Plain data across the sandbox border: JSON, with tensors as base64 raw bytes.

``encode`` runs in the sandboxed worker; ``decode`` runs in the trusted process and
trusts nothing: it checks every type, size and dtype before building a tensor.
"""

from __future__ import annotations

import base64
import json
import math
import re

# dtype names that may cross the border, with their item sizes.
DTYPES = {
    "float32": 4,
    "float64": 8,
    "float16": 2,
    "bfloat16": 2,
    "int64": 8,
    "int32": 4,
    "uint8": 1,
    "bool": 1,
}
MAX_ELEMENTS = 4_000_000  # per tensor; the largest a probe returns is far smaller
MAX_DEPTH = 12
MAX_ITEMS = 100_000  # list items and dict keys in one message, all lists together
MAX_STRING = 100_000
MAX_LINE = 16 * 1024 * 1024  # one line on a channel (a worker's event, a relayed outcome)
MAX_NESTING = 32  # brackets deep in one line: the value's MAX_DEPTH and the envelope around it
_STRINGS = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"')
_INNERMOST = re.compile(rb"\[[^\[\]{}]*\]|\{[^\[\]{}]*\}")
_BRACKET = re.compile(rb"[\[\]{}]")


class WireError(ValueError):
    """The data that came back from the sandbox is not valid plain data."""


def encode_tensor(t) -> dict:
    """Encode an exact ``torch.Tensor`` (the caller checks the type) as plain data."""
    t = t.detach().cpu().resolve_neg().contiguous()  # a negative view (torch._neg_view) as its values
    name = str(t.dtype).removeprefix("torch.")
    if name not in DTYPES:
        raise TypeError(f"tensors of dtype {t.dtype} cannot be graded")
    if name == "bfloat16":
        raw = t.view(__import__("torch").int16).numpy().tobytes()
    else:
        raw = t.numpy().tobytes()
    return {"$tensor": {"dtype": name, "shape": list(t.shape), "data": base64.b64encode(raw).decode()}}


def dumps(value) -> str:
    """Serialise plain data (dicts, lists, numbers, strings, encoded tensors) to one line."""
    return json.dumps(value, separators=(",", ":"))


def parse_line(line: bytes):
    """Parse one JSON line from across the border, bounding its size and nesting *before*
    the parser sees it (a deep line would exhaust the stack of the process that parses it)."""
    if len(line) > MAX_LINE:
        raise WireError("line too long")
    # A line with at most MAX_NESTING opening brackets cannot nest deeper (most lines: a tensor's
    # few brackets); only others are reduced to their skeleton (about 3.5 ms a submission, measured).
    if line.count(b"[") + line.count(b"{") > MAX_NESTING:
        skeleton = _STRINGS.sub(b'""', line)
        for _ in range(MAX_NESTING):  # each pass removes one level of brackets, in C
            skeleton, found = _INNERMOST.subn(b"0", skeleton)
            if not found:
                break
        if _BRACKET.search(skeleton):
            raise WireError("nested too deeply")
    try:
        return json.loads(line)
    except (ValueError, RecursionError) as exc:
        raise WireError(f"not JSON: {str(exc)[:100]}") from None


def decode(raw, depth: int = 0, *, budget: list[int] | None = None):
    """Turn parsed JSON from the sandbox into Python values and tensors, validating all.

    ``budget`` counts down the items left for this message (:data:`MAX_ITEMS` to start with).
    """
    import torch

    budget = [MAX_ITEMS] if budget is None else budget
    if depth > MAX_DEPTH:
        raise WireError("nested too deeply")
    if raw is None or type(raw) in (bool, int, str):
        if type(raw) is str and len(raw) > MAX_STRING:
            raise WireError("string too long")
        if type(raw) is int and abs(raw) > 2**63:
            raise WireError("integer too large")
        return raw
    if type(raw) is float:
        return raw
    if type(raw) in (list, dict):
        budget[0] -= len(raw)
        if budget[0] < 0:
            raise WireError("too many items")
    if type(raw) is list:
        return [decode(item, depth + 1, budget=budget) for item in raw]
    if type(raw) is dict:
        if set(raw) == {"$tensor"}:
            return _decode_tensor(raw["$tensor"], torch)
        if any(type(key) is not str for key in raw):
            raise WireError("keys must be strings")
        return {key: decode(val, depth + 1, budget=budget) for key, val in raw.items()}
    raise WireError(f"unexpected JSON value of type {type(raw).__name__}")


def _decode_tensor(spec, torch):
    if type(spec) is not dict or set(spec) != {"dtype", "shape", "data"}:
        raise WireError("malformed tensor")
    dtype, shape, data = spec["dtype"], spec["shape"], spec["data"]
    if type(dtype) is not str or dtype not in DTYPES:
        raise WireError(f"dtype {dtype!r} not allowed")
    if type(shape) is not list or len(shape) > 8 or any(type(n) is not int or not 0 <= n <= MAX_ELEMENTS for n in shape):
        raise WireError("malformed shape")
    numel = math.prod(shape)
    if numel > MAX_ELEMENTS:
        raise WireError("tensor too large")
    if type(data) is not str:
        raise WireError("malformed tensor data")
    try:
        raw = base64.b64decode(data, validate=True)
    except ValueError:
        raise WireError("tensor data is not base64") from None
    if len(raw) != numel * DTYPES[dtype]:
        raise WireError("tensor data does not match its shape")
    if numel == 0:
        return torch.empty(shape, dtype=getattr(torch, dtype))
    if dtype == "bfloat16":
        flat = torch.frombuffer(bytearray(raw), dtype=torch.int16).view(torch.bfloat16)
    else:
        flat = torch.frombuffer(bytearray(raw), dtype=getattr(torch, dtype))
    return flat.reshape(shape).clone()


def encode_args(value):
    """Probe arguments as plain data for the sandbox: tensors encoded, tuples as lists."""
    import torch

    if isinstance(value, torch.Tensor):
        return encode_tensor(value)
    if isinstance(value, dict):
        return {k: encode_args(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [encode_args(v) for v in value]
    return value
