"""Answer parsers: turn a model's free-form output into a prediction in the gold's canonical form.

Each parser returns a :class:`ParseResult` whose ``status`` says how the answer was found:

- ``strict``: an explicit answer form ("Answer: B", "#### 18", a JSON object, the bare label);
- ``fallback``: a looser extraction (the last number, the last standalone choice letter);
- ``unparsed``: nothing usable; ``prediction`` is None and the row is scored wrong (never dropped).

Call them by name, as the benchmark registry does: ``parse_answer(spec.parser, text,
**spec.parser_options(subtask))`` (a row's parser options: a BBH row's carry its subtask's answer
format, declared in the spec). :func:`normalise_gold` puts a gold answer into the same canonical
form, so scoring is a plain string comparison.

Two upstream bugs are avoided on purpose (the golden cases of tests/test_scoring_parsers.py):
digits are never scanned before letters (``回答（1文字のみ）: b`` is b, not a), and a digit is an
answer only where the benchmark numbers its choices with digits (``digit_map``, or
``mc_index``), never as a substring of a longer number.
"""

from __future__ import annotations

import functools
import json
import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from fractions import Fraction
from typing import Any, Literal

from evalpipe.answers.normalise import (
    before_next_question,
    first_paragraph,
    nfkc,
    normalise_number,
    paragraphs,
    strip_answer_prefix,
    strip_edges,
)
from evalpipe.errors import InputError

Status = Literal["strict", "fallback", "unparsed"]
STATUSES: tuple[Status, ...] = ("strict", "fallback", "unparsed")


@dataclass(frozen=True)
class ParseResult:
    """What a parser made of one output.

    Attributes
    ----------
    prediction : canonical answer (same form as :func:`normalise_gold`), or None when unparsed.
    status : "strict" | "fallback" | "unparsed".
    extra : parser-specific details (JSON label parser: ``confidence``, ``reason``, ``raw_label``).
    """

    prediction: str | None
    status: Status
    extra: dict[str, Any] = field(default_factory=dict)


UNPARSED = ParseResult(None, "unparsed", {})


def _unparsed(**extra: Any) -> ParseResult:
    return ParseResult(None, "unparsed", dict(extra))


# --------------------------------------------------------------------------------------------
# Multiple choice: letters (MMLU, local mc) and digits (JCommonsenseQA)

# Characters that make a letter or digit part of a word rather than a standalone choice.
_WORD_CHARS = r"0-9A-Za-z'’"

# An answer *statement*: "Answer: X", "The answer is (X)", "The correct answer would be X",
# "回答（1文字のみ）: X", "正解は X". The connector (is, :, は, ...) is required, so "answer choice (A)"
# while reasoning is a mention, not a commitment. The parenthesised part after the cue word is a
# label annotation, skipped whole so that a digit inside it is never read as the answer.
_MC_CUE = re.compile(
    r"(?<![A-Za-z])(?:answer|回答|答え|解答|正解)s?(?![A-Za-z])"
    r"\s*(?:\([^()\n]{0,30}\))?[\s*_]*"
    r"(?:(?:is|was|would\s+be|should\s+be|must\s+be|will\s+be)(?![A-Za-z])|は|:|=)"
    r"[\s*_:]*(?:(?:therefore|thus|clearly|definitely|probably|likely|most\s+likely|either|"
    r"perhaps|maybe|indeed)\s+)?(?:(?:option|choice|選択肢)\s*)?[\s*_]*[(\[「『【]?\s*",
    re.IGNORECASE,
)
_MC_LEAD = r"^[\s*_\"'「『(\[【]*"
_MC_AFTER_LEAD = r"\s*(?=\.(?![0-9])|[)\]】」』:,、。]|\s*$|\s*\n)"
# An English article or pronoun that happens to equal a choice letter ("A cat", "I think"): a
# single letter followed by a word on the same line, unless the word is one that follows a
# committed answer ("B because ...", "A is correct"). "Answer: A\n\nExplanation" is choice A.
_ARTICLE = re.compile(
    r"[ \t]+(?!(?:because|since|as|is|was|for|given|due|which|and|or|seems|looks|fits)\b)[A-Za-z]",
    re.IGNORECASE,
)
# A committed answer that names no option.
_NONE_OF = re.compile(
    r"none\s+of\s+(?:the\s+)?(?:above|these|those|options|choices|answers|them)"
    r"|該当なし|該当するものはない|いずれでもない|どれでもない|どれも(?:正しく|当てはまら)ない",
    re.IGNORECASE,
)
# What joins two choices into a hedge: "B or D", "A, C, or E", "(A)/(C)", "BかD", "A and C". A
# comma alone does not ("Answer: b, 第4条" names b and cites an article); a list needs its "or".
_HEDGE_WORD = r"(?:or|and|/|か|または|もしくは|あるいは|or\s+maybe|or\s+possibly|or\s+perhaps)"
_HEDGE_OPEN = r"[(\[「『【]?\s*"
_HEDGE_CLOSE = r"\s*[)\]」』】]?"


