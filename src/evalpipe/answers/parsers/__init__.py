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

One module per answer family: ``choice`` (mc_letter, mc_index; the commitment grammar they
share with BBH in ``hedges``), ``numbers`` (numeric), ``bbh``, ``labels`` (nli, json_label),
``extractive``; ``result`` holds :class:`ParseResult`. This package is the registry
(``PARSERS``) and the two calls by name, :func:`parse_answer` and :func:`normalise_gold`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from evalpipe.answers.normalise import nfkc, normalise_number
from evalpipe.answers.parsers.bbh import BBH_FORMATS, bbh, bbh_gold
from evalpipe.answers.parsers.choice import choice_gold, mc_index, mc_letter
from evalpipe.answers.parsers.extractive import extractive
from evalpipe.answers.parsers.labels import (
    INVALID,
    NLI_ALIASES,
    SENTIMENT_ALIASES,
    first_json_object,
    json_label,
    json_label_gold,
    nli,
    nli_gold,
)
from evalpipe.answers.parsers.numbers import numeric
from evalpipe.answers.parsers.result import STATUSES, UNPARSED, ParseResult, Status
from evalpipe.errors import InputError

__all__ = [
    "BBH_FORMATS",
    "INVALID",
    "NLI_ALIASES",
    "PARSERS",
    "SENTIMENT_ALIASES",
    "STATUSES",
    "UNPARSED",
    "ParseResult",
    "Status",
    "bbh",
    "extractive",
    "first_json_object",
    "json_label",
    "mc_index",
    "mc_letter",
    "nli",
    "normalise_gold",
    "numeric",
    "parse_answer",
]

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
        return choice_gold(g, options)
    if parser_name == "numeric":
        return normalise_number(g)
    if parser_name == "bbh":
        return bbh_gold(g, options)
    if parser_name == "nli":
        return nli_gold(g, options)
    if parser_name == "json_label":
        return json_label_gold(g, options)
    return g  # extractive: NFKC + strip on both sides, as llm-jp-eval
