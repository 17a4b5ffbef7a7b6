"""A character of the same script class, drawn uniformly (``ops.decide``'s own draw)."""

from evalpipe.perturb.typo_base import TypoModel

MODEL = TypoModel(plain=True)
