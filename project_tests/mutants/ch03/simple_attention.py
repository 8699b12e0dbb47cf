"""Small mutations of solutions/ch03/simple_attention.py (description, old, new)."""

MUTANTS = [
    ("scores from summed vectors", "    return inputs @ query\n", "    return inputs.sum(dim=1) * query.sum()\n"),
    ("hard-coded textbook scores", "    return inputs @ query\n",
     "    return torch.tensor([0.9544, 1.4950, 1.4754, 0.8434, 0.7070, 1.0865])\n"),
    ("divide by the largest score", "    return scores / scores.sum()\n", "    return scores / scores.max()\n"),
    ("softmax without exp", "    return torch.exp(x) / torch.exp(x).sum(dim=0)\n", "    return x / x.sum(dim=0)\n"),
    ("softmax summed over every entry", "    return torch.exp(x) / torch.exp(x).sum(dim=0)\n",
     "    return torch.exp(x) / torch.exp(x).sum()\n"),
    ("context vector is the plain mean", "    return attn_weights @ inputs\n", "    return inputs.mean(dim=0)\n"),
    ("scores of the features, not the tokens", "    return inputs @ inputs.T\n", "    return inputs.T @ inputs\n"),
    ("softmax over dim 0", "    return torch.softmax(all_attention_scores(inputs), dim=-1)\n",
     "    return torch.softmax(all_attention_scores(inputs), dim=0)\n"),
    ("weights transposed before the product", "    return all_attention_weights(inputs) @ inputs\n",
     "    return all_attention_weights(inputs).T @ inputs\n"),
]
