"""A name the code needs, written one slip away: a method Python calls by name, an attribute a check reads.

Facts of the student's file (read with :mod:`ast`, never run), given only where the failure names the
missing name: ``__init_`` for ``__init__``, ``self._attention_weigths`` beside ``self._attention_weights``.
Each note names the line and the rename.
"""

from __future__ import annotations

import ast
from pathlib import Path

from grader.diagnosis.source_text import syntax_tree


# The methods Python or nn.Module call by name on a class of the student's: a method defined under a
# near name is never called.
CALLED_BY_NAME = ("__init__", "forward", "__call__", "extra_repr")


def _near(a: str, b: str) -> bool:
    """Whether ``a`` is ``b`` written with one character added, dropped, changed or two swapped (or
    another case): a slip of the keyboard, not another name."""
    if a == b:
        return False
    if a.lower() == b.lower():
        return True
    if abs(len(a) - len(b)) > 1:
        return False
    if len(a) == len(b):
        diff = [i for i in range(len(a)) if a[i] != b[i]]
        return len(diff) == 1 or (len(diff) == 2 and diff[1] == diff[0] + 1 and a[diff[0]] == b[diff[1]]
                                  and a[diff[1]] == b[diff[0]])
    short, long = (a, b) if len(a) < len(b) else (b, a)
    return any(long[:i] + long[i + 1:] == short for i in range(len(long)))


def misspelled_methods(path: Path, message: str) -> list[str]:
    """For an error whose message names a method Python calls by name (``X.__init__() takes 1
    positional argument``, ``missing the required "forward" function``): the student's classes that
    lack that method and define one under a near name, as notes with their line."""
    tree = syntax_tree(path)
    if tree is None:
        return []
    notes = []
    for cls in (n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)):
        methods = {m.name: m for m in cls.body if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef))}
        for wanted in CALLED_BY_NAME:
            if wanted in methods or wanted not in message:
                continue
            if wanted == "__init__" and f"{cls.name}.__init__" not in message and cls.name not in message:
                continue
            if wanted != "__init__" and cls.name not in message:
                continue
            for name, method in methods.items():
                if _near(name, wanted):
                    notes.append(f"line {method.lineno} defines {name}, not {wanted}: class {cls.name} has no method "
                                 f"{wanted} of its own, so Python never calls yours (it calls nn.Module's {wanted} "
                                 f"instead, which raised this error). Rename it {wanted}")
    return notes[:3]


def misspelled_names(path: Path, text: str) -> list[str]:
    """For names that a failing check reads (``decoder.attention_weights`` in ``text``, its words as
    the checks print them) that nothing in the student's file defines: the classes of theirs that
    define one under a near name (a method, a property, or ``self.<name> = ...``), as notes with its
    line. Getting a missing attribute finds nothing, whatever the probe then says."""
    tree = syntax_tree(path)
    if tree is None:
        return []
    members: dict[str, dict[str, int]] = {}  # class -> what it defines (a method, self.<name> = ...) -> line
    for cls in (n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)):
        own = members.setdefault(cls.name, {})
        for node in ast.walk(cls):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node is not cls:
                own.setdefault(node.name, node.lineno)
            elif (isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store)
                  and isinstance(node.value, ast.Name) and node.value.id == "self"):
                own.setdefault(node.attr, node.lineno)
    notes, read = [], _names_read(text)
    for wanted in read:
        for cls, own in members.items():
            if wanted in own:
                continue
            for name, line in own.items():
                # A leading underscore is the usual name of what a property returns, not a slip.
                if _near(name, wanted) and name not in read and name.lstrip("_") != wanted.lstrip("_"):
                    notes.append(f"line {line} defines {name}, not {wanted}: class {cls} has no {wanted}, which the "
                                 f"check reads, so reading it finds nothing. Rename it {wanted}")
    return notes[:2]


def _names_read(text: str) -> dict[str, None]:
    """The names a check's text reads, as code prints them: after a dot (decoder.attention_weights),
    or with an underscore inside; in order, once each."""
    import re

    return dict.fromkeys(re.findall(r"\.([A-Za-z_]\w{5,})\b", text or "") + re.findall(r"\b([A-Za-z]\w*_\w+)\b", text or ""))


def _self_attributes(node, ctx) -> list[tuple[str, int]]:
    """``(name, line)`` of every ``self.<name>`` under ``node`` read (``ast.Load``) or assigned (``ast.Store``)."""
    return sorted({(n.attr, n.lineno) for n in ast.walk(node) if isinstance(n, ast.Attribute) and isinstance(n.ctx, ctx)
                   and isinstance(n.value, ast.Name) and n.value.id == "self"}, key=lambda pair: pair[1])


def attributes_kept_apart(path: Path, text: str) -> list[str]:
    """For a name that a failing check reads (found in ``text`` as :func:`misspelled_names` finds
    them) and that a class of theirs defines as a method or property reading ``self.<b>``: another
    method of the class that assigns ``self.<a>``, a near name of ``b`` (one slip away) that nothing
    outside that method reads or assigns, and never assigns ``self.<b>``. What that method keeps
    then never reaches what the check reads: two attributes, where one is meant."""
    tree = syntax_tree(path)
    if tree is None:
        return []
    read = _names_read(text)
    notes = []
    for cls in (n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)):
        methods = [f for f in cls.body if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))]
        stores = {f: _self_attributes(f, ast.Store) for f in methods}  # by node: a property and its setter share a name
        used = {f: {name for name, _ in _self_attributes(f, ast.Load) + stores[f]} for f in methods}
        for reader in (f for f in methods if f.name in read):
            for wanted, line in _self_attributes(reader, ast.Load):
                for method in (f for f in methods if f is not reader):
                    stored = stores[method]
                    if any(name == wanted for name, _ in stored):
                        continue
                    elsewhere = set().union(*(used[other] for other in methods if other is not method))
                    for name, at in stored:
                        note = (f"line {at} assigns self.{name} in {method.name}, and nothing outside {method.name} "
                                f"reads it; {reader.name} reads self.{wanted} (line {line}), a near name, "
                                f"which {method.name} never assigns: they are two attributes, so what {method.name} "
                                f"keeps never reaches {reader.name}")
                        if _near(name, wanted) and name not in elsewhere and note not in notes:
                            notes.append(note)
    return notes[:2]
