"""Text normalisation shared by the parsers and the scorer.

llm-jp-eval's post-processing is the model here: keep the text up to the first blank line, NFKC on
both sides, strip, and drop a leading "回答:" / "答え:" cue. The helpers are small and pure so that
golden cases and property tests can pin each one down.
"""

from __future__ import annotations

import re
import unicodedata
from decimal import Decimal, InvalidOperation

# A blank line ends the first paragraph (llm-jp-eval: ``text.split("\n\n")[0]``; whitespace-only
# lines count as blank too).
_PARAGRAPH_BREAK = re.compile(r"\n[ \t\u3000]*\n")

# Answer cues a model puts before its answer: "回答:", "答え：", "Answer:", "A:" is not one (it is
# also a choice letter). NFKC has already turned full-width colons into ASCII ones.
_ANSWER_PREFIX = re.compile(
    r"^\s*(?:[*_#>]+\s*)?(?:回答|答え|解答|正解|answer|final answer|label|ラベル)"
    r"\s*(?:\([^()\n]{0,30}\))?\s*[:]\s*",
    re.IGNORECASE,
)

# A model that keeps writing after its answer often starts the next few-shot question ("Q: ...");
# nothing from there on is the answer to this one.
_NEXT_QUESTION = re.compile(r"\n[ \t]*(?:Q|Question|問題|質問)[ \t]*\d*[ \t]*[:.：]", re.IGNORECASE)

_MARKDOWN_EDGES = " \t\r\n*_`\"'「」『』“”‘’"


def nfkc(text: str | None) -> str:
    """NFKC-normalise ``text`` (full-width letters, digits and punctuation become ASCII).

    Parameters
    ----------
    text : str or None (None gives "").

    Returns
    -------
    str

    Examples
    --------
    >>> nfkc("Ｂ：１２")
    'B:12'
    """
    if text is None:
        return ""
    return unicodedata.normalize("NFKC", str(text))


def first_paragraph(text: str) -> str:
    """The text up to the first blank line, stripped.

    >>> first_paragraph("東京\\n\\n理由: ...")
    '東京'
    """
    return _PARAGRAPH_BREAK.split(text, maxsplit=1)[0].strip()


def paragraphs(text: str) -> list[str]:
    """Non-empty, stripped paragraphs of ``text`` in order."""
    return [p.strip() for p in _PARAGRAPH_BREAK.split(text) if p.strip()]


def before_next_question(text: str) -> str:
    """The text before a new question the model started on its own ("\\nQ: ...", "\\n質問: ...").

    A question marker on the first line is kept: only a question that follows some answer text is
    a continuation.

    >>> before_next_question("The answer is 42.\\n\\nQ: A farmer has 7 cows.")
    'The answer is 42.\\n'
    """
    for match in _NEXT_QUESTION.finditer(text):
        if text[: match.start()].strip():
            return text[: match.start()]
    return text


def strip_answer_prefix(text: str) -> str:
    """Drop leading answer cues ("回答:", "答え:", "Answer:", "**Answer:**") and surrounding
    markdown, repeatedly (models write "回答: 答え: 東京").

    >>> strip_answer_prefix("回答：東京")
    '東京'
    """
    text = nfkc(text).strip()
    while True:
        stripped = _ANSWER_PREFIX.sub("", text, count=1).strip().lstrip("*_").strip()
        if stripped == text:
            return text
        text = stripped


def strip_edges(text: str) -> str:
    """Strip whitespace, markdown emphasis and quotes from both ends."""
    return text.strip(_MARKDOWN_EDGES)


def normalise_number(text: str | None) -> str | None:
    """Canonical form of a number as lm-evaluation-harness compares GSM8K answers, plus a
    numeric canonicalisation so that "18.00" equals "18".

    Removes ``$`` and ``,``, a trailing ``.``, surrounding whitespace; then, when what is left is
    a decimal number, writes it without exponent and without trailing zeros.

    Parameters
    ----------
    text : the matched number text (or a gold answer).

    Returns
    -------
    str or None
        None when nothing numeric is left.

    Examples
    --------
    >>> normalise_number("$1,234.")
    '1234'
    >>> normalise_number("18.50")
    '18.5'
    """
    if text is None:
        return None
    value = nfkc(text).strip().replace("$", "").replace(",", "").strip()
    value = value.rstrip(".")
    if not value or not any(ch.isdigit() for ch in value):
        return None
    try:
        number = Decimal(value)
    except InvalidOperation:
        return value
    if not number.is_finite():
        return value
    if number == number.to_integral_value():
        return str(int(number))
    return format(number.normalize(), "f")
