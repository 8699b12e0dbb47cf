"""The student's file read as text with :mod:`ast` (never run): statements, and the lines that make what a line uses.

A diagnosis shows lines of the student's file and asks about them hundreds of times, so each text is
parsed once (:func:`source_tree`). Here: the whole statement that holds a line, whether it transposes
its result, and the lines that make what a line uses besides tensors (an attribute,
``self.W_o = nn.Linear(...)``; a number, ``d = keys.shape[1]``).
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path


MAX_LINES = 5  # lines shown for how an attribute is made


# -- the lines that make what a line uses ----------------------------------------------------------------
def source_tree(path: Path) -> tuple[tuple[str, ...] | None, ast.Module | None]:
    """The lines and the syntax tree of ``path`` (None where it cannot be read or parsed); each
    text is parsed once: a diagnosis asks for the same few files hundreds of times (the trees are
    shared: read them, never change them)."""
    try:
        return _parsed_text(path.read_text(errors="replace"))
    except OSError:
        return None, None


@functools.lru_cache(maxsize=64)
def _parsed_text(text: str):
    try:
        return tuple(text.splitlines()), ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None, None


TRANSPOSING = frozenset({"T", "mT", "H", "mH"})  # read as attributes: the trace follows them through, unrecorded


def _statement_node(path: Path, line: int):
    """The smallest simple statement of ``path`` holding ``line`` (None if there is none)."""
    _, tree = source_tree(path)
    best = None
    for node in ast.walk(tree) if tree is not None else ():
        if (isinstance(node, ast.stmt) and not hasattr(node, "body") and node.lineno <= line <= (node.end_lineno or node.lineno)
                and (best is None or (node.end_lineno - node.lineno) < (best.end_lineno - best.lineno))):
            best = node
    return best


def transposed_at(path: Path, line: int) -> tuple[str, bool]:
    """For the statement of ``path`` at ``line``: the transposing attribute that the value it assigns or
    returns is, as a whole (``m = expr.T``, ``return expr.T``: "T"; ``.mT``, ``.H``, ``.mH``), else "",
    and whether it reads one anywhere.
    The trace follows such attributes through as the same value (:mod:`grader.sandbox.trace`): a step
    recorded there holds the value before it was transposed."""
    node = _statement_node(path, line)
    if node is None:
        return "", False
    value = getattr(node, "value", None)
    whole = (value.attr if isinstance(node, (ast.Assign, ast.AnnAssign, ast.Return)) and isinstance(value, ast.Attribute)
             and value.attr in TRANSPOSING else "")
    anywhere = any(isinstance(n, ast.Attribute) and n.attr in TRANSPOSING for n in ast.walk(node))
    return whole, anywhere


def statement_at(path: Path, line: int) -> str:
    """The simple statement of ``path`` that holds ``line``, on one line (a call written over three
    lines is shown whole); the line alone when it is not inside one (at most 200 characters)."""
    lines, tree = source_tree(path)
    if not lines or not 0 < line <= len(lines):
        return ""
    best = None
    if tree is not None:
        for node in ast.walk(tree):
            if (isinstance(node, ast.stmt) and not hasattr(node, "body") and node.lineno <= line <= (node.end_lineno or node.lineno)
                    and (best is None or (node.end_lineno - node.lineno) < (best.end_lineno - best.lineno))):
                best = node
    if best is None or best.end_lineno - best.lineno > 6:
        return lines[line - 1].strip()[:200]
    return statement(lines, best.lineno, best.end_lineno)


def statement(lines, first: int, last: int) -> str:
    """The text of a statement over lines ``first`` to ``last``, on one line (at most 200 characters)."""
    return " ".join(line.strip() for line in lines[first - 1:last])[:200]


NUMBER_CALLS = frozenset({"len", "int", "float", "round", "min", "max", "abs", "size", "dim", "numel", "item",
                          "sqrt", "pow", "log", "exp", "floor", "ceil"})  # calls a plain number is made by


def _plain_number(value) -> bool:
    """Whether an assigned expression can only be a number: names, attributes (``x.shape[1]``),
    subscripts, arithmetic and the calls of :data:`NUMBER_CALLS` (``X.size(0)``, ``math.sqrt(d)``)."""
    for node in ast.walk(value):
        if isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
            if name not in NUMBER_CALLS:
                return False
        elif isinstance(node, (ast.Lambda, ast.ListComp, ast.GeneratorExp, ast.DictComp, ast.SetComp, ast.List, ast.Tuple)):
            return False
    return True


def made_at(path: Path, line: int, code: str, computed: set, same_method: bool = False) -> dict[str, list[tuple[int, str]]]:
    """What ``code`` (at ``line`` of ``path``) uses besides tensors, and the lines that make it:
    ``self.NAME``, made in another method of the class (``self.NAME = ...``, ``self.NAME[...] =
    ...``, ``register_buffer("NAME", ...)``, and the lines there assigning the locals those use;
    ``same_method``: also earlier in the method holding ``line``, as ``self.mask = self.mask[:n, :n]``
    in forward); and each local name last assigned before ``line`` in the same function, by an
    expression that can only be a number, on a line where no tensor was computed (``computed``:
    the lines of the student's steps)."""
    lines, tree = source_tree(path)
    if tree is None:
        return {}
    names, plain = _names_on(code)
    found: dict[str, list[tuple[int, str]]] = {}
    for function in (n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))):
        if not function.lineno <= line <= (function.end_lineno or function.lineno):
            continue
        for name in plain:
            assigned = [n for n in ast.walk(function) if isinstance(n, ast.Assign) and n.lineno < line
                        and any(isinstance(t, ast.Name) and t.id == name for t in n.targets)]
            last = max(assigned, key=lambda n: n.lineno, default=None)
            if (last is not None and _plain_number(last.value)
                    and not set(range(last.lineno, last.end_lineno + 1)) & computed):
                found[name] = [(last.lineno, statement(lines, last.lineno, last.end_lineno))]
    for cls in (n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)):
        if not cls.lineno <= line <= (cls.end_lineno or cls.lineno):
            continue
        for method in (n for n in cls.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))):
            inside = method.lineno <= line <= (method.end_lineno or method.lineno)  # the method that uses it: lines before
            if inside and not same_method:
                continue
            for name in names:
                made = [(n, statement(lines, n, end)) for n, end in _making_lines(method, name)
                        if 0 < n <= len(lines) and not (inside and n >= line)]
                if made:
                    found.setdefault(f"self.{name}", []).extend(made)
    return {name: sorted(set(made))[:MAX_LINES] for name, made in found.items()}


