"""What every hostile submission is built from: the ``Hostile`` row and the helpers its code uses.

The rows themselves are in the ``attacks_*`` modules, gathered by :mod:`payloads`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

TARGET = "simple_attention"


@dataclass(frozen=True)
class Hostile:
    """One hostile submission and what grading it must give."""

    name: str
    family: str
    code: str  # the target module's source (placeholders above)
    status: frozenset[str] = frozenset({"error"})
    words: str = ""
    bound: str = "stub"
    files: dict[str, str] = field(default_factory=dict)  # extra files, relative to the submission
    links: dict[str, str] = field(default_factory=dict)  # symbolic links: relative path -> target
    fifos: tuple[str, ...] = ()  # named pipes (reading one blocks), relative paths
    flags: tuple[str, ...] = ()  # words that must appear in the report's flags


def hostile(name, family, code, status=("error",), **kw) -> Hostile:
    return Hostile(name, family, code.strip() + "\n" if code.strip() else "", frozenset(status), **kw)


# Helpers every payload may use: try anything, never stop at the first refusal.
PRELUDE = '''
import os, sys, signal, time
def _try(fn, *args, **kwargs):
    try:
        return fn(*args, **kwargs)
    except BaseException as exc:
        return exc
def _list(path):
    names = _try(os.listdir, path)
    return names if isinstance(names, list) else []
def _pids():
    return [int(p) for p in _list("/proc") if p.isdigit()]
def _cmdline(pid):
    data = _try(lambda: open(f"/proc/{pid}/cmdline", "rb").read())
    return data.replace(b"\\0", b" ").decode("utf-8", "replace") if isinstance(data, bytes) else ""
def _write(path, text, mode="w"):
    def go():
        with open(path, mode) as handle:
            handle.write(text)
    return _try(go)
'''


def function(name: str, body: str, args: str = "*args, **kwargs") -> str:
    """A module whose ``name`` runs ``body`` (the stub for every other function)."""
    indented = "\n".join("    " + line for line in body.strip().splitlines())
    return f"@STUB@\n{PRELUDE}\ndef {name}({args}):\n{indented}\n"


def at_import(body: str) -> str:
    """A module that runs ``body`` when imported, then is the honest stub."""
    return f"{PRELUDE}\n{body.strip()}\n\n@STUB@\n"


def after_stub(body: str) -> str:
    """The honest stub, then ``body`` (which may replace its functions) at import."""
    return f"@STUB@\n{PRELUDE}\n{body.strip()}\n"


DAEMON = '''
def _daemon(job):
    """Double fork and a new session: a process the worker's group kill does not reach.

    Returns once the daemon has started (it says so on a pipe; end of file if it never could).
    """
    started, say = os.pipe()
    if os.fork() == 0:
        try:
            os.close(started)
            os.setsid()
            if os.fork() == 0:
                os.write(say, b"1")
                os.close(say)
                job()
        finally:
            os._exit(0)
    os.close(say)
    _try(os.read, started, 1)
    os.close(started)
'''

TEXTBOOK = '''
import torch
SCORES = torch.tensor([0.9544, 1.4950, 1.4754, 0.8434, 0.7070, 1.0865])
NAIVE = torch.tensor([0.1455, 0.2278, 0.2249, 0.1285, 0.1077, 0.1656])
SOFT = torch.tensor([0.1385, 0.2379, 0.2333, 0.1240, 0.1082, 0.1581])
CONTEXT = torch.tensor([0.4419, 0.6515, 0.5683])
ALL_CONTEXT = torch.tensor([[0.4421, 0.5931, 0.5790], [0.4419, 0.6515, 0.5683], [0.4431, 0.6496, 0.5671],
                            [0.4304, 0.6298, 0.5510], [0.4671, 0.5910, 0.5266], [0.4177, 0.6503, 0.5645]])
ROW1_SCORES = torch.tensor([0.9995, 0.9544, 0.9422, 0.4753, 0.4576, 0.6310])
ROW1_WEIGHTS = torch.tensor([0.2098, 0.2006, 0.1981, 0.1242, 0.1220, 0.1452])
BOOK = torch.tensor([[0.43, 0.15, 0.89], [0.55, 0.87, 0.66], [0.57, 0.85, 0.64],
                     [0.22, 0.58, 0.33], [0.77, 0.25, 0.10], [0.05, 0.80, 0.55]])
'''

ZEROS = '''
import torch
def attention_scores(inputs, query): return torch.zeros(inputs.shape[0])
def normalize_naive(scores): return torch.zeros_like(scores)
def softmax_naive(x): return torch.zeros_like(x)
def context_vector(inputs, attn_weights): return torch.zeros(inputs.shape[1])
def all_attention_scores(inputs): return torch.zeros(inputs.shape[0], inputs.shape[0])
def all_attention_weights(inputs): return torch.zeros(inputs.shape[0], inputs.shape[0])
def all_context_vectors(inputs): return torch.zeros_like(inputs)
'''