# "The answer is A, and B is wrong": the second choice is rejected, not offered.
_RULED_OUT = re.compile(
    r"\s*(?:is|are|was|were|can\s+be|could\s+be)\s+(?:not\b|wrong|incorrect|false|ruled\s+out|"
    r"eliminated|excluded)",
    re.IGNORECASE,
)


def _hedged(text: str, start: int, end: int, patterns: tuple[re.Pattern[str], ...]) -> bool:
    """Whether the answer at ``text[start:end]`` is one of several offered together ("B or D");
    ``patterns`` from :func:`_hedge_patterns`."""
    after, before = patterns
    found = after.match(text, end)
    if (
        found is not None
        and not _ARTICLE.match(text, found.end())
        and not _RULED_OUT.match(text, found.end())
    ):
        return True
    return before.search(text[max(0, start - 60) : start]) is not None


def _hedge_patterns(token: str) -> tuple[re.Pattern[str], re.Pattern[str]]:
    item = _HEDGE_OPEN + rf"(?:{token})" + _HEDGE_CLOSE
    comma = r"\s*[,、]\s*"
    after = rf"{_HEDGE_CLOSE}(?:{comma}{item})*(?:{comma})?\s*{_HEDGE_WORD}\s*{item}"
    before = rf"{item}(?:{comma}{item})*(?:{comma})?\s*{_HEDGE_WORD}\s*{_HEDGE_OPEN}$"
    return re.compile(after, re.IGNORECASE), re.compile(before, re.IGNORECASE)


@dataclass(frozen=True)
class _ChoiceGrammar:
    canon: dict[str, str]  # lowercased token -> canonical label
    lead: re.Pattern[str]
    token: re.Pattern[str]
    hedge_after: re.Pattern[str]
    hedge_before: re.Pattern[str]


_GRAMMARS: dict[tuple[tuple[str, str], ...], _ChoiceGrammar] = {}


def _choice_grammar(canon: Mapping[str, str]) -> _ChoiceGrammar:
    key = tuple(sorted(canon.items()))
    grammar = _GRAMMARS.get(key)
    if grammar is None:
        alternation = "|".join(re.escape(t) for t in sorted(canon, key=lambda t: (-len(t), t)))
        # "2.5" and "1,234" hold no standalone choice digit.
        token = (
            rf"(?<![{_WORD_CHARS}])(?<![0-9][.,])(?:{alternation})(?![{_WORD_CHARS}])(?![.,][0-9])"
        )
        hedge_after, hedge_before = _hedge_patterns(token)
        grammar = _ChoiceGrammar(
            canon=dict(canon),
            lead=re.compile(_MC_LEAD + rf"({token})" + _MC_AFTER_LEAD, re.IGNORECASE),
            token=re.compile(token, re.IGNORECASE),
            hedge_after=hedge_after,
            hedge_before=hedge_before,
        )
        _GRAMMARS[key] = grammar
    return grammar


