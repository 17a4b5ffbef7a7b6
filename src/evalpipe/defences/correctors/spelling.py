"""pyspellchecker's English dictionary, word by word (:class:`SpellingCorrector`)."""

from __future__ import annotations

from evalpipe.defences.correct import SpellingCorrector
from evalpipe.defences.correctors.base import Corrector, Edits


def _edits() -> Edits:
    return SpellingCorrector().edits


CORRECTOR = Corrector(local=_edits, languages=SpellingCorrector.languages)
