"""Facts about the student's code beyond tensors, read from the taken file with :mod:`ast` (never run).

Each function here states something that holds of the code as written, with its line, and only
when what the diagnosis already observed ties it to the failure:

- :func:`unused_values`: a line in a loop that the walk went through (or in the same loop) assigns a name that the
  function never reads afterwards (a GRU's new state, assigned and dropped), so the value it names
  is lost, and what the line reads instead stays the same on every pass;
- :func:`dropped_results`: a statement that keeps nothing of what it computes on a name a call passes.

Names written one slip away (``__init_``, ``self._attention_weigths``): :mod:`grader.diagnosis.misspellings`.

Nothing here guesses a cause from a pattern alone: each note is a fact of the file, given only
where the failure passes through its line.
"""

from __future__ import annotations

import ast
from pathlib import Path

from grader.diagnosis.source_text import statement_at, syntax_tree


def enclosing_function(path: Path, line: int) -> str:
    """The name of the innermost function of ``path`` holding ``line``, else ""."""
    tree = syntax_tree(path)
    if tree is None:
        return ""
    holding = [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
               and n.lineno <= line <= (n.end_lineno or n.lineno)]
    return max(holding, key=lambda n: n.lineno).name if holding else ""


def loop_indexing(path: Path, line: int, dim: int) -> tuple[int, str] | None:
    """The loop of ``path`` holding ``line`` whose variable is the index at position ``dim`` of the
    assignment into a subscript there (``scores[i, j, n:] = v`` and ``dim`` 0: the loop over ``i``);
    where nothing is written at that position (``x[i] = v``, ``dim`` 1) or no subscript is seen, the
    one loop holding the line; None where the position holds another index (a slice, ``r, n:-1``)."""
    tree = syntax_tree(path)
    if tree is None:
        return None
    index, other = None, False
    for node in ast.walk(tree):
        if isinstance(node, (ast.Assign, ast.AugAssign)) and node.lineno <= line <= (node.end_lineno or node.lineno):
            for target in getattr(node, "targets", None) or [getattr(node, "target", None)]:
                if isinstance(target, ast.Subscript):
                    parts = target.slice.elts if isinstance(target.slice, ast.Tuple) else [target.slice]
                    if dim < len(parts) and isinstance(parts[dim], ast.Name):
                        index = parts[dim].id
                    elif dim < len(parts):
                        other = True
    if other and index is None:
        return None
    holding = [n for n in ast.walk(tree) if isinstance(n, ast.For) and n.lineno < line <= (n.end_lineno or n.lineno)]
    chosen = [n for n in holding if isinstance(n.target, ast.Name) and n.target.id == index] if index else []
    if not chosen and not index and len(holding) == 1:
        chosen = holding
    if len(chosen) != 1:
        return None
    try:
        return chosen[0].lineno, path.read_text(errors="replace").splitlines()[chosen[0].lineno - 1].strip()[:200]
    except (OSError, IndexError):
        return None


def enclosing_loop(path: Path, line: int) -> tuple[int, str] | None:
    """The innermost loop of ``path`` holding ``line`` (its first line and that line's text), else None.
    A comprehension counts: ``[... for i in range(n - 1)]``."""
    tree = syntax_tree(path)
    if tree is None:
        return None
    loops = [n for n in ast.walk(tree) if isinstance(n, (ast.For, ast.While, ast.comprehension))
             and getattr(n, "lineno", getattr(getattr(n, "target", None), "lineno", 0)) <= line]
    holding = []
    for n in loops:
        first = n.lineno if hasattr(n, "lineno") else n.target.lineno
        last = getattr(n, "end_lineno", None) or (n.iter.end_lineno if hasattr(n, "iter") else first)
        if isinstance(n, ast.comprehension):
            first, last = n.target.lineno, n.iter.end_lineno or n.iter.lineno
        if first <= line <= last or (isinstance(n, (ast.For, ast.While)) and first < line <= last):
            holding.append((first, last))
    if not holding:
        return None
    first = max(holding)[0]
    try:
        text = path.read_text(errors="replace").splitlines()[first - 1].strip()[:200]
    except (OSError, IndexError):
        return None
    return first, text


def single_return(path: Path, text: str) -> tuple[int, str] | None:
    """A module-level function of ``path`` named in ``text`` as a call (``exercise_3_3_gpt2_attention()``)
    whose body, its docstring aside, is one ``return`` statement: that statement's first line and text
    (the one line that computes what the function gives), else None. Only when exactly one such
    function is named."""
    import re

    tree = syntax_tree(path)
    if tree is None:
        return None
    called = set(re.findall(r"\b([A-Za-z_]\w*)\(", text or ""))
    found = []
    for function in (n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name in called):
        body = [s for s in function.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant)
                                                 and isinstance(s.value.value, str))]
        if len(body) == 1 and isinstance(body[0], ast.Return) and body[0].value is not None:
            found.append(body[0])
    if len(found) != 1:
        return None
    try:
        lines = path.read_text(errors="replace").splitlines()
    except OSError:
        return None
    node = found[0]
    return node.lineno, " ".join(line.strip() for line in lines[node.lineno - 1:node.end_lineno])[:200]


