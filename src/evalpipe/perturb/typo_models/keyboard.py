"""The typos a person makes on a keyboard: QWERTY neighbours, romaji / IME slips
(:mod:`evalpipe.perturb.human`)."""

import functools

from evalpipe.perturb import human
from evalpipe.perturb.typo_base import TypoModel

MODEL = TypoModel(make=functools.partial(human.make, dictionary=False), reads_context=True)
