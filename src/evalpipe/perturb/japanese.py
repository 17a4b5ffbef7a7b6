"""Japanese occurrences: a word is a UniDic token (fugashi + unidic-lite), each text tokenised once.

Two kinds of target entries:

- With a lemma (the BCCWJ short-unit-word list, which uses UniDic's lemmas): a token is an
  occurrence when its UniDic lemma equals the entry's lemma (UniDic's loan-word gloss such as
  ``-the`` in ``ザ-the`` is ignored) and, when the entry has a part of speech such as
  ``助詞-格助詞``, the token's POS starts with those components. The occurrence is the token's
  surface as it appears: lemma ます is found as まし in 便利になりました.
- Without a lemma (wordfreq lists): a span of one or more consecutive tokens whose surfaces,
  joined, equal the word. A match must start and end on token boundaries, so ます is not found
  inside the adverb ますます, which UniDic reads as one token.
"""

from __future__ import annotations

import csv
from collections.abc import Iterable
from dataclasses import dataclass

from evalpipe.errors import InputError


@dataclass(frozen=True)
class Token:
    start: int
    end: int
    lemma: str | None
    pos: tuple[str, ...]


class Tokenizer:
    """UniDic short-unit tokenisation with character offsets into the given text."""

    def __init__(self) -> None:
        try:
            import fugashi

            self._tagger = fugashi.Tagger()
        except Exception as exc:  # fugashi raises RuntimeError when no dictionary is installed
            raise InputError(
                f"Japanese tokenisation needs fugashi with the unidic-lite dictionary "
                f"(pip install fugashi unidic-lite): {exc}"
            ) from exc

    def tokens(self, text: str) -> list[Token]:
        """Tokens of ``text`` with offsets such that ``text[t.start:t.end]`` is the surface."""
        out: list[Token] = []
        cursor = 0
        for node in self._tagger(text):
            surface = node.surface
            if not surface:
                continue
            start = cursor + len(node.white_space)
            if not text.startswith(surface, start):
                start = text.find(surface, cursor)
                if start < 0:  # MeCab never rewrites text; skip rather than mis-index
                    continue
            cursor = start + len(surface)
            raw = node.feature_raw
            fields = next(csv.reader([raw])) if '"' in raw else raw.split(",")
            lemma = fields[7] if len(fields) > 7 and fields[7] not in ("", "*") else None
            pos = tuple(f for f in fields[:4] if f not in ("", "*"))
            out.append(Token(start, cursor, lemma, pos))
        return out


def _lemma_keys(lemma: str) -> tuple[str, ...]:
    cut = lemma.find("-")
    return (lemma, lemma[:cut]) if cut > 0 else (lemma,)


class JapaneseFinder:
    """Find token-aligned occurrences of Japanese target entries.

    Parameters
    ----------
    entries : ``(word, lemma, pos)`` per target in rank order; lemma/pos None for surface entries.
    tokenizer : a Tokenizer (one per process: building it loads the dictionary).
    """

    def __init__(self, entries: Iterable[tuple[str, str | None, str | None]], *,
                 tokenizer: Tokenizer | None = None) -> None:
        self.tokenizer = tokenizer or Tokenizer()
        self.by_lemma: dict[str, list[tuple[int, tuple[str, ...]]]] = {}
        self.by_surface: dict[str, int] = {}
        self.max_len = 0
        for i, (word, lemma, pos) in enumerate(entries):
            if lemma:
                parts = tuple(p for p in (pos or "").split("-") if p and p != "*")
                self.by_lemma.setdefault(lemma, []).append((i, parts))
            else:
                self.by_surface.setdefault(word, i)
                self.max_len = max(self.max_len, len(word))
        self._cache: dict[str, list[tuple[int, int, int]]] = {}

    def find(self, text: str) -> list[tuple[int, int, int]]:
        """``[(target index, start, end), ...]`` sorted by (start, target index)."""
        hit = self._cache.get(text)
        if hit is not None:
            return hit
        tokens = self.tokenizer.tokens(text)
        out: list[tuple[int, int, int]] = []
        if self.by_lemma:
            for tok in tokens:
                if tok.lemma is None:
                    continue
                for key in _lemma_keys(tok.lemma):
                    for t, pos in self.by_lemma.get(key, ()):
                        if tok.pos[: len(pos)] == pos:
                            out.append((t, tok.start, tok.end))
        if self.by_surface:
            get = self.by_surface.get
            last_end: dict[int, int] = {}
            n = len(tokens)
            for i in range(n):
                start = tokens[i].start
                for j in range(i, n):
                    if j > i and tokens[j].start != tokens[j - 1].end:
                        break  # whitespace between tokens: not one written word
                    end = tokens[j].end
                    if end - start > self.max_len:
                        break
                    t = get(text[start:end])
                    if t is not None and last_end.get(t, -1) <= start:
                        out.append((t, start, end))
                        last_end[t] = end
        out.sort(key=lambda o: (o[1], o[0]))
        # JSQuAD-style sets repeat the same context across questions: tokenise it once.
        if len(self._cache) < 200_000:
            self._cache[text] = out
        return out
