"""BIG-Bench Hard: one parser, several answer formats. Which subtask has which format is declared
in the BBH spec (bbh.yaml, ``subtasks.<name>.answer``); the spec passes it in as ``format``."""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping, Sequence
from typing import Any

from evalpipe.answers.normalise import (
    before_next_question,
    nfkc,
    normalise_number,
    strip_answer_prefix,
    strip_edges,
)
from evalpipe.answers.parsers.hedges import ARTICLE, NONE_OF, hedge_patterns, hedged
from evalpipe.answers.parsers.result import UNPARSED, ParseResult, unparsed
from evalpipe.errors import InputError

BBH_FORMATS: tuple[str, ...] = ("choice", "binary", "integer", "brackets", "text")


def _bbh_format(format: str, words: Sequence[str] | None) -> dict[str, str]:
    """Check a BBH format and return the binary words' table (lowercased word -> gold spelling)."""
    if format not in BBH_FORMATS:
        raise InputError(f"bbh: format: expected one of {', '.join(BBH_FORMATS)}, got {format!r}")
    if format != "binary":
        if words:
            raise InputError(f"bbh: words: only the binary format takes words (format {format!r})")
        return {}
    if (
        not isinstance(words, Sequence)
        or isinstance(words, str)
        or len(words) < 2
        or not all(isinstance(w, str) and w.strip() for w in words)
    ):
        raise InputError(
            f"bbh: format 'binary' needs `words`: the gold answers as spelled, e.g. [Yes, No]; "
            f"got {words!r}"
        )
    table = {w.lower(): w for w in words}
    if len(table) != len(words):
        raise InputError(f"bbh: words: {list(words)} repeat a word (case is ignored)")
    return table


# Zero-width, so that two statements on one line are both seen ("not (A); the answer is (C)").
_BBH_CUE = re.compile(r"the (?:final |correct )?answer is\s*:?\s*(?=([^\n]*))", re.IGNORECASE)
_BBH_LETTER = r"(?<![A-Za-z])[A-R](?![A-Za-z])"
_BBH_OPTION = re.compile(r"(?<![A-Za-z])\(?([A-R])\)?(?![A-Za-z])")
_BBH_OPTION_PAREN = re.compile(r"\(([A-R])\)")
_BBH_INT = re.compile(r"-?[0-9]+")
_BBH_HEDGE = hedge_patterns(_BBH_LETTER)


def _bbh_free(text: str, family: str) -> str | None:
    text = strip_edges(text).rstrip(".").strip()
    # Closing brackets are single characters: in dyck_languages spacing carries no meaning.
    text = re.sub(r"\s+", "", text) if family == "brackets" else " ".join(text.split())
    return text or None


@functools.lru_cache(maxsize=64)
def _binary_patterns(words: tuple[str, ...]) -> tuple[re.Pattern[str], tuple[re.Pattern[str], ...]]:
    alternatives = "|".join(re.escape(w) for w in sorted(words, key=len, reverse=True))
    token = rf"(?<![A-Za-z])(?:{alternatives})(?![A-Za-z])"
    return re.compile(token, re.IGNORECASE), hedge_patterns(token)


def _bbh_extract(
    segment: str, family: str, words: Mapping[str, str], *, last: bool
) -> tuple[str | None, str | None]:
    """(value, None) when ``segment`` gives an answer; (None, reason) when it offers several
    ("hedge") or none of the options ("none_of_the_above"); (None, None) when it gives nothing."""
    if family == "choice":
        options = list(_BBH_OPTION_PAREN.finditer(segment)) or [
            m
            for m in _BBH_OPTION.finditer(segment)
            if not (m.group(0) in ("A", "I") and ARTICLE.match(segment, m.end()))
        ]
        if not options:
            if NONE_OF.match(strip_edges(segment)):
                return None, "none_of_the_above"
            return None, None
        chosen = options[-1] if last else options[0]
        if hedged(segment, chosen.start(), chosen.end(), _BBH_HEDGE):
            return None, "hedge"
        if last and NONE_OF.search(segment, chosen.end()):
            return None, "none_of_the_above"
        return f"({chosen.group(1)})", None
    if family == "binary":
        token, patterns = _binary_patterns(tuple(words))
        found = token.search(segment)
        if found is None:
            return None, None
        if hedged(segment, found.start(), found.end(), patterns):
            return None, "hedge"
        return words[found.group(0).lower()], None
    if family == "integer":
        numbers = _BBH_INT.findall(segment.replace(",", ""))
        if not numbers:
            return None, None
        return normalise_number(numbers[-1] if last else numbers[0]), None
    return _bbh_free(segment, family), None


