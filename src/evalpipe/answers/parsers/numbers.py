"""Numeric answers (GSM8K)."""

from __future__ import annotations

import re
from decimal import Decimal
from fractions import Fraction

from evalpipe.answers.normalise import (
    before_next_question,
    nfkc,
    normalise_number,
)
from evalpipe.answers.parsers.result import UNPARSED, ParseResult

_NUM_FLEXIBLE = re.compile(r"(-?[$0-9.,]{2,})|(-?[0-9]+)")
_NUM_HASH = re.compile(r"####\s*")
# "The answer is", "Final answer: ", "So the final answer (in dollars) is", "答えは", "回答：". The
# connector is required ("the answer to part 1 is" is not a statement of *the* answer) and a
# parenthetical inside the cue is part of it.
_NUM_CUE = re.compile(
    r"(?<![A-Za-z])(?:answer|回答|答え|解答|正解)s?(?![A-Za-z])\s*(?:\([^()\n]{0,40}\))?"
    # The form the answer is given in: "the answer, as a fraction, is", "the answer in simplest
    # form is".
    r"(?:,?\s*(?:(?:expressed|written|given)\s+)?as\s+an?\s+(?:fraction|decimal|mixed\s+number|"
    r"percentage|whole\s+number|integer)|,?\s*in\s+(?:simplest|lowest)\s+(?:form|terms))?,?"
    r"[\s*_]*(?:(?:is|was|would\s+be|should\s+be|will\s+be)(?![A-Za-z])|は|:|=)[\s*_:]*",
    re.IGNORECASE,
)
# "3/4", "1 1/2", "\frac{3}{4}": read whole, never as its numerator. Dates ("12/25/2023") and
# units ("km/h") are not fractions.
_FRACTION = re.compile(
    r"(?<![0-9A-Za-z.,/])(-?)\s?(?:([0-9]+)\s+)?([0-9]+)\s*/\s*([0-9]+)(?![0-9/.,]?[0-9])"
    r"|(-?)\\d?frac\s*\{\s*(-?[0-9]+)\s*\}\s*\{\s*([0-9]+)\s*\}"
)
# A self-correction right after an answer: "12, wait, no, it is 14", "12. Sorry, I meant 14",
# "12ではなく14", "12、いや、14です". The markers chain ("wait, no."); the corrected number must
# follow them directly or after a short lead-in ("it is", "the correct answer is", "正しくは").
_CORRECTION = re.compile(
    r"(?:(?:wait|oops|sorry|correction|scratch\s+that|my\s+(?:mistake|bad)|"
    r"I\s+made\s+(?:a|an)\s+(?:mistake|error)|let\s+me\s+correct(?:\s+(?:that|myself))?|"
    r"no(?=\s*[,.!;:—–-])|nope|not\s+(?=[0-9$])|rather|"
    r"いや|いいえ|ではなく|じゃなくて|違(?:う|います|いました)|訂正(?:します|して)?|"
    r"間違えました|間違い(?:です|でした)|すみません|失礼しました|ごめんなさい)"
    r"(?![A-Za-z])[\s,.!;:、。…—–-]*)+"
    r"(?:(?:I\s+meant?|make\s+(?:it|that)|(?:it|that|this)(?:'s|\s+is|\s+was|\s+should\s+be)|"
    r"(?:it|that)\s+should\s+be|should\s+be|actually|"
    r"(?:the\s+)?(?:correct|right|real|actual|final)\s+(?:answer|value|total|number)\s+is|"
    r"正しくは|本当は|実際は|答えは)[\s,:：、]*)?"
    r"(?=-?\s?\$?\s?[0-9]|\\d?frac)",
    re.IGNORECASE,
)

# A number in running text: sign, optional currency, digits with thousands separators and one
# decimal part. What follows it (a unit, "%", a full stop) is not part of it.
_NUM_TOKEN = re.compile(r"(?<![0-9A-Za-z.])-?\s?\$?\s?[0-9][0-9,]*(?:\.[0-9]+)?(?![0-9])")
# The answer statement ends at the end of its line or sentence.
_STATEMENT_END = re.compile(r"\n|[.!?。](?=\s|$)")


def _fraction_value(match: re.Match[str]) -> str | None:
    """A fraction's exact value: a decimal when it has one ("1/4" is 0.25, "6/3" is 2), else the
    reduced fraction ("2/6" is "1/3"); None for a zero denominator."""
    if match.group(4) is not None:
        sign, whole, num, den = match.group(1, 2, 3, 4)
    else:
        sign, whole, num, den = match.group(5), None, match.group(6), match.group(7)
    if int(den) == 0:
        return None
    value = Fraction(int(num), int(den)) + int(whole or 0)
    if sign:
        value = -value
    rest = value.denominator
    for factor in (2, 5):
        while rest % factor == 0:
            rest //= factor
    if rest != 1:
        return f"{value.numerator}/{value.denominator}"
    return normalise_number(str(Decimal(value.numerator) / Decimal(value.denominator)))


