"""Keyboard typos in the human mix of operations and, in English words, the human profile of
positions in the word (the GitHub Typo Corpus shares), English words with entries taking a real
misspelling (:mod:`evalpipe.perturb.natural`)."""

import functools
from collections.abc import Mapping

from evalpipe.perturb import human
from evalpipe.perturb.natural import natural_probabilities
from evalpipe.perturb.typo_base import TypoModel


def _mix(values: Mapping[str, float]) -> dict[str, float]:
    # the total rate is configured, the mix is the human one
    mixed = natural_probabilities(
        values["replace_prob"],
        values["insert_prob"],
        values["delete_prob"],
        values["transpose_prob"],
    )
    return {f"{k}_prob": v for k, v in mixed.items()}


MODEL = TypoModel(
    make=functools.partial(human.make, dictionary=True, positions=True),
    mix=_mix,
    reads_context=True,
)