def _label_map(labels: Sequence[str], digit_map: Mapping[str, str] | None) -> dict[str, str]:
    if not labels:
        raise InputError("multiple-choice parser: option 'labels' must list the choice labels")
    labels_canon = {nfkc(str(label)).strip().lower(): str(label) for label in labels}
    canon = dict(labels_canon)
    for digit, label in (digit_map or {}).items():
        target = labels_canon.get(nfkc(str(label)).strip().lower())
        if target is None:
            raise InputError(
                f"multiple-choice parser: digit_map maps {digit!r} to {label!r}, "
                f"which is not among labels {list(labels)}"
            )
        # Labels that are digits themselves (JCommonsenseQA's 0-4) already say what a digit
        # means: a map on top would turn "2" into another label (and chain: 2 -> 1 -> 0).
        if all(key.isdigit() for key in labels_canon):
            continue
        canon[nfkc(str(digit)).strip().lower()] = target
    return canon


def _is_article(text: str, match: re.Match[str]) -> bool:
    return match.group(0).lower() in ("a", "i") and _ARTICLE.match(text, match.end()) is not None


def _is_hedge(text: str, match: re.Match[str], grammar: _ChoiceGrammar) -> bool:
    return _hedged(text, match.start(), match.end(), (grammar.hedge_after, grammar.hedge_before))


def _answer_statements(
    text: str, grammar: _ChoiceGrammar
) -> list[tuple[re.Match[str] | None, int]]:
    """Every committed answer statement: (the choice it names or None, where it starts)."""
    found = []
    for cue in _MC_CUE.finditer(text):
        token = grammar.token.match(text, cue.end())
        if token is not None and _is_article(text, token):
            token = None
        if token is None and not _NONE_OF.match(text, cue.end()):
            continue  # "the answer is that ...": not a statement of a choice
        found.append((token, cue.start()))
    return found


def _parse_choice(text: str | None, canon: Mapping[str, str]) -> ParseResult:
    t = before_next_question(nfkc(text)).strip()
    if not t:
        return UNPARSED
    grammar = _choice_grammar(canon)
    statements = _answer_statements(t, grammar)
    if statements:
        # The conclusion comes last: "Answer: A is tempting ... So the answer is (C)" is C.
        token, _ = statements[-1]
        if token is None or _is_hedge(t, token, grammar):
            return _unparsed(reason="hedge" if token is not None else "none_of_the_above")
        return ParseResult(grammar.canon[token.group(0).lower()], "strict", {})
    match = grammar.lead.search(t)
    if match:
        token = grammar.token.match(t, match.start(1))
        if _is_hedge(t, token, grammar):
            return _unparsed(reason="hedge")
        return ParseResult(grammar.canon[match.group(1).lower()], "strict", {})
    candidates = []
    for m in grammar.token.finditer(t):
        if _is_article(t, m):
            continue
        bracketed = m.start() > 0 and t[m.start() - 1] == "(" and t[m.end() : m.end() + 1] == ")"
        candidates.append((bracketed, m))
    if not candidates:
        return _unparsed(reason="none_of_the_above") if _NONE_OF.search(t) else UNPARSED
    bracketed = [m for b, m in candidates if b]
    # A chat model's conclusion comes last; "(B)" is the most explicit form when present.
    chosen = bracketed[-1] if bracketed else candidates[-1][1]
    if _is_hedge(t, chosen, grammar):
        return _unparsed(reason="hedge")
    if _NONE_OF.search(t, chosen.end()):
        return _unparsed(reason="none_of_the_above")
    return ParseResult(grammar.canon[chosen.group(0).lower()], "fallback", {})


