"""English occurrences: whole words, case-insensitive, found in one pass over each text.

A text is split once into word tokens; each token is looked up in a dict of target words. So the
cost is one regex scan per text whatever the number of target words.

Rules (docs/perturbation.md):

- A word token is a run of word characters (Unicode letters, digits, underscore) and combining
  marks, possibly joined by inner apostrophes (``'`` or ``’``): "don't", "o’clock" and "it's" are
  one token each, so the target "it" is not found inside "it's" and "don't" matches "don’t".
- Hyphens, slashes, quotes, emoji and other punctuation separate words: "well-known" holds the
  words "well" and "known".
- Matching ignores ASCII case only ("The", "THE", "tHe" are "the"). Text is not normalised: a
  full-width "ｔｈｅ", a ligature "ﬁnd", an accented or decomposed "thé" are not the ASCII word, so
  start/end offsets always index the stored text exactly.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from evalpipe.errors import InputError

# Combining marks and variation selectors stay inside a token, so "the\u0301" is not "the".
_MARKS = "\u0300-\u036f\u1ab0-\u1aff\u1dc0-\u1dff\u20d0-\u20ff\ufe00-\ufe0f\ufe20-\ufe2f"
TOKEN = re.compile(rf"[\w{_MARKS}]+(?:['’][\w{_MARKS}]+)*")
_TARGET = re.compile(r"[a-z0-9]+(?:'[a-z0-9]+)*")


def normalise_target(word: str) -> str:
    """The lookup key of an English target word: lowercase, typographic apostrophe as ``'``."""
    return word.strip().lower().replace("’", "'")


class EnglishFinder:
    """Find whole-word, ASCII-case-insensitive occurrences of English target words.

    Parameters
    ----------
    words : target words in rank order (their position is the target index).
    source : the word list's file name, for error messages.
    """

    def __init__(self, words: list[str], *, source: str = "word list") -> None:
        self.lookup: dict[str, int] = {}
        for i, word in enumerate(words):
            key = normalise_target(word)
            if not _TARGET.fullmatch(key):
                raise InputError(
                    f"{source}, row {i + 1}, column 'word': English target words must be one "
                    f"word of ASCII letters or digits with optional inner apostrophes, found "
                    f"{word!r}"
                )
            if key in self.lookup:
                raise InputError(
                    f"{source}, row {i + 1}, column 'word': duplicate target word "
                    f"{word!r} (also row {self.lookup[key] + 1})"
                )
            self.lookup[key] = i

    batches = False  # a text is found as fast alone as in a batch

    def prepare(self, texts: Iterable[str]) -> None:
        """Nothing to do ahead (see ``targets.Finder``)."""

    def find(self, text: str) -> list[tuple[int, int, int]]:
        """``[(target index, start, end), ...]`` in text order; ``text[start:end]`` is the word."""
        get = self.lookup.get
        if text.isascii():
            # Lowercasing ASCII keeps every offset, so the text is lowered once, not per token,
            # and no token holds a typographic apostrophe or a non-ASCII look-alike.
            return [
                (t, m.start(), m.end())
                for m in TOKEN.finditer(text.lower())
                if (t := get(m.group())) is not None
            ]
        out = []
        for m in TOKEN.finditer(text):
            tok = m.group()
            t = get(tok.lower())
            if t is None:
                if "’" not in tok:
                    continue
                t = get(tok.lower().replace("’", "'"))
                if t is None:
                    continue
            # lower() also folds non-ASCII look-alikes (Kelvin sign -> k): keep ASCII matches only.
            if tok.isascii() or tok.replace("’", "'").isascii():
                out.append((t, m.start(), m.end()))
        return out
