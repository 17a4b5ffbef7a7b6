"""Extractive and open QA answers (llm-jp-eval post-processing)."""

from __future__ import annotations

from evalpipe.answers.normalise import (
    first_paragraph,
    nfkc,
    paragraphs,
    strip_answer_prefix,
)
from evalpipe.answers.parsers.result import UNPARSED, ParseResult


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
