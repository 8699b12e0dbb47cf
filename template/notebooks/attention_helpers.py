"""What the notebooks beside this file share: run a part of your code, compare, draw.

A notebook calls :func:`setup` once; it makes ``import <module>`` import YOUR module from
``exercises/<assignment>/`` and returns the book's values (``public_tests/<assignment>/
book_values.py``). Every call of your code goes through :func:`attempt`, so that a part you
have not written yet says "not written yet", an error in your code is shown in the cell that
ran it, and the notebook carries on either way. Nothing is drawn from a value your code did
not produce: :func:`heatmap` and :func:`heatmaps` draw only real results.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import traceback
from pathlib import Path

import matplotlib.pyplot as plt
import torch

HERE = Path(__file__).resolve()
IMPORTLIB = Path(importlib.__file__).resolve()


class NotAvailable(Exception):
    """A module of yours that could not be imported was used (its error was shown at the import)."""


class Unimported:
    """Stands in for a module of yours that failed to import: using it raises :class:`NotAvailable`."""

    def __init__(self, name: str, error: BaseException):
        self._name, self._error = name, error

    def __getattr__(self, attribute: str):
        if attribute.startswith("__"):  # Python's and IPython's own look-ups
            raise AttributeError(attribute)
        raise NotAvailable(f"{self._name}.py did not import ({type(self._error).__name__}: see the import cell)")


def setup(assignment: str):
    """Make your modules of ``assignment`` importable; return the book's values (a module)."""
    root = next((d for d in [Path.cwd(), *Path.cwd().parents, *HERE.parents] if (d / "exercises" / assignment).is_dir()), None)
    if root is None:
        raise FileNotFoundError(f"exercises/{assignment} not found: open this notebook inside your repository")
    exercises = str(root / "exercises" / assignment)
    if exercises not in sys.path:
        sys.path.insert(0, exercises)  # `import <module>` now imports YOUR module
    torch.set_printoptions(precision=4, sci_mode=False)
    print("Your modules are imported from", exercises)
    spec = importlib.util.spec_from_file_location(f"book_values_{assignment}", root / "public_tests" / assignment / "book_values.py")
    book = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(book)
    return book


def your_module(name: str):
    """Your module ``name``; if it fails to import, the error is shown and a stand-in returned."""
    try:
        return importlib.import_module(name)
    except Exception as exc:  # noqa: BLE001 - any error of the student's module is shown, not raised
        show_error(exc, f"{name}.py could not be imported")
        return Unimported(name, exc)


