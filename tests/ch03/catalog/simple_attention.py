"""Known mistakes in ``simple_attention.py`` (ch03): each a change of the reference and its concept
(see :mod:`grader.catalog`). Instructor only: the ``old`` texts are solution lines.
"""

from grader.catalog import Mistake

MISTAKES = [
    Mistake('simple_attention', 'scores from summed vectors',
            old='    return inputs @ query\n',
            new='    return inputs.sum(dim=1) * query.sum()\n',
            concept='The score of token i is the dot product inputs[i] . query (inputs @ query), not a sum of the vectors.'),
    Mistake('simple_attention', 'hard-coded textbook scores',
            old='    return inputs @ query\n',
            new='    return torch.tensor([0.9544, 1.4950, 1.4754, 0.8434, 0.7070, 1.0865])\n',
            concept=''),
    Mistake('simple_attention', 'divide by the largest score',
            old='    return scores / scores.sum()\n',
            new='    return scores / scores.max()\n',
            concept='Normalise by dividing each score by the sum of all scores.'),
    Mistake('simple_attention', 'softmax without exp',
            old='    return torch.exp(x) / torch.exp(x).sum(dim=0)\n',
            new='    return x / x.sum(dim=0)\n',
            concept='Softmax divides exp(x) by the sum of exp(x).'),
    Mistake('simple_attention', 'softmax summed over every entry',
            old='    return torch.exp(x) / torch.exp(x).sum(dim=0)\n',
            new='    return torch.exp(x) / torch.exp(x).sum()\n',
            concept='Sum along dimension 0 only, not over every entry.'),
    Mistake('simple_attention', 'context vector is the plain mean',
            old='    return attn_weights @ inputs\n',
            new='    return inputs.mean(dim=0)\n',
            concept='Weight each row of inputs by its attention weight and add the rows up (attn_weights @ inputs).'),
    Mistake('simple_attention', 'scores of the features, not the tokens',
            old='    return inputs @ inputs.T\n',
            new='    return inputs.T @ inputs\n',
            concept='All scores at once: inputs @ inputs.T is (num_tokens, num_tokens); inputs.T @ inputs compares features, not tokens.'),
    Mistake('simple_attention', 'softmax over dim 0',
            old='    return torch.softmax(all_attention_scores(inputs), dim=-1)\n',
            new='    return torch.softmax(all_attention_scores(inputs), dim=0)\n',
            concept='Softmax runs over the wrong dimension: use dim=-1, so that each row (one query) sums to 1.'),
    Mistake('simple_attention', 'weights transposed before the product',
            old='    return all_attention_weights(inputs) @ inputs\n',
            new='    return all_attention_weights(inputs).T @ inputs\n',
            concept='Multiply the weights by the inputs (weights @ inputs) without transposing the weights.'),
]