def mc_letter(
    text: str | None,
    *,
    labels: Sequence[str] = ("A", "B", "C", "D"),
    digit_map: Mapping[str, str] | None = None,
) -> ParseResult:
    """Parse a multiple-choice answer given as a letter ("B", "ANSWER: B", "B. 4", "(B)", "Ｂ").

    Parameters
    ----------
    text : the model output.
    labels : the choice labels in the gold's spelling; matching ignores case and width.
    digit_map : digits that stand for labels when the benchmark numbers its choices that way
        (``{"1": "a", ...}``); None means digits are never answers. Ignored when the labels
        are digits themselves ("0"-"4"): a digit then is its own label.

    Returns
    -------
    ParseResult
        Strict for the last answer statement ("Answer: X", "The answer is (X)", "回答（…）: X";
        "answer choice (X)" is a mention, not a statement) or a leading label ("B. 4");
        fallback for the last standalone label in the text ("(X)" preferred). Text after a new
        question ("\\nQ: ...") is ignored. A hedge ("B or D", "probably A, C, or E") or "none
        of the above" is unparsed with ``extra["reason"]`` "hedge" / "none_of_the_above".

    Examples
    --------
    >>> mc_letter("The answer is (B).").prediction
    'B'
    >>> mc_letter("Rule out answer choice (A). So the answer is (C).").prediction
    'C'
    >>> mc_letter("the answer is B or D").extra
    {'reason': 'hedge'}
    >>> mc_letter("回答（1文字のみ）: b", labels=list("abcd"), digit_map={"1": "a"}).prediction
    'b'
    """
    return _parse_choice(text, _label_map(labels, digit_map))


def mc_index(text: str | None, *, labels: Sequence[str] = ("0", "1", "2", "3", "4")) -> ParseResult:
    """Parse a choice given by its index (JCommonsenseQA: "0".."4").

    A digit counts only standalone: "12" is not "2" (a golden case of the parser tests), "2.5" is not "2".

    Parameters
    ----------
    text : the model output.
    labels : the index labels.

    Returns
    -------
    ParseResult

    Examples
    --------
    >>> mc_index("回答: 3").prediction
    '3'
    >>> mc_index("12").status
    'unparsed'
    """
    return _parse_choice(text, _label_map(labels, None))


# --------------------------------------------------------------------------------------------
# Numbers (GSM8K, lm-evaluation-harness strict and flexible extraction)

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


# --------------------------------------------------------------------------------------------
# BIG-Bench Hard: one parser, several answer formats. Which subtask has which format is declared
# in the BBH spec (bbh.yaml, ``subtasks.<name>.answer``); the spec passes it in as ``format``.

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
_BBH_HEDGE = _hedge_patterns(_BBH_LETTER)


def _bbh_free(text: str, family: str) -> str | None:
    text = strip_edges(text).rstrip(".").strip()
    # Closing brackets are single characters: in dyck_languages spacing carries no meaning.
    text = re.sub(r"\s+", "", text) if family == "brackets" else " ".join(text.split())
    return text or None


@functools.lru_cache(maxsize=64)
def _binary_patterns(words: tuple[str, ...]) -> tuple[re.Pattern[str], tuple[re.Pattern[str], ...]]:
    alternatives = "|".join(re.escape(w) for w in sorted(words, key=len, reverse=True))
    token = rf"(?<![A-Za-z])(?:{alternatives})(?![A-Za-z])"
    return re.compile(token, re.IGNORECASE), _hedge_patterns(token)