def _parsed(code: str):
    """One line (or statement) of code parsed, else None."""
    text = code.strip()
    for attempt in (text, text.removeprefix("return ").strip()):
        try:
            return ast.parse(attempt)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            continue
    return None


def called_on(code: str) -> set[str]:
    """The attributes ``self.NAME`` that ``code`` calls (``self.W_k(keys)``: a layer)."""
    tree = _parsed(code)
    return {node.func.attr for node in ast.walk(tree) if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and isinstance(node.func.value, ast.Name) and node.func.value.id == "self"} if tree is not None else set()


def _names_on(code: str) -> tuple[list[str], list[str]]:
    """The attributes ``self.NAME`` and the plain names read on one line of code, in order."""
    tree = _parsed(code)
    if tree is None:
        return [], []
    attributes, plain = [], []
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self"
                and isinstance(node.ctx, ast.Load) and node.attr not in attributes):  # read, not assigned
            attributes.append(node.attr)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id != "self" and node.id not in plain:
            plain.append(node.id)
    return attributes, plain


def _making_lines(method, name: str) -> list[tuple[int, int]]:
    """The statements (first and last line) of ``method`` that make ``self.<name>``, and those
    assigning the locals they use."""
    making, used = [], set()
    for node in ast.walk(method):
        targets = []
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
            targets = [node.target]
        if any(_is_self_attribute(t, name) for t in targets):
            making.append((node.lineno, node.end_lineno or node.lineno))
            used |= {n.id for n in ast.walk(node.value) if isinstance(n, ast.Name)} if node.value else set()
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
              and node.func.attr in ("register_buffer", "register_parameter") and node.args
              and isinstance(node.args[0], ast.Constant) and node.args[0].value == name):
            making.append((node.lineno, node.end_lineno or node.lineno))
            used |= {n.id for a in node.args[1:] for n in ast.walk(a) if isinstance(n, ast.Name)}
    for node in ast.walk(method):
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id in used for t in node.targets):
            making.append((node.lineno, node.end_lineno or node.lineno))
    return sorted(set(making))


def _is_self_attribute(target, name: str) -> bool:
    """``self.<name>`` or ``self.<name>[...]`` (a tuple of targets: any of them)."""
    if isinstance(target, (ast.Tuple, ast.List)):
        return any(_is_self_attribute(t, name) for t in target.elts)
    if isinstance(target, ast.Subscript):
        target = target.value
    return (isinstance(target, ast.Attribute) and target.attr == name and isinstance(target.value, ast.Name)
            and target.value.id == "self")


def syntax_tree(path: Path):
    return source_tree(path)[1]