def show_error(exc: BaseException, what: str) -> None:
    """Print ``what`` and the traceback of ``exc`` in your code (the helpers' and importlib's frames left out)."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if not helper_frame(f.filename)]
    sys.stdout.flush()  # so the error shows below what the cell printed before it
    print(f"✗ {what} (the notebook carries on; this part is skipped):", file=sys.stderr)
    if frames:
        print("Traceback (most recent call last):\n" + "".join(traceback.format_list(frames)), end="", file=sys.stderr)
    print("".join(traceback.format_exception_only(exc)), end="", file=sys.stderr, flush=True)


def helper_frame(filename: str) -> bool:
    """Whether a traceback frame belongs to this module or to importlib (not to your code)."""
    return filename.startswith("<frozen importlib") or Path(filename).resolve() in (HERE, IMPORTLIB)


def attempt(compute):
    """``compute()``, or None when it fails: "not written yet" for NotImplementedError, else the error."""
    try:
        return compute()
    except NotImplementedError as exc:
        print(f"not written yet: {exc}")
    except NotAvailable as exc:
        print(f"not run: {exc}")
    except Exception as exc:  # noqa: BLE001 - a student's error is shown in its cell, the notebook goes on
        show_error(exc, "your code raised an error")
    return None


def first(value):
    """The first batch item of ``value`` (None stays None, and so does a value without items)."""
    if value is None:
        return None
    try:
        return value[0]
    except (TypeError, IndexError, KeyError) as exc:
        print(f"  ✗ your code returned {type(value).__name__} without a first batch item ({exc})")
        return None


def compare(label: str, yours, book) -> None:
    """Print your value beside the book's and say whether they agree to 4 decimals.

    ``yours`` is a value (None: nothing to compare), or a function of no arguments that
    computes it: it runs through :func:`attempt` once the label is printed.
    """
    print(label)
    if callable(yours) and not isinstance(yours, torch.Tensor):
        yours = attempt(yours)
    if yours is None:
        return
    try:
        yours = torch.as_tensor(yours).detach()
    except (TypeError, ValueError, RuntimeError):
        print(f"  ✗ your code returned {type(yours).__name__}, not a tensor: {yours!r:.200}")
        return
    book = torch.as_tensor(book)
    print("  yours:", yours)
    print("  book: ", book)
    if tuple(yours.shape) != tuple(book.shape):
        print(f"  ✗ your shape is {tuple(yours.shape)}, the book's is {tuple(book.shape)}")
    elif torch.allclose(yours.double(), book.double(), atol=1e-4):
        print("  ✓ matches the book")
    else:
        print("  ✗ differs from the book")


def check_shape(label: str, value, expected: tuple) -> None:
    """Print a tensor's shape and whether it is the book's (nothing for None)."""
    if value is None:
        return
    shape = tuple(getattr(value, "shape", ()))
    print(f"{label}: {shape}", "✓ matches the book" if shape == tuple(expected) else f"✗ the book's is {tuple(expected)}")


def drawable(weights, title: str):
    """``weights`` as a 2-D float tensor, or None (saying why) when there is nothing real to draw."""
    if weights is None:
        print(f"no heatmap of {title!r} yet: it needs the part above")
        return None
    try:
        matrix = torch.as_tensor(weights).detach().float()
    except (TypeError, ValueError, RuntimeError):
        print(f"no heatmap of {title!r}: your code returned {type(weights).__name__}, not a tensor")
        return None
    if matrix.dim() != 2 or 0 in matrix.shape or not torch.isfinite(matrix).all():
        print(f"no heatmap of {title!r}: expected a finite 2-D matrix, got shape {tuple(matrix.shape)}")
        return None
    return matrix


def draw(ax, w: torch.Tensor, title: str, labels=None, query_labels=None) -> None:
    """One attention-weight matrix on ``ax``: row i is query i, column j the token (``labels[j]``) it attends to."""
    rows, cols = w.shape
    image = ax.imshow(w, cmap="Blues", vmin=0.0, vmax=max(float(w.max()), 1e-6))
    ax.set_xticks(range(cols), (labels or list(range(cols)))[:cols], rotation=45, ha="right")
    ax.set_yticks(range(rows), (query_labels or labels or list(range(rows)))[:rows])
    ax.set_xlabel("attends to (key)")
    ax.set_ylabel("query")
    if rows * cols <= 100:
        for i in range(rows):
            for j in range(cols):
                dark = w[i, j] > 0.6 * w.max()
                ax.text(j, i, f"{w[i, j]:.2f}", ha="center", va="center", fontsize=7, color="white" if dark else "black")
    ax.set_title(title)
    ax.figure.colorbar(image, ax=ax, fraction=0.046)


def heatmap(weights, title: str, labels=None, query_labels=None) -> None:
    """Draw one attention-weight matrix, if your code produced one (rows labelled ``query_labels`` or ``labels``)."""
    heatmaps([weights], [title], labels, query_labels)


def heatmaps(matrices, titles, labels=None, query_labels=None) -> None:
    """Matrices side by side (a list, or a tensor whose first dimension runs over them), one per title.

    Nothing is drawn unless every one is a real matrix.
    """
    if matrices is None:
        print(f"no heatmaps of {', '.join(titles)} yet: they need the part above")
        return
    try:
        matrices = list(matrices)
    except TypeError:
        matrices = []
    if len(matrices) != len(titles):
        print(f"no heatmaps of {', '.join(titles)}: expected {len(titles)} matrices, your code gave {len(matrices)}")
        return
    ready = [drawable(m, t) for m, t in zip(matrices, titles, strict=True)]
    if any(m is None for m in ready):
        return
    _, axes = plt.subplots(1, len(ready), figsize=(4.6 * len(ready), 3.8), squeeze=False)
    for matrix, title, ax in zip(ready, titles, axes[0], strict=True):
        draw(ax, matrix, title, labels, query_labels)
    plt.tight_layout()
    plt.show()


def attention_weights_of(module, x, after_dropout: bool = False):
    """Run ``module(x)``; the attention weights its ``dropout`` layer received (or returned), or None."""
    layer = getattr(module, "dropout", None)
    if not isinstance(layer, torch.nn.Module):
        print("this module has no `dropout` layer to read the attention weights from")
        return None
    seen = []
    hook = layer.register_forward_hook(lambda _, given, out: seen.append((out if after_dropout else given[0]).detach()))
    try:
        with torch.no_grad():
            attempt(lambda: module(x))
    finally:
        hook.remove()
    if not seen:
        print("no attention weights: the module's `dropout` layer was not called")
    return seen[-1] if seen else None