def _bbh_extract(
    segment: str, family: str, words: Mapping[str, str], *, last: bool
) -> tuple[str | None, str | None]:
    """(value, None) when ``segment`` gives an answer; (None, reason) when it offers several
    ("hedge") or none of the options ("none_of_the_above"); (None, None) when it gives nothing."""
    if family == "choice":
        options = list(_BBH_OPTION_PAREN.finditer(segment)) or [
            m
            for m in _BBH_OPTION.finditer(segment)
            if not (m.group(0) in ("A", "I") and _ARTICLE.match(segment, m.end()))
        ]
        if not options:
            if _NONE_OF.match(strip_edges(segment)):
                return None, "none_of_the_above"
            return None, None
        chosen = options[-1] if last else options[0]
        if _hedged(segment, chosen.start(), chosen.end(), _BBH_HEDGE):
            return None, "hedge"
        if last and _NONE_OF.search(segment, chosen.end()):
            return None, "none_of_the_above"
        return f"({chosen.group(1)})", None
    if family == "binary":
        token, patterns = _binary_patterns(tuple(words))
        found = token.search(segment)
        if found is None:
            return None, None
        if _hedged(segment, found.start(), found.end(), patterns):
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
            return _unparsed(reason=reason)
        if value is not None:
            return ParseResult(value, "strict", {})
    if format in ("brackets", "text"):
        lines = [line for line in t.splitlines() if line.strip()]
        value, _ = _bbh_extract(strip_answer_prefix(lines[0]), format, table, last=False)
        return ParseResult(value, "fallback", {}) if value is not None else UNPARSED
    value, reason = _bbh_extract(t, format, table, last=format != "binary")
    if reason is not None:
        return _unparsed(reason=reason)
    if value is None:
        return UNPARSED
    exact, _ = _bbh_extract(strip_answer_prefix(t), format, table, last=False)
    bare = strip_edges(strip_answer_prefix(t)).rstrip(".").strip()
    # The whole answer is the value itself ("(A)", "Yes", "12"): as explicit as it gets.
    if exact == value and bare.lower() in (value.lower(), value.strip("()").lower()):
        return ParseResult(value, "strict", {})
    return ParseResult(value, "fallback", {})


# --------------------------------------------------------------------------------------------
# NLI and other closed label sets given as words

NLI_ALIASES: dict[str, tuple[str, ...]] = {
    "entailment": ("entailment", "entailed", "entails", "entail", "含意"),
    "contradiction": ("contradiction", "contradicts", "contradict", "矛盾"),
    "neutral": ("neutral", "neither", "中立", "どちらでもない"),
}


def _word_aliases(labels: Sequence[str], aliases: Mapping[str, Sequence[str]]) -> dict[str, str]:
    table: dict[str, str] = {}
    for label in labels:
        key = nfkc(str(label)).strip().lower()
        table[key] = str(label)
        for alias in aliases.get(key, ()):
            table.setdefault(nfkc(alias).strip().lower(), str(label))
    return table


def _word_pattern(words: Iterable[str]) -> re.Pattern[str]:
    return _compiled_words(tuple(sorted(words)))


@functools.lru_cache(maxsize=256)
def _compiled_words(words: tuple[str, ...]) -> re.Pattern[str]:
    parts = []
    for word in sorted(words, key=lambda w: (-len(w), w)):
        escaped = re.escape(word)
        # Latin words need word boundaries; Japanese labels have no spaces around them.
        if word.isascii():
            escaped = rf"(?<![A-Za-z]){escaped}(?![A-Za-z])"
        parts.append(escaped)
    return re.compile("|".join(parts), re.IGNORECASE)


def _parse_words(text: str | None, table: Mapping[str, str]) -> ParseResult:
    t = nfkc(text)
    head = strip_edges(strip_answer_prefix(first_paragraph(t))).rstrip(".。").strip().lower()
    if head in table:
        return ParseResult(table[head], "strict", {})
    found = _word_pattern(table).search(t)
    if found:
        return ParseResult(table[found.group(0).lower()], "fallback", {})
    return UNPARSED


def nli(
    text: str | None,
    *,
    labels: Sequence[str] = ("entailment", "contradiction", "neutral"),
    aliases: Mapping[str, Sequence[str]] | None = None,
) -> ParseResult:
    """Parse an NLI label (English or Japanese forms) or any closed set of label words.

    Strict: the first paragraph, NFKC, without an answer cue and trailing period, lowercased, is a
    label or an alias ("含意" = entailment, "矛盾" = contradiction, "中立" = neutral). Fallback: the
    first label or alias anywhere in the text.

    Parameters
    ----------
    text : the model output.
    labels : the label space, in the gold's spelling.
    aliases : extra forms per lowercased label; defaults to the NLI aliases above.

    Returns
    -------
    ParseResult

    Examples
    --------
    >>> nli("Contradiction.").prediction
    'contradiction'
    >>> nli("回答：含意").prediction
    'entailment'
    """
    return _parse_words(text, _word_aliases(labels, NLI_ALIASES if aliases is None else aliases))


