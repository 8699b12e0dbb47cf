"""A simple self-attention mechanism without trainable weights.

*Build a Large Language Model (From Scratch)*, section 3.3 ("Attending to different
parts of the input with self-attention"): 3.3.1 for a single query, 3.3.2 for all
input tokens at once.

The running example is the embedding of the sentence "Your journey starts with one
step": six tokens, each a 3-dimensional vector, stacked as the rows of a tensor
``inputs`` of shape ``(num_tokens, d_in) = (6, 3)``.

Self-attention turns every input vector x(i) into a *context vector* z(i): a weighted
average of all input vectors, where the weights say how relevant each token is to
token i. Without trainable weights this takes three steps:

1. **Attention scores** omega: how similar is the query to each input? Here the
   similarity is the dot product. For the query x(2) ("journey") the score of
   token i is ``x(i) . x(2)``.
2. **Attention weights** alpha: normalise the scores so that they are positive and
   sum to 1. Dividing by the sum works for this example but can misbehave (negative
   scores, very large or very small values); softmax is the usual choice because it
   always gives positive weights that sum to 1.
3. **Context vector**: the sum of the input vectors, each multiplied by its
   attention weight.

Doing this for every token as the query at once is just matrix multiplication:
all scores form a ``(num_tokens, num_tokens)`` matrix whose row i holds the scores
of query i, each row is normalised with softmax, and the context vectors are the
weight matrix times the inputs.

Textbook values (``query = inputs[1]``): scores
``[0.9544, 1.4950, 1.4754, 0.8434, 0.7070, 1.0865]``, softmax weights
``[0.1385, 0.2379, 0.2333, 0.1240, 0.1082, 0.1581]``, context vector
``[0.4419, 0.6515, 0.5683]``.

Write each function without Python loops over the tokens: use tensor operations, so
that the functions work for any number of tokens and any embedding size.
"""

import torch


def attention_scores(inputs, query):
    """Attention scores of one query against every input token (section 3.3.1).

    The score of token i is the dot product between the i-th row of ``inputs`` and
    ``query``. Compute all scores at once, without a loop.

    Args:
        inputs: tensor of shape ``(num_tokens, d_in)``, one embedding per row.
        query: tensor of shape ``(d_in,)``, for example ``inputs[1]``.

    Returns:
        Tensor of shape ``(num_tokens,)``: entry i is ``inputs[i] . query``.
    """
    ### BEGIN SOLUTION
    return inputs @ query
    ### END SOLUTION


def normalize_naive(scores):
    """Normalise attention scores by dividing by their sum (section 3.3.1).

    This is the simple normalisation the book shows before softmax: the results
    sum to 1, but it is not what attention uses in practice.

    Args:
        scores: 1-D tensor of shape ``(num_tokens,)``.

    Returns:
        Tensor of the same shape, each score divided by the sum of all scores.
    """
    ### BEGIN SOLUTION
    return scores / scores.sum()
    ### END SOLUTION


def softmax_naive(x):
    """A naive softmax over dimension 0 (section 3.3.1).

    Compute ``exp(x_i) / sum_j exp(x_j)``, summing along dimension 0, directly from
    the formula (do not call ``torch.softmax`` here). Every output is positive and
    the outputs sum to 1. This version can overflow or underflow for large or small
    inputs, which is why real code uses ``torch.softmax``; for the small scores in
    this chapter it agrees with ``torch.softmax(x, dim=0)``.

    Args:
        x: tensor of scores; the normalisation runs along dimension 0.

    Returns:
        Tensor of the same shape as ``x``.
    """
    ### BEGIN SOLUTION
    return torch.exp(x) / torch.exp(x).sum(dim=0)
    ### END SOLUTION


def context_vector(inputs, attn_weights):
    """The context vector of one query (section 3.3.1).

    It is the weighted sum of the input rows: ``sum_i attn_weights[i] * inputs[i]``.
    Compute it without a loop.

    Args:
        inputs: tensor of shape ``(num_tokens, d_in)``.
        attn_weights: tensor of shape ``(num_tokens,)``, the attention weights of
            one query (they sum to 1).

    Returns:
        Tensor of shape ``(d_in,)``.
    """
    ### BEGIN SOLUTION
    return attn_weights @ inputs
    ### END SOLUTION


def all_attention_scores(inputs):
    """Attention scores of every token against every token (section 3.3.2).

    Entry ``[i, j]`` is the dot product of ``inputs[i]`` (the query) and
    ``inputs[j]``, so row i holds the scores of query i. One matrix
    multiplication computes the whole matrix.

    Args:
        inputs: tensor of shape ``(num_tokens, d_in)``.

    Returns:
        Tensor of shape ``(num_tokens, num_tokens)``.
    """
    ### BEGIN SOLUTION
    return inputs @ inputs.T
    ### END SOLUTION


def all_attention_weights(inputs):
    """Attention weights of every token (section 3.3.2).

    Take the score matrix from ``all_attention_scores`` and normalise every row
    with PyTorch's softmax along the last dimension, so that each row sums to 1.

    Args:
        inputs: tensor of shape ``(num_tokens, d_in)``.

    Returns:
        Tensor of shape ``(num_tokens, num_tokens)`` whose rows sum to 1.
    """
    ### BEGIN SOLUTION
    return torch.softmax(all_attention_scores(inputs), dim=-1)
    ### END SOLUTION


def all_context_vectors(inputs):
    """Context vectors of every token at once (section 3.3.2).

    Row i of the result is the context vector of query i: the weighted sum of the
    input rows, with the weights from row i of ``all_attention_weights``. A single
    matrix multiplication computes all rows.

    Args:
        inputs: tensor of shape ``(num_tokens, d_in)``.

    Returns:
        Tensor of shape ``(num_tokens, d_in)``.
    """
    ### BEGIN SOLUTION
    return all_attention_weights(inputs) @ inputs
    ### END SOLUTION
