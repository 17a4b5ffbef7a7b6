"""The commitment grammar the choice parsers share: an article that is not a choice letter,
an answer that names no option, and a hedge that offers several choices ("B or D")."""

from __future__ import annotations

import re

# An English article or pronoun that happens to equal a choice letter ("A cat", "I think"): a
# single letter followed by a word on the same line, unless the word is one that follows a
# committed answer ("B because ...", "A is correct"). "Answer: A\n\nExplanation" is choice A.
ARTICLE = re.compile(
    r"[ \t]+(?!(?:because|since|as|is|was|for|given|due|which|and|or|seems|looks|fits)\b)[A-Za-z]",
    re.IGNORECASE,
)
# A committed answer that names no option.
NONE_OF = re.compile(
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


def hedged(text: str, start: int, end: int, patterns: tuple[re.Pattern[str], ...]) -> bool:
    """Whether the answer at ``text[start:end]`` is one of several offered together ("B or D");
    ``patterns`` from :func:`hedge_patterns`."""
    after, before = patterns
    found = after.match(text, end)
    if (
        found is not None
        and not ARTICLE.match(text, found.end())
        and not _RULED_OUT.match(text, found.end())
    ):
        return True
    return before.search(text[max(0, start - 60) : start]) is not None


def hedge_patterns(token: str) -> tuple[re.Pattern[str], re.Pattern[str]]:
    item = _HEDGE_OPEN + rf"(?:{token})" + _HEDGE_CLOSE
    comma = r"\s*[,、]\s*"
    after = rf"{_HEDGE_CLOSE}(?:{comma}{item})*(?:{comma})?\s*{_HEDGE_WORD}\s*{item}"
    before = rf"{item}(?:{comma}{item})*(?:{comma})?\s*{_HEDGE_WORD}\s*{_HEDGE_OPEN}$"
    return re.compile(after, re.IGNORECASE), re.compile(before, re.IGNORECASE)
