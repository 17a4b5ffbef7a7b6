"""Typo models: how the typo of a drawn kind is made (params.yaml ``perturb.model``).

One module per model, named as registered in
:data:`evalpipe.registries.TYPO_MODELS`, holding ``MODEL = TypoModel(...)``.
``ops.decide`` draws the kind (replace, insert, delete, transpose, conversion) from the
occurrence's digest; the model (:class:`evalpipe.perturb.typo_base.TypoModel`) makes the
edit. Adding a model is its module and its name in the registry (docs/extending.md); no other
code names it.
"""

from __future__ import annotations

import functools
from importlib import import_module

from evalpipe.perturb.typo_base import TypoModel
from evalpipe.registries import TYPO_MODELS


@functools.cache
def typo_model(name: str) -> TypoModel:
    """The registered typo model ``name``.

    >>> typo_model(TYPO_MODELS.default).plain
    True
    """
    TYPO_MODELS.check(name, where="perturb.model")
    return import_module(f"evalpipe.perturb.typo_models.{name}").MODEL
