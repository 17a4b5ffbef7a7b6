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

import bisect
import itertools
import operator
import os
from collections.abc import Iterable
from typing import NamedTuple

from evalpipe.errors import InputError


class Token(NamedTuple):
    start: int
    end: int
    lemma: str  # UniDic lemma; unknown words carry their surface
    pos: str  # UniDic POS components joined by "-", e.g. "助詞-格助詞"


_START_THEN_TARGET = operator.itemgetter(1, 0)
_NONES = itertools.repeat(None)
_PROBE = ("見まして", ["見", "まし", "て"], ["見る", "ます", "て"])


class Tokenizer:
    """UniDic short-unit tokenisation with character offsets into the given text.

    Always the unidic-lite dictionary (named explicitly, so a full UniDic installed beside it
    cannot change the analysis), read through MeCab's ``unidic`` output format: one C call per
    text, one line per token (surface, reading, lForm, lemma, POS, ...).
    """

    def __init__(self) -> None:
        try:
            import fugashi
            import unidic_lite

            dicdir = unidic_lite.DICDIR
            rc = os.path.join(dicdir, "mecabrc")
            self._tagger = fugashi.GenericTagger(f'-r "{rc}" -d "{dicdir}" -Ounidic')
            # Same analysis, surfaces only: enough for wordfreq lists and a third cheaper.
            self._wakati = fugashi.GenericTagger(f'-r "{rc}" -d "{dicdir}" -Owakati')
        except Exception as exc:  # ImportError, or RuntimeError from MeCab
            raise InputError(
                f"Japanese tokenisation needs fugashi with the unidic-lite dictionary "
                f"(pip install fugashi unidic-lite): {exc}"
            ) from exc
        text, surfaces, lemmas = _PROBE
        got = self.tokens(text)
        if [text[t.start : t.end] for t in got] != surfaces or [t.lemma for t in got] != lemmas:
            raise InputError(
                f"unidic-lite at {dicdir} gave an unexpected analysis of {text!r}: "
                f"{got}; expected surfaces {surfaces} and lemmas {lemmas}"
            )

    def spans(self, text: str) -> tuple[list[str], list[int], list[int]]:
        """The token surfaces of ``text`` with their start and end offsets, in order
        (``text[start:end]`` is the surface; whitespace that MeCab skips lies between tokens)."""
        if not text:
            return [], [], []
        surfaces = self._wakati.parse(text).split(" ")
        if "".join(surfaces) == text:  # no whitespace in the text: offsets are running sums
            ends = list(itertools.accumulate(map(len, surfaces)))
            return surfaces, [0, *ends[:-1]], ends
        kept: list[str] = []
        starts: list[int] = []
        ends = []
        cursor = 0
        for surface in surfaces:
            if not surface:
                continue
            if not text.startswith(surface, cursor):  # whitespace, which MeCab skips
                found = text.find(surface, cursor)
                if found < 0:
                    continue
                cursor = found
            kept.append(surface)
            starts.append(cursor)
            cursor += len(surface)
            ends.append(cursor)
        return kept, starts, ends

    def tokens(self, text: str) -> list[Token]:
        """Tokens of ``text`` with offsets such that ``text[t.start:t.end]`` is the surface."""
        out: list[Token] = []
        if not text:
            return out
        lines = self._tagger.parse(text).split("\n")
        cursor = 0
        startswith = text.startswith
        for line in lines[:-1]:  # the last line is EOS
            cols = line.split("\t")
            surface = cols[0]
            if not surface:
                continue
            if not startswith(surface, cursor):  # whitespace, which MeCab skips
                found = text.find(surface, cursor)
                if found < 0:  # MeCab never rewrites text; skip rather than mis-index
                    continue
                cursor = found
            end = cursor + len(surface)
            out.append(
                Token(
                    cursor,
                    end,
                    cols[3] if len(cols) > 4 else surface,
                    cols[4] if len(cols) > 4 else "",
                )
            )
            cursor = end
        return out


def _lemma_keys(lemma: str) -> tuple[str, ...]:
    cut = lemma.find("-")
    return (lemma, lemma[:cut]) if cut > 0 else (lemma,)


def _pos_matches(token_pos: str, wanted: str) -> bool:
    """Component-wise prefix: "助詞-格助詞" matches "助詞" and "助詞-格助詞", not "助詞-格"."""
    return not wanted or token_pos == wanted or token_pos.startswith(wanted + "-")


