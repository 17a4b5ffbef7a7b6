"""Multiple choice: letters (MMLU, local mc) and digits (JCommonsenseQA)."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from evalpipe.answers.normalise import (
    before_next_question,
    nfkc,
)
from evalpipe.answers.parsers.hedges import ARTICLE, NONE_OF, hedge_patterns, hedged
from evalpipe.answers.parsers.result import UNPARSED, ParseResult, unparsed
from evalpipe.errors import InputError

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
        hedge_after, hedge_before = hedge_patterns(token)
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
    return match.group(0).lower() in ("a", "i") and ARTICLE.match(text, match.end()) is not None


def _is_hedge(text: str, match: re.Match[str], grammar: _ChoiceGrammar) -> bool:
    return hedged(text, match.start(), match.end(), (grammar.hedge_after, grammar.hedge_before))


def _answer_statements(
    text: str, grammar: _ChoiceGrammar
) -> list[tuple[re.Match[str] | None, int]]:
    """Every committed answer statement: (the choice it names or None, where it starts)."""
    found = []
    for cue in _MC_CUE.finditer(text):
        token = grammar.token.match(text, cue.end())
        if token is not None and _is_article(text, token):
            token = None
        if token is None and not NONE_OF.match(text, cue.end()):
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
            return unparsed(reason="hedge" if token is not None else "none_of_the_above")
        return ParseResult(grammar.canon[token.group(0).lower()], "strict", {})
    match = grammar.lead.search(t)
    if match:
        token = grammar.token.match(t, match.start(1))
        assert token is not None  # the lead pattern's group 1 is a choice token
        if _is_hedge(t, token, grammar):
            return unparsed(reason="hedge")
        return ParseResult(grammar.canon[match.group(1).lower()], "strict", {})
    candidates = []
    for m in grammar.token.finditer(t):
        if _is_article(t, m):
            continue
        in_brackets = m.start() > 0 and t[m.start() - 1] == "(" and t[m.end() : m.end() + 1] == ")"
        candidates.append((in_brackets, m))
    if not candidates:
        return unparsed(reason="none_of_the_above") if NONE_OF.search(t) else UNPARSED
    bracketed = [m for b, m in candidates if b]
    # A chat model's conclusion comes last; "(B)" is the most explicit form when present.
    chosen = bracketed[-1] if bracketed else candidates[-1][1]
    if _is_hedge(t, chosen, grammar):
        return unparsed(reason="hedge")
    if NONE_OF.search(t, chosen.end()):
        return unparsed(reason="none_of_the_above")
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


def choice_gold(gold: str, options: Mapping[str, Any]) -> str:
    """A multiple-choice gold (``mc_letter``, ``mc_index``) as the label the parser predicts."""
    canon = _label_map(options.get("labels") or ["0", "1", "2", "3", "4"], options.get("digit_map"))
    return canon.get(gold.lower(), gold)