def unused_values(path: Path, lines: list[int]) -> list[str]:
    """For lines the walk went through (``lines``) inside a loop: the names a line assigns that
    nothing in its function reads afterwards (nor anywhere in the loop), as notes with their line,
    with the names the line reads that the loop never assigns again (each pass of the loop reads
    the same value: a new state computed and dropped). ``_`` and names starting with ``_`` are a
    way of saying "not used" and are left out; a line outside a loop is not judged."""
    tree = syntax_tree(path)
    if tree is None:
        return []
    notes = []
    # The loops the walk went through: each of their assignments is judged (a value computed on one
    # pass for the next, assigned to a name nothing reads, leaves the next pass with the old one).
    loops = [n for n in ast.walk(tree) if isinstance(n, (ast.For, ast.While))
             and any(n.lineno < line <= (n.end_lineno or n.lineno) for line in lines)]
    lines = set(lines) | {n.lineno for loop in loops for n in ast.walk(loop) if isinstance(n, ast.Assign)}
    for function in (n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))):
        for line in sorted(lines):
            if not function.lineno < line <= (function.end_lineno or function.lineno):
                continue
            assign = next((n for n in ast.walk(function) if isinstance(n, ast.Assign) and n.lineno == line), None)
            loops = [n for n in ast.walk(function) if isinstance(n, (ast.For, ast.While))
                     and n.lineno < line <= (n.end_lineno or n.lineno)]
            if assign is None or not loops:
                continue
            loop = min(loops, key=lambda n: (n.end_lineno or n.lineno) - n.lineno)
            names = [t.id for target in assign.targets for t in ast.walk(target)
                     if isinstance(t, ast.Name) and isinstance(t.ctx, ast.Store) and not t.id.startswith("_")]
            # One of several values dropped on purpose (``out, _ = self.rnn(x, state)``) while what the
            # line reads stays the same on every pass: said as such (the dropped one may be the new state).
            dropped = [t.id for target in assign.targets if isinstance(target, ast.Tuple) for t in target.elts
                       if isinstance(t, ast.Name) and t.id.startswith("_")]
            if dropped:
                same = unchanged_in_loop(assign, loop, function)
                if same:
                    notes.append(f"line {line} drops one of the values its call returns (assigned to {dropped[0]}), and "
                                 f"{', '.join(same)}, which this line reads, is never assigned again inside the loop "
                                 f"(line {loop.lineno}), so every pass of the loop reads the same value")
            for name in names:
                read = [n for n in ast.walk(function) if isinstance(n, ast.Name) and n.id == name
                        and isinstance(n.ctx, ast.Load) and (n.lineno > line or n.lineno >= loop.lineno)]
                if read:
                    continue
                same = unchanged_in_loop(assign, loop, function)
                text = (f"line {line} assigns {name}, and nothing in {function.name} reads it afterwards: the value "
                        "it names is computed and never used")
                if same:
                    text += (f"; {', '.join(same)}, which this line reads, is never assigned again inside the loop "
                             f"(line {loop.lineno}), so every pass of the loop reads the same value")
                notes.append(text)
    return notes[:3]


# Tensor methods that return a new tensor and leave the one they are called on as it was: a
# statement that only calls one of them computes a value and drops it. Not .to, .float, .type and
# their kin: on an nn.Module they change the module itself.
RETURNS_NEW = frozenset({"reshape", "view", "permute", "transpose", "flatten", "squeeze", "unsqueeze", "contiguous",
                         "masked_fill", "repeat_interleave", "expand", "clone", "softmax", "sum", "mean", "t"})


def dropped_results(path: Path, calling: int) -> list[str]:
    """Statements of the function holding line ``calling``, before it, that call a method returning a
    new tensor (``valid_lens.reshape(-1)``) on a name that line ``calling`` passes on, and keep
    nothing of what it returns: notes with their line (the call then passes the name unchanged)."""
    tree = syntax_tree(path)
    if tree is None:
        return []
    functions = [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
                 and n.lineno < calling <= (n.end_lineno or n.lineno)]
    if not functions:
        return []
    function = min(functions, key=lambda n: (n.end_lineno or n.lineno) - n.lineno)
    call = [n for n in ast.walk(function) if isinstance(n, ast.stmt) and n.lineno <= calling <= (n.end_lineno or n.lineno)]
    passed = {n.id for statement in call[-1:] for n in ast.walk(statement) if isinstance(n, ast.Name)
              and isinstance(n.ctx, ast.Load)}
    notes = []
    for statement in ast.walk(function):
        if not (isinstance(statement, ast.Expr) and statement.lineno < calling and isinstance(statement.value, ast.Call)):
            continue
        method = statement.value.func
        if (isinstance(method, ast.Attribute) and method.attr in RETURNS_NEW and isinstance(method.value, ast.Name)
                and method.value.id in passed):
            name = method.value.id
            try:
                shown = ast.unparse(statement.value)
            except RecursionError:  # an expression nested too deep to write back: the line as written
                shown = statement_at(path, statement.lineno)
            notes.append(f"line {statement.lineno} ({shown}) keeps nothing of what it "
                         f"computes: {method.attr} returns a new tensor and leaves {name} as it was, so line "
                         f"{calling} passes {name} unchanged")
    return notes[:2]


def unchanged_in_loop(assign: ast.Assign, loop: ast.For | ast.While, function) -> list[str]:
    """The names ``assign``'s value reads that ``function`` assigns somewhere but ``loop`` never does
    (nor its target): every pass of the loop reads the same value of them."""
    stored = {t.id for n in ast.walk(loop) for t in ast.walk(n) if isinstance(t, ast.Name) and isinstance(t.ctx, ast.Store)}
    if isinstance(loop, ast.For):
        stored |= {t.id for t in ast.walk(loop.target) if isinstance(t, ast.Name)}
    return sorted({n.id for n in ast.walk(assign.value) if isinstance(n, ast.Name)
                   and isinstance(n.ctx, ast.Load) and n.id not in stored and n.id != "self"
                   and any(isinstance(a, ast.Name) and a.id == n.id and isinstance(a.ctx, ast.Store)
                           for a in ast.walk(function))})