class JapaneseFinder:
    """Find token-aligned occurrences of Japanese target entries.

    Parameters
    ----------
    entries : ``(word, lemma, pos)`` per target in rank order; lemma/pos None for surface entries.
    tokenizer : a Tokenizer (building one loads the dictionary; share it).
    """

    def __init__(
        self,
        entries: Iterable[tuple[str, str | None, str | None]],
        *,
        tokenizer: Tokenizer | None = None,
    ) -> None:
        self.tokenizer = tokenizer or Tokenizer()
        self.by_lemma: dict[str, list[tuple[int, str]]] = {}
        self.by_surface: dict[str, int] = {}
        for i, (word, lemma, pos) in enumerate(entries):
            if lemma:
                wanted = "-".join(p for p in (pos or "").split("-") if p and p != "*")
                self.by_lemma.setdefault(lemma, []).append((i, wanted))
            else:
                self.by_surface.setdefault(word, i)
        # A surface entry is found by extending a run of tokens from each token start while the
        # text so far begins some entry: the run's texts that begin an entry and can grow.
        self._growing = {w[:n] for w in self.by_surface for n in range(1, len(w))}
        self._starters = self._growing | self.by_surface.keys()
        self._cache: dict[str, list[tuple[int, int, int]]] = {}
        self._ahead: dict[str, list[tuple[int, int, int]]] = {}  # see prepare

    batches = True  # see prepare

    def prepare(self, texts: Iterable[str]) -> None:
        """Find ``texts`` now, for the ``find`` calls that follow (a batch of examples' texts).

        MeCab's calls measured cheaper run over a batch back to back than one at a time
        between the perturb loop's other work (about 10% of the Japanese loop's CPU); only the
        last batch is held.
        """
        self._ahead = {}
        for text in texts:
            if text not in self._cache and text not in self._ahead:
                self._ahead[text] = self._find(text)

    def find(self, text: str) -> list[tuple[int, int, int]]:
        """``[(target index, start, end), ...]`` sorted by (start, target index)."""
        hit = self._cache.get(text)
        if hit is not None:
            return hit
        out = self._ahead.pop(text, None)
        if out is None:
            out = self._find(text)
        # JSQuAD-style sets repeat a context across questions: tokenise it once.
        if len(self._cache) < 200_000:
            self._cache[text] = out
        return out

    def _find(self, text: str) -> list[tuple[int, int, int]]:
        tokens = self.tokenizer.tokens(text) if self.by_lemma else []
        out: list[tuple[int, int, int]] = []
        if self.by_lemma:
            get = self.by_lemma.get
            for tok in tokens:
                for key in _lemma_keys(tok.lemma):
                    entries = get(key)
                    if entries:
                        for t, wanted in entries:
                            if _pos_matches(tok.pos, wanted):
                                out.append((t, tok.start, tok.end))
        if self.by_surface:
            if tokens:
                starts = [tok.start for tok in tokens]
                ends = [tok.end for tok in tokens]
                surfaces = [text[tok.start : tok.end] for tok in tokens]
            else:
                surfaces, starts, ends = self.tokenizer.spans(text)
                if not ends or (ends[-1] == len(text) == sum(map(len, surfaces)) and all(surfaces)):
                    return self._contiguous_runs(surfaces, starts, ends)
            self._runs(text, surfaces, starts, ends, out)
        out.sort(key=_START_THEN_TARGET)
        return out

    def _contiguous_runs(
        self, surfaces: list[str], starts: list[int], ends: list[int]
    ) -> list[tuple[int, int, int]]:
        """``_runs`` (then sorted) for a text that is its surfaces joined (no whitespace).

        A run's text is then its surfaces joined, so the one-token matches are a C-level map
        over the surfaces and the longer runs can only start where two neighbouring surfaces
        joined begin some entry (then the first also does, and can grow): a few tokens.
        """
        get = self.by_surface.get
        ids = list(map(get, surfaces))
        found: list[tuple[int, int, int]] = list(
            itertools.compress(
                zip(ids, starts, ends, strict=True),  # type: ignore[arg-type]  # no None kept
                map(operator.is_not, ids, _NONES),
            )
        )  # one per start, in order: sorted by (start, target)
        n = len(surfaces)
        if n < 2:
            return found
        growing = self._growing
        longer: list[tuple[int, int, int]] = []
        pairs = map(operator.add, surfaces, itertools.islice(surfaces, 1, None))
        for i in itertools.compress(range(n - 1), map(self._starters.__contains__, pairs)):
            j = i + 1
            piece = surfaces[i] + surfaces[j]
            while True:
                w = get(piece)
                if w is not None:
                    longer.append((w, starts[i], ends[j]))
                j += 1
                if j == n or piece not in growing:
                    break
                piece += surfaces[j]
        # An entry's matches do not overlap, the earliest start winning (as in ``_runs``). A
        # one-token match never overlaps a longer run of its entry (it would be one of the
        # run's tokens, each shorter than the run's text): only the longer runs are checked.
        last_end: dict[int, int] = {}
        for m in longer:  # in start order
            w = m[0]
            if last_end.get(w, -1) <= m[1]:
                last_end[w] = m[2]
                bisect.insort(found, m, key=_START_THEN_TARGET)
        return found

    def _runs(
        self,
        text: str,
        surfaces: list[str],
        starts: list[int],
        ends: list[int],
        out: list[tuple[int, int, int]],
    ) -> None:
        """Append the surface entries found in ``text``: ``text[starts[i]:ends[j]]`` equal to an
        entry for tokens ``i <= j``; an entry's matches do not overlap (the earliest start wins).

        A text that is an entry begins with the texts of its shorter runs, so a run grows only
        while its text begins some entry. Most tokens begin none: C-level iteration skips them.
        """
        by_surface = self.by_surface.get
        growing = self._growing
        last_end: dict[int, int] = {}
        n = len(surfaces)
        for i in itertools.compress(range(n), map(self._starters.__contains__, surfaces)):
            start = starts[i]
            piece = surfaces[i]
            j = i
            while True:
                w = by_surface(piece)
                if w is not None and last_end.get(w, -1) <= start:
                    out.append((w, start, ends[j]))
                    last_end[w] = ends[j]
                j += 1
                if j == n or piece not in growing:
                    break
                piece = text[start : ends[j]]
