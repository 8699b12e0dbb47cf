"""Exercise 3.1: comparing ``SelfAttention_v1`` and ``SelfAttention_v2``.

*Build a Large Language Model (From Scratch)*, section 3.4.2, Exercise 3.1.

``SelfAttention_v1`` and ``SelfAttention_v2`` compute the same function; they give
different outputs only because their weights start from different random values. If
you give a v1 module the weights of a v2 module, both produce the same context
vectors.

The catch is the layout: ``nn.Linear(d_in, d_out)`` stores ``weight`` with shape
``(d_out, d_in)`` and computes ``x @ weight.T``, while version 1 keeps matrices of
shape ``(d_in, d_out)`` and computes ``x @ W``. So each v1 matrix must receive the
*transpose* of the matching v2 weight.

With ``torch.manual_seed(123)`` before building ``SelfAttention_v2(3, 2)``, the
v1 module then returns ``[[-0.5337, -0.1051], ..., [-0.5299, -0.1081]]`` on the
six-token ``inputs``, the same as the v2 module.
"""

import torch


def copy_v2_weights_into_v1(sa_v1, sa_v2):
    """Give ``sa_v1`` the weights of ``sa_v2`` so both compute the same output.

    Overwrite the values of ``sa_v1.W_query``, ``sa_v1.W_key`` and ``sa_v1.W_value``
    with the matching ``sa_v2`` Linear weights, transposed to shape
    ``(d_in, d_out)``. The v1 attributes stay trainable ``nn.Parameter``s (replace
    their data, or assign new ``nn.Parameter`` objects as the book does). ``sa_v2`` must be
    left unchanged. The modules are assumed to be built with the same ``d_in`` and
    ``d_out`` and ``sa_v2`` without bias (version 1 has no bias).

    Args:
        sa_v1: a ``SelfAttention_v1`` instance; modified in place.
        sa_v2: a ``SelfAttention_v2`` instance (``qkv_bias=False``).

    Returns:
        None. Afterwards ``sa_v1(x)`` equals ``sa_v2(x)`` for every input ``x``.
    """
    # TODO: write this part (see the docstring).
    raise NotImplementedError("copy_v2_weights_into_v1 is not written yet")
