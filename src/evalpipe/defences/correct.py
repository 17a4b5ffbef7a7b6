"""Text-level correction: what a corrector may change in one field's text, and how.

A corrector never rewrites a text as a whole. It proposes word-level edits (:class:`Correction`:
a span of the input text and its replacement); :func:`allowed` drops every edit that touches
whitespace or a protected span, and :func:`apply` re-joins the text with the original separators.
So whitespace, punctuation between words, protected spans (the row's ``protected`` strings, gold
texts, option labels, numbers, number words, URLs and maths: the eligibility rules of
:mod:`evalpipe.perturb.eligibility`) never change.

Two kinds of correctors:

- ``spelling`` (:class:`SpellingCorrector`): pyspellchecker's English dictionary, word by word. A
  word the dictionary knows, a one-letter word and an all-capitals word (an acronym) are kept; any
  other word becomes the library's most likely correction, with the word's capitalisation.
  Japanese is not supported: its texts are left unchanged (counted as ``unsupported``).
- ``llm:<slug>``: a model asked with :func:`llm_prompt` to return the corrected text only;
  :func:`aligned_corrections` turns its answer into edits: English word for word (a word replaced
  by one word; words added, dropped or merged are ignored), Japanese character runs (difflib
  opcodes) that hold no whitespace. An answer too far from the input (similarity below
  :data:`MIN_SIMILARITY`: a rewrite, an answer to the question, noise) proposes no edit.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Sequence
from functools import lru_cache
from typing import NamedTuple

from spellchecker import SpellChecker

from evalpipe.perturb.eligibility import WORDS_DESIGN_RULES, Eligibility, RowContext

MIN_SIMILARITY = 0.5
# Word tokens as the English occurrence finder reads them (evalpipe.perturb.english.TOKEN).
WORD = re.compile(r"\w+(?:['’]\w+)*")
_SPACE = re.compile(r"\s")
_DIGIT = re.compile(r"[0-9０-９]")
PROTECTION = Eligibility(frozenset(WORDS_DESIGN_RULES))
"""The eligibility rules a correction obeys whatever ``perturb.exclude`` says: digits, number
words, URLs, maths, option labels and gold spans are never corrected."""

LLM_PROMPTS = {
    "english": (
        "Correct only the spelling mistakes (typos) in the text below. Do not rephrase, reorder, "
        "translate, answer or explain anything; keep every other word, number, symbol and line "
        "break exactly as it is. Reply with the corrected text only.\n\nText:\n{text}"
    ),
    "japanese": (
        "次の文章の誤字・脱字だけを訂正してください。言い換え・並べ替え・翻訳・回答・説明はせず、"
        "それ以外の語、数字、記号、改行はそのまま残してください。訂正した文章だけを出力してください。"
        "\n\n文章:\n{text}"
    ),
}


class Correction(NamedTuple):
    """One edit of a corrector: ``text[start:end]`` (code points) becomes ``corrected``."""

    start: int
    end: int
    original: str
    corrected: str


def protected_spans(text: str, protected: Iterable[str]) -> list[tuple[int, int]]:
    """Every place of ``text`` where one of the ``protected`` strings occurs."""
    spans = []
    for needle in protected:
        if not needle:
            continue
        at = text.find(needle)
        while at >= 0:
            spans.append((at, at + len(needle)))
            at = text.find(needle, at + 1)
    return spans


def allowed(
    text: str,
    edits: Iterable[Correction],
    *,
    row: RowContext,
    protected: Sequence[str] = (),
    language: str,
) -> list[Correction]:
    """The edits a corrector may make: none touching whitespace, a protected string or what the
    eligibility rules protect (:data:`PROTECTION`), and none that changes nothing.

    Examples
    --------
    >>> text = "Teh answer is 12 applse"
    >>> edits = [Correction(0, 3, "Teh", "The"), Correction(14, 16, "12", "13"),
    ...          Correction(17, 23, "applse", "apples"), Correction(3, 4, " ", "")]
    >>> [e.corrected for e in allowed(text, edits, row=RowContext(), language="english")]
    ['The', 'apples']
    >>> allowed(text, edits[2:3], row=RowContext(), protected=["applse"], language="english")
    []
    """
    blocked = PROTECTION.blocked_spans(text, row)
    shielded = protected_spans(text, protected)
    kept = []
    for edit in edits:
        if edit.original == edit.corrected or text[edit.start : edit.end] != edit.original:
            continue
        if _SPACE.search(edit.original) or _SPACE.search(edit.corrected):
            continue
        if _DIGIT.search(edit.corrected) and not _DIGIT.search(edit.original):
            continue  # a corrector never introduces a number
        if any(_touches(edit, s, e) for s, e in shielded):
            continue
        if edit.start < edit.end:
            why = PROTECTION.reason(text, edit.start, edit.end, blocked, row, language=language)
        else:  # an insertion: protected when it falls inside or at the edge of a blocked span
            why = next(
                (r for r, spans in blocked.items() if any(_touches(edit, s, e) for s, e in spans)),
                None,
            )
        if why is None:
            kept.append(edit)
    return kept


def _touches(edit: Correction, start: int, end: int) -> bool:
    if edit.start == edit.end:
        return start <= edit.start <= end
    return start < edit.end and edit.start < end


def apply(text: str, edits: Sequence[Correction]) -> str:
    """``text`` with the (non-overlapping) edits made, everything between them as it was.

    >>> apply("Teh  cat,sat", [Correction(0, 3, "Teh", "The"), Correction(9, 12, "sat", "sits")])
    'The  cat,sits'
    """
    pieces, cursor = [], 0
    for edit in sorted(edits, key=lambda e: (e.start, e.end)):
        if edit.start < cursor:
            continue  # overlapping edits: the first wins
        pieces += [text[cursor : edit.start], edit.corrected]
        cursor = edit.end
    pieces.append(text[cursor:])
    return "".join(pieces)


def _with_case(word: str, corrected: str) -> str:
    if word[:1].isupper() and word[1:].islower():
        return corrected[:1].upper() + corrected[1:]
    return corrected


class SpellingCorrector:
    """pyspellchecker's English dictionary (``distance`` 2, the library's default), word by word.

    Examples
    --------
    >>> SpellingCorrector().edits("Teh quesiton about NASA", language="english")[0]
    Correction(start=0, end=3, original='Teh', corrected='The')
    >>> SpellingCorrector().edits("誤字のある文", language="japanese")
    []
    """

    languages = ("english",)

    def __init__(self) -> None:
        self._checker = SpellChecker(language="en")
        self._correct = lru_cache(maxsize=None)(self._word)

    def _word(self, lower: str) -> str | None:
        if self._checker.known([lower]):
            return None
        best = self._checker.correction(lower)
        return None if best is None or best == lower else best

    def edits(self, text: str, *, language: str) -> list[Correction]:
        """The proposed edits of one text (before :func:`allowed`)."""
        if language not in self.languages:
            return []
        out = []
        for match in WORD.finditer(text):
            word = match.group()
            if len(word) < 2 or word.isupper() or not word.isalpha():
                continue
            best = self._correct(word.lower())
            if best is not None:
                out.append(Correction(match.start(), match.end(), word, _with_case(word, best)))
        return out


def llm_prompt(text: str, *, language: str) -> str:
    """The conservative correction request for one text.

    >>> llm_prompt("Teh cat", language="english").endswith("Text:\\nTeh cat")
    True
    """
    return LLM_PROMPTS[language].format(text=text)


def aligned_corrections(text: str, answer: str, *, language: str) -> list[Correction]:
    """The edits that turn ``text`` into a corrector model's ``answer``, unit by unit.

    English: word tokens aligned with difflib; a word replaced by exactly one word is an edit
    (words added, dropped, merged or split are not: separators stay the input's). Japanese:
    character runs that differ and hold no whitespace. No edit when the answer's similarity to
    the text is below :data:`MIN_SIMILARITY`.

    Examples
    --------
    >>> aligned_corrections("Teh cat  sat.", "The cat sat down.", language="english")
    [Correction(start=0, end=3, original='Teh', corrected='The')]
    >>> aligned_corrections("東京は日本の主都です", "東京は日本の首都です", language="japanese")
    [Correction(start=6, end=7, original='主', corrected='首')]
    >>> aligned_corrections("Teh cat", "I cannot help with that request at all.", language="english")
    []
    """
    answer = answer.strip()
    if language == "japanese":
        matcher = difflib.SequenceMatcher(None, text, answer, autojunk=False)
        if matcher.ratio() < MIN_SIMILARITY:
            return []
        return [
            Correction(i1, i2, text[i1:i2], answer[j1:j2])
            for tag, i1, i2, j1, j2 in matcher.get_opcodes()
            if tag != "equal"
        ]
    source = list(WORD.finditer(text))
    target = [m.group() for m in WORD.finditer(answer)]
    matcher = difflib.SequenceMatcher(None, [m.group() for m in source], target, autojunk=False)
    if matcher.ratio() < MIN_SIMILARITY:
        return []
    out = []
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "replace" and i2 - i1 == j2 - j1:
            for m, new in zip(source[i1:i2], target[j1:j2], strict=True):
                out.append(Correction(m.start(), m.end(), m.group(), new))
    return out
