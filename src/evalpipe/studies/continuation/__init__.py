"""Continuations as arms (params.yaml ``continuation``; docs/perturbation.md, "Continuation
designs"): whether a typo hurts by misreading the question or by derailing the reasoning. The
model continues an assistant prefix (a request's ``prefix``): the CoT swap cells, the swap after
deleting the clean reasoning's final line, and the clean-prefix scan, each scored as the share of
typo-changed answers it restores."""
