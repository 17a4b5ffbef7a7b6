"""Where a chain-of-thought answer's reasoning ends and its answer span starts, per answer type.

The rule: the answer span starts at the last match of the answer type's marker
(:data:`MARKERS`: GSM8K's ``####`` or "the answer is", a choice's "Answer:"), the reasoning is
everything before it (trailing whitespace removed). An output without a marker, or with nothing
before it, cannot be split: :func:`split_answer` returns None and the designs count it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_ANSWER_IS = r"(?:the\s+)?(?:final\s+)?answer\s+is"
_ANSWER_COLON = r"answer\s*[:：]"
MARKERS: dict[str, str] = {
    "number": rf"####|{_ANSWER_IS}|{_ANSWER_COLON}",
    "choice_letter": rf"{_ANSWER_IS}|{_ANSWER_COLON}",
    "choice_index": rf"{_ANSWER_IS}|{_ANSWER_COLON}",
    "bbh": rf"{_ANSWER_IS}|{_ANSWER_COLON}",
    "label": rf"{_ANSWER_IS}|{_ANSWER_COLON}",
    "span": rf"{_ANSWER_IS}|{_ANSWER_COLON}",
    "json_label": r"\{",  # the JSON object is the answer; anything before it is reasoning
}
"""Answer type -> the case-insensitive pattern where its answer span starts (Japanese sets'
"答え" / "答:" also match :data:`JAPANESE`)."""
JAPANESE = r"答えは|答え\s*[:：]|答\s*[:：]"


@dataclass(frozen=True)
class Split:
    """A chain-of-thought output cut into reasoning and answer span."""

    reasoning: str
    answer: str


def marker(answer_type: str) -> re.Pattern[str]:
    """The compiled answer-span marker of ``answer_type`` (any unknown type: the generic one)."""
    base = MARKERS.get(answer_type, MARKERS["span"])
    return re.compile(f"{base}|{JAPANESE}", re.IGNORECASE)


def split_answer(text: str | None, answer_type: str) -> Split | None:
    """``text`` split at its last answer marker, or None when it has none or no reasoning.

    >>> split_answer("3 + 4 = 7.\\nThe answer is 7.", "number")
    Split(reasoning='3 + 4 = 7.', answer='The answer is 7.')
    >>> split_answer("7", "number") is None
    True
    """
    if not text:
        return None
    found = list(marker(answer_type).finditer(text))
    if not found:
        return None
    at = found[-1].start()
    reasoning = text[:at].rstrip()
    if not reasoning.strip():
        return None
    return Split(reasoning, text[at:])


def without_last_line(reasoning: str) -> str:
    """The reasoning without its final non-empty line (the answer-line deletion design).

    >>> without_last_line("a\\nb\\n\\n")
    'a'
    >>> without_last_line("only")
    ''
    """
    lines = reasoning.rstrip().split("\n")
    return "\n".join(lines[:-1]).rstrip()


_TOKEN = re.compile(r"\s*\S+")


def prefix_of(reasoning: str, budget: float) -> str:
    """The first ``budget`` tokens of the reasoning (an int), or that share of its tokens (a
    float in [0, 1]); tokens are whitespace-delimited words, the same for every model.

    >>> prefix_of("a b c d", 2), prefix_of("a b c d", 0.5), prefix_of("a b c d", 1.0)
    ('a b', 'a b', 'a b c d')
    """
    tokens = _TOKEN.findall(reasoning)
    count = round(budget * len(tokens)) if isinstance(budget, float) else int(budget)
    return "".join(tokens[:count]).lstrip()
