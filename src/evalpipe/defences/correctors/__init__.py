"""Input correctors (params.yaml ``defences.correctors``; docs/defences.md).

One module per corrector, named as registered in
:data:`evalpipe.registries.CORRECTORS`, holding ``CORRECTOR = Corrector(...)``
(:class:`evalpipe.defences.correctors.base.Corrector`). Adding one is its module and its name in
the registry (docs/extending.md).
"""

from __future__ import annotations

import functools
from importlib import import_module

from evalpipe.defences.correctors.base import Corrector
from evalpipe.registries import CORRECTORS


def split_name(name: str) -> tuple[str, str]:
    """``(kind, argument)`` of a configured corrector: ``llm:qwen`` -> ``("llm", "qwen")``.

    >>> split_name("spelling")
    ('spelling', '')
    """
    kind, _, argument = name.partition(":")
    return kind, argument


@functools.cache
def corrector(kind: str) -> Corrector:
    """The registered corrector ``kind`` (the part of a configured name before its colon)."""
    CORRECTORS.check(kind, where="defences.correctors")
    return import_module(f"evalpipe.defences.correctors.{kind}").CORRECTOR