# --------------------------------------------------------------------------------------------
# Extractive / open QA (llm-jp-eval post-processing)


def extractive(text: str | None) -> ParseResult:
    """Extract a short free-text answer: first paragraph, NFKC, strip, "回答:" removed.

    Strict when the first paragraph holds the answer; fallback when the output starts with a blank
    paragraph and the answer is the first non-empty one.

    Parameters
    ----------
    text : the model output.

    Returns
    -------
    ParseResult

    Examples
    --------
    >>> extractive("回答：徳川家康\\n\\n理由は…").prediction
    '徳川家康'
    """
    t = nfkc(text)
    answer = strip_answer_prefix(first_paragraph(t))
    if answer:
        return ParseResult(answer, "strict", {})
    for paragraph in paragraphs(t):
        answer = strip_answer_prefix(paragraph)
        if answer:
            return ParseResult(answer, "fallback", {})
    return UNPARSED


# --------------------------------------------------------------------------------------------
# JSON label answers (sentiment; seed 003)

SENTIMENT_ALIASES: dict[str, tuple[str, ...]] = {
    "positive": ("pos", "ポジティブ", "肯定", "肯定的"),
    "negative": ("neg", "ネガティブ", "否定", "否定的"),
    "neutral": ("neu", "neutrality", "ニュートラル", "中立"),
}
INVALID = "invalid"

# strict=False: models emit raw control characters inside strings (tiny-random does, under a
# JSON grammar too); the object is still the answer, so accept them rather than call it unparsed.
_DECODER = json.JSONDecoder(strict=False)


def first_json_object(text: str) -> dict[str, Any] | None:
    """The first JSON object in ``text`` (prose and code fences around it are ignored).

    Unlike a greedy ``\\{.*\\}`` regex this stops at the end of the first object, so two objects or a
    brace in the explanation after it do not break parsing.

    >>> first_json_object('Sure! {"label": "pos"} and {"x": 1}')
    {'label': 'pos'}
    """
    start = text.find("{")
    while start != -1:
        try:
            obj, _ = _DECODER.raw_decode(text, start)
        except json.JSONDecodeError:
            obj = None
        if isinstance(obj, dict):
            return obj
        start = text.find("{", start + 1)
    return None


def _confidence(value: Any) -> float | None:
    if isinstance(value, bool) or value is None:
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    if math.isnan(number):
        return None
    return min(1.0, max(0.0, number))


def json_label(
    text: str | None,
    *,
    labels: Sequence[str] = ("positive", "negative"),
    strict: bool = True,
    aliases: Mapping[str, Sequence[str]] | None = None,
) -> ParseResult:
    """Parse ``{"label": ..., "confidence": ..., "reason": ...}`` from the first JSON object.

    Labels are NFKC-normalised, lowercased and mapped through aliases (pos/neg/neu, ポジティブ, ...);
    confidence is clipped to [0, 1] (non-numbers give None). A label outside ``labels`` is never
    mapped to a neighbour (seed 003 fell back to "neutral"): the row is unparsed and scored wrong.

    Parameters
    ----------
    text : the model output.
    labels : the label space.
    strict : True: only a JSON object's label counts (status strict); anything else is unparsed.
        False: when no JSON label is usable, a single label word in the prose is accepted
        (status fallback); the scorer then shows unparsed rows as an explicit "invalid" class.
    aliases : extra forms per lowercased label; defaults to the sentiment aliases above.

    Returns
    -------
    ParseResult
        ``extra`` holds ``confidence`` (float or None), ``reason`` (str or None) and ``raw_label``.

    Examples
    --------
    >>> r = json_label('Here: {"label": "pos", "confidence": 1.7}')
    >>> r.prediction, r.extra["confidence"]
    ('positive', 1.0)
    """
    table = _word_aliases(labels, SENTIMENT_ALIASES if aliases is None else aliases)
    t = nfkc(text)
    obj = first_json_object(t)
    extra: dict[str, Any] = {"confidence": None, "reason": None, "raw_label": None}
    if obj is not None:
        raw = obj.get("label")
        reason = obj.get("reason")
        extra = {
            "confidence": _confidence(obj.get("confidence")),
            "reason": reason if isinstance(reason, str) else None,
            "raw_label": raw if isinstance(raw, str) else None,
        }
        if isinstance(raw, str):
            key = strip_edges(nfkc(raw)).lower()
            if key in table:
                return ParseResult(table[key], "strict", extra)
    if strict or not t.strip():
        return ParseResult(None, "unparsed", extra)
    found = _word_pattern(table).findall(t)
    distinct = {table[w.lower()] for w in found}
    if len(distinct) == 1:
        return ParseResult(distinct.pop(), "fallback", extra)
    return ParseResult(None, "unparsed", extra)