def bbh(
    text: str | None, *, format: str = "text", words: Sequence[str] | None = None
) -> ParseResult:
    """Parse a BIG-Bench Hard answer in its subtask's answer format.

    Formats (the BBH spec declares one per subtask): ``choice`` gives "(X)"; ``binary`` the gold's
    spelling of one of ``words`` ("Yes", "True", "valid", ...); ``integer`` an integer;
    ``brackets`` closing brackets without spaces (dyck_languages); ``text`` the words separated by
    single spaces (word_sorting). Only the text before a new question the model started itself
    ("\\nQ: ...") is read. Strict: the last "the answer is" statement that names an answer;
    fallback: the last "(X)" / the first binary word / the last integer / the first line. A hedge
    ("(A) or (C)", "yes or no") or "none of the above" is unparsed, with the reason in ``extra``.

    Parameters
    ----------
    text : the model output.
    format : one of :data:`BBH_FORMATS` (the spec's ``subtasks.<name>.answer.format``).
    words : for ``binary``: the answers as the golds spell them (``[Yes, No]``).

    Returns
    -------
    ParseResult

    Raises
    ------
    InputError
        For an unknown format, or ``binary`` without its words.

    Examples
    --------
    >>> bbh("So the answer is (C).", format="choice").prediction
    '(C)'
    >>> bbh("No, because ...", format="binary", words=["Yes", "No"]).prediction
    'No'
    >>> bbh("So the answer is (A) or (C).", format="choice").status
    'unparsed'
    """
    table = _bbh_format(format, words)
    t = before_next_question(nfkc(text)).strip()
    if not t:
        return UNPARSED
    for cue in reversed(list(_BBH_CUE.finditer(t))):
        value, reason = _bbh_extract(cue.group(1), format, table, last=False)
        if reason is not None:
            return unparsed(reason=reason)
        if value is not None:
            return ParseResult(value, "strict", {})
    if format in ("brackets", "text"):
        lines = [line for line in t.splitlines() if line.strip()]
        value, _ = _bbh_extract(strip_answer_prefix(lines[0]), format, table, last=False)
        return ParseResult(value, "fallback", {}) if value is not None else UNPARSED
    value, reason = _bbh_extract(t, format, table, last=format != "binary")
    if reason is not None:
        return unparsed(reason=reason)
    if value is None:
        return UNPARSED
    exact, _ = _bbh_extract(strip_answer_prefix(t), format, table, last=False)
    bare = strip_edges(strip_answer_prefix(t)).rstrip(".").strip()
    # The whole answer is the value itself ("(A)", "Yes", "12"): as explicit as it gets.
    if exact == value and bare.lower() in (value.lower(), value.strip("()").lower()):
        return ParseResult(value, "strict", {})
    return ParseResult(value, "fallback", {})


def bbh_gold(gold: str, options: Mapping[str, Any]) -> str | None:
    """A BBH gold in the canonical form of its subtask's ``format`` (option ``words`` for binary)."""
    family = options.get("format", "text")
    words = _bbh_format(family, options.get("words"))
    if family == "choice":
        m = _BBH_OPTION.fullmatch(gold)
        return f"({m.group(1)})" if m else gold
    if family == "binary":
        return words.get(gold.lower(), gold)
    if family == "integer":
        return normalise_number(gold)
    return _bbh_free(gold, family)
