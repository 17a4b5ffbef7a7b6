"""Perplexity (``scoring.perplexity``; docs/scoring.md): the perturbable text's log-likelihood in
its prompt context, original against perturbed."""