def _first_number(text: str, start: int, end: int) -> tuple[str, int] | None:
    """The first number or fraction in ``text[start:end]`` and where it ends."""
    fractions = list(_FRACTION.finditer(text, start, end))
    for m in _NUM_TOKEN.finditer(text, start, end):
        within = next((f for f in fractions if f.start() <= m.start() < f.end()), None)
        if within is not None:
            value = _fraction_value(within)
            if value is not None:
                return value, within.end()
            continue
        value = normalise_number(m.group(0).replace(" ", ""))
        if value is not None:
            return value, m.end()
    return None


def _statement_number(text: str, start: int) -> tuple[str, int] | None:
    """The number an answer statement starting at ``start`` gives ("5 + 3 = 8" gives 8), and where
    it ends in ``text``."""
    end = _STATEMENT_END.search(text, start)
    stop = end.start() if end else len(text)
    equals = text.rfind("=", start, stop)
    return _first_number(text, equals + 1 if equals != -1 else start, stop)


def _corrected(text: str, value: str, end: int) -> str:
    """Follow self-corrections after the answer ``value`` ending at ``end``: the correction must
    start in the answer's own sentence or open the next one."""
    while True:
        sentence = _STATEMENT_END.search(text, end)
        limit = len(text)
        if sentence is not None:
            following = _STATEMENT_END.search(text, sentence.end())
            limit = following.start() if following else len(text)
        correction = _CORRECTION.search(text, end)
        if correction is None or correction.start() >= limit:
            return value
        # Only words that belong to the answer (a unit, "です") may sit between it and the marker.
        gap = text[end : correction.start()]
        if len(gap) > 25 or any(ch.isdigit() for ch in gap):
            return value
        found = _statement_number(text, correction.end())
        if found is None:
            return value
        value, end = found


def numeric(text: str | None) -> ParseResult:
    """Parse a numeric answer (GSM8K), after lm-evaluation-harness's strict and flexible filters.

    Only the text before a new question the model started itself ("\\nQ: ...") is read. Strict:
    the last answer statement that gives a number: ``#### N`` or an answer cue ("The answer is N",
    "Final answer: N", "So the final answer (in dollars) is N", "答えは N"); the number is the first
    one after the cue in its sentence ("The answer is: she saved $250 over 5 weeks." is 250), or
    the one after its last "=". A self-correction that follows the answer in its sentence or opens
    the next one replaces it ("The answer is 12, wait, no, it is 14" is 14; so is
    "答えは12、いや、14です"). A fraction ("1/4", "1 1/2", "\\frac{1}{4}") is read whole, as its
    exact value: a decimal when it has one ("0.25"), else the reduced fraction ("1/3"); never its
    numerator. Fallback: the last number in the text (regex
    ``(-?[$0-9.,]{2,})|(-?[0-9]+)``). ``$``, ``,``, a trailing ``.`` and whatever follows the number
    (a unit, ``%``) are dropped and the number canonicalised
    (:func:`~evalpipe.answers.normalise.normalise_number`).

    Parameters
    ----------
    text : the model output.

    Returns
    -------
    ParseResult

    Examples
    --------
    >>> numeric("**Answer: $18 per day.**").prediction
    '18'
    >>> numeric("so #### 1,234.").status
    'strict'
    >>> numeric("So the final answer (in dollars) is 42.\\n\\nQ: A farmer has 7 cows.").prediction
    '42'
    >>> numeric("The answer is 12, wait, no, it is 14.").prediction
    '14'
    >>> numeric("The answer as a fraction is 1/4.").prediction
    '0.25'
    """
    t = before_next_question(nfkc(text))
    cues = [m.end() for m in _NUM_HASH.finditer(t)] + [m.end() for m in _NUM_CUE.finditer(t)]
    for start in sorted(cues, reverse=True):
        found = _statement_number(t, start)
        if found is not None:
            return ParseResult(_corrected(t, *found), "strict", {})
    fractions = list(_FRACTION.finditer(t))
    for m in reversed(list(_NUM_FLEXIBLE.finditer(t))):
        within = [f for f in fractions if f.start() <= m.start() < f.end()]
        value = _fraction_value(within[0]) if within else normalise_number(m.group(0))
        if value is not None:
            return ParseResult(value, "fallback", {})
    return UNPARSED