# --------------------------------------------------------------------------------------------
# Registry

PARSERS: dict[str, Callable[..., ParseResult]] = {
    "mc_letter": mc_letter,
    "mc_index": mc_index,
    "numeric": numeric,
    "bbh": bbh,
    "nli": nli,
    "extractive": extractive,
    "json_label": json_label,
}


def _parser(name: str) -> Callable[..., ParseResult]:
    try:
        return PARSERS[name]
    except KeyError:
        raise InputError(
            f"unknown parser {name!r}; known parsers: {', '.join(sorted(PARSERS))}"
        ) from None


def parse_answer(parser_name: str, text: str | None, **options: Any) -> ParseResult:
    """Parse ``text`` with the parser called ``parser_name``.

    Parameters
    ----------
    parser_name : a key of :data:`PARSERS`.
    text : the model output (None counts as empty).
    **options : the parser options (``spec.parser_options(subtask)``).

    Returns
    -------
    ParseResult

    Raises
    ------
    InputError
        For an unknown parser name or options the parser does not take.

    Examples
    --------
    >>> parse_answer("mc_letter", "ANSWER: B", labels=["A", "B", "C", "D"]).prediction
    'B'
    """
    parser = _parser(parser_name)
    try:
        return parser(text, **options)
    except TypeError as exc:
        raise InputError(f"parser {parser_name!r}: bad options {sorted(options)}: {exc}") from exc


def normalise_gold(parser_name: str, gold: str | None, **options: Any) -> str | None:
    """Put a gold answer into the canonical form that parser ``parser_name`` predicts.

    Parameters
    ----------
    parser_name : a key of :data:`PARSERS`.
    gold : the gold answer string.
    **options : the same parser options the parser gets.

    Returns
    -------
    str or None
        None for a missing gold.

    Examples
    --------
    >>> normalise_gold("numeric", "1,234")
    '1234'
    >>> normalise_gold("mc_letter", "ｂ", labels=list("abcd"))
    'b'
    """
    _parser(parser_name)
    if gold is None or (isinstance(gold, float) and math.isnan(gold)):
        return None
    g = nfkc(str(gold)).strip()
    if parser_name in ("mc_letter", "mc_index"):
        canon = _label_map(
            options.get("labels") or ["0", "1", "2", "3", "4"], options.get("digit_map")
        )
        return canon.get(g.lower(), g)
    if parser_name == "numeric":
        return normalise_number(g)
    if parser_name == "bbh":
        family = options.get("format", "text")
        words = _bbh_format(family, options.get("words"))
        if family == "choice":
            m = _BBH_OPTION.fullmatch(g)
            return f"({m.group(1)})" if m else g
        if family == "binary":
            return words.get(g.lower(), g)
        if family == "integer":
            return normalise_number(g)
        return _bbh_free(g, family)
    if parser_name in ("nli", "json_label"):
        default = NLI_ALIASES if parser_name == "nli" else SENTIMENT_ALIASES
        labels = options.get("labels") or list(default)
        table = _word_aliases(labels, options.get("aliases") or default)
        return table.get(g.lower(), g)
    return g  # extractive: NFKC + strip on both sides, as llm-jp-eval
