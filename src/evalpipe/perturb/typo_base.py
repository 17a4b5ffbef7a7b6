"""What a typo model is (:class:`TypoModel`); the models are the modules of
:mod:`evalpipe.perturb.typo_models`."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from evalpipe.perturb.records import Operation, Skipped

# make(kind, word, digest, widths, *, lexicon, context) -> the edit, or why none was made
Make = Callable[..., Operation | Skipped]


@dataclass(frozen=True)
class TypoModel:
    """What a typo model decides.

    Attributes
    ----------
    make : ``make(kind, word, digest, widths, *, lexicon, context)``: the edit of the drawn
        ``kind`` on ``word`` (``digest`` the occurrence's 32 bytes, ``widths`` each kind's share
        of the draw, ``lexicon`` / ``context`` what ``human.prepare`` set up). None: the plain
        draw of ``ops`` (a character of the same script, uniformly).
    mix : the operation probabilities the model uses, from the configured ones (``{"replace_prob":
        ..., ...}`` -> the same keys), or None to use them as configured.
    reads_context : Japanese text is read through the IME lexicon, each occurrence's reading in
        its context (``human.prepare``); otherwise conversions use the homophone list.
    plain : the plain uniform draw: the words design keeps every occurrence under ``exclude:
        auto``, and the summary has no eligibility, redraw or fallback keys (its rows and
        summaries stay comparable with every study run with it).
    """

    make: Make | None = None
    mix: Callable[[Mapping[str, float]], dict[str, float]] | None = None
    reads_context: bool = False
    plain: bool = False
