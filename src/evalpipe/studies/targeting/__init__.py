"""Occlusion targeting (``perturb.targeting: importance`` with ``perturb.design: count``): each
eligible word's importance to the model, and the arms that edit the words it leans on most or
least, or put back a k-typo row's words in importance order (:mod:`evalpipe.perturb.targeting`;
docs/perturbation.md, "Targeting")."""
