"""Closed label sets given as words: NLI labels (``nli``) and JSON objects carrying a label
(``json_label``, sentiment)."""

from __future__ import annotations

import functools
import json
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from evalpipe.answers.normalise import (
    first_paragraph,
    nfkc,
    strip_answer_prefix,
    strip_edges,
)
from evalpipe.answers.parsers.result import UNPARSED, ParseResult

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


# JSON label answers (sentiment)

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
    mapped to a neighbour (as a "neutral" fallback would): the row is unparsed and scored wrong.

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


def _label_gold(gold: str, options: Mapping[str, Any], default: Mapping[str, Sequence[str]]) -> str:
    labels = options.get("labels") or list(default)
    table = _word_aliases(labels, options.get("aliases") or default)
    return table.get(gold.lower(), gold)


def nli_gold(gold: str, options: Mapping[str, Any]) -> str:
    """An NLI (or other word-label) gold as the label it names (``labels``, ``aliases``)."""
    return _label_gold(gold, options, NLI_ALIASES)


def json_label_gold(gold: str, options: Mapping[str, Any]) -> str:
    """A JSON-label gold (sentiment) as the label it names."""
    return _label_gold(gold, options, SENTIMENT_ALIASES)
