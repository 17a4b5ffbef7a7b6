"""Which word occurrences a typo may touch: the eligibility rules shared by the typo models.

An occurrence is *eligible* unless one of the configured rules excludes it (``RULES``):

- ``digits``: the word holds a digit (ASCII or full-width);
- ``number_words``: the word is a number word: an English cardinal or ordinal (``two``,
  ``hundred``, ``third``), ``dozen``, ``half``, ``twice``...; in Japanese a UniDic numeral
  (``名詞-数詞``) or a word written only with kanji numerals (``三``, ``百``, ``一つ``);
- ``urls``: the occurrence lies inside a URL, a ``www.`` address, an e-mail address or a domain
  name (``example.com/to/page``);
- ``maths``: inside a LaTeX span (``$...$``, ``\\(...\\)``, ``\\[...\\]``) or a word directly joined
  to an arithmetic operator or relation (``x = 3``, ``a+b``, ``2 x y``: only spaces between);
- ``option_labels``: the word is one of the row's option labels written as a label (``A.``,
  ``(B)``, ``C)``, ``D:``, full-width forms too), or a lone capital letter of the row's labels;
- ``gold_spans``: the occurrence overlaps a gold text of the row (the gold choice's text, every
  reference answer that is not an option label);
- ``function_words`` (Japanese): the occurrence is not a content morpheme (nouns, verbs,
  adjectives, adverbs, adnominals, interjections; not particles, auxiliaries, symbols, affixes);
- ``min_letters``: an English word with fewer letters than the minimum.

The rules are params (``perturb.exclude``, ``perturb.min_letters``) read by ``from_params``; with
``auto`` (the default) the words design with the ``uniform`` model keeps every occurrence (so its rows
do not depend on the rules, byte for byte), the other models of the words design exclude digits, number
words, URLs, maths, option labels and gold spans, and the count design adds content morphemes
(Japanese) and a three-letter minimum (English).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from evalpipe.errors import InputError
from evalpipe.params_schema import default_of
from evalpipe.perturb.typo_models import typo_model

RULES = (
    "digits",
    "number_words",
    "urls",
    "maths",
    "option_labels",
    "gold_spans",
    "function_words",
)
WORDS_DESIGN_RULES = ("digits", "number_words", "urls", "maths", "option_labels", "gold_spans")
COUNT_DESIGN_MIN_LETTERS = 3

_UNITS = [
    "zero",
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "eleven",
    "twelve",
    "thirteen",
    "fourteen",
    "fifteen",
    "sixteen",
    "seventeen",
    "eighteen",
    "nineteen",
    "twenty",
    "thirty",
    "forty",
    "fifty",
    "sixty",
    "seventy",
    "eighty",
    "ninety",
    "hundred",
    "thousand",
    "million",
    "billion",
    "trillion",
]
_ORDINALS = [
    "first",
    "second",
    "third",
    "fourth",
    "fifth",
    "sixth",
    "seventh",
    "eighth",
    "ninth",
    "tenth",
    "eleventh",
    "twelfth",
    "thirteenth",
    "fourteenth",
    "fifteenth",
    "sixteenth",
    "seventeenth",
    "eighteenth",
    "nineteenth",
    "twentieth",
    "thirtieth",
    "fortieth",
    "fiftieth",
    "sixtieth",
    "seventieth",
    "eightieth",
    "ninetieth",
    "hundredth",
    "thousandth",
    "millionth",
    "billionth",
]
ENGLISH_NUMBER_WORDS = frozenset(
    [
        *_UNITS,
        *(w + "s" for w in _UNITS[10:]),
        *_ORDINALS,
        *[
            "dozen",
            "dozens",
            "half",
            "halves",
            "twice",
            "thrice",
            "once",
            "quarter",
            "quarters",
            "double",
            "triple",
        ],
    ]
)
"""English number words never edited under ``number_words`` (MulTypo's list plus ordinals,
multipliers and plurals such as ``hundreds``)."""

_KANJI_NUMERALS = set("〇零一二三四五六七八九十百千万億兆壱弐参拾")
_DIGITS = re.compile(r"[0-9０-９]")
_URL = re.compile(
    r"(?:[a-z][a-z0-9+.-]*://|www\.)\S+"
    r"|[\w.+-]+@[\w-]+(?:\.[\w-]+)+"
    r"|\b(?:[a-z0-9-]+\.)+(?:com|org|net|edu|gov|io|ai|jp|co|uk|de|fr|info|ly|me|app|dev)\b"
    r"(?:/\S*)?",
    re.IGNORECASE,
)
# Inline $...$ as pandoc reads it: the opening $ has a non-space right after it, the closing $
# a non-space right before it and no digit right after it, so prices ("$4 each and 2 pens for
# $", "$4 and $5") are text, not maths.
_LATEX = re.compile(
    r"\$\$.+?\$\$|\$(?=[^\s$])[^$\n]*?(?<=[^\s$])\$(?!\d)|\\\(.+?\\\)|\\\[.+?\\\]", re.DOTALL
)
_OPERATOR = set("=+*/^<>×÷±≤≥≠≈∑∫√")
_LABEL_AFTER = set(".):：）．")
_LABEL_BEFORE = set("(（")
# UniDic's first POS component of content morphemes
CONTENT_POS = ("名詞", "代名詞", "動詞", "形容詞", "形状詞", "副詞", "連体詞", "感動詞")


def is_number_word(word: str, *, language: str, pos: str | None = None) -> bool:
    """True for a number word (see the module docstring).

    Examples
    --------
    >>> is_number_word("Two", language="english"), is_number_word("tow", language="english")
    (True, False)
    >>> is_number_word("三", language="japanese"), is_number_word("一般", language="japanese")
    (True, False)
    """
    if language == "english":
        return word.lower().replace("’", "'") in ENGLISH_NUMBER_WORDS
    if pos is not None and pos.startswith("名詞-数詞"):
        return True
    core = word[:-1] if len(word) > 1 and word[-1] in "つ個人" else word
    return bool(core) and all(ch in _KANJI_NUMERALS for ch in core)


def is_content_morpheme(pos: str | None) -> bool:
    """True when a UniDic POS (``名詞-普通名詞-一般``) is a content word's; numerals count
    (``number_words`` excludes them separately)."""
    return bool(pos) and pos.split("-")[0] in CONTENT_POS  # type: ignore[union-attr]


def _spans(pattern: re.Pattern[str], text: str) -> list[tuple[int, int]]:
    return [m.span() for m in pattern.finditer(text)]


def _overlaps(spans: Iterable[tuple[int, int]], start: int, end: int) -> bool:
    return any(s < end and start < e for s, e in spans)


def _touches_operator(text: str, start: int, end: int) -> bool:
    i = start - 1
    while i >= 0 and text[i] == " ":
        i -= 1
    if i >= 0 and text[i] in _OPERATOR:
        return True
    j = end
    while j < len(text) and text[j] == " ":
        j += 1
    return j < len(text) and text[j] in _OPERATOR


@dataclass(frozen=True)
class RowContext:
    """What the rules need to know about one benchmark row: its option labels and gold texts."""

    labels: tuple[str, ...] = ()
    golds: tuple[str, ...] = ()

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> RowContext:
        """From a benchmark row (``labels``, ``choices``, ``answer``, ``answers``): the gold texts
        are the gold choice's text for a multiple-choice row and every reference answer that is
        not an option label (an extractive or open answer)."""
        labels = tuple(str(v) for v in _as_list(row.get("labels")))
        choices = [str(v) for v in _as_list(row.get("choices"))]
        answers = [str(v) for v in _as_list(row.get("answers"))]
        answer = row.get("answer")
        if isinstance(answer, str) and answer and answer not in answers:
            answers.append(answer)
        golds: list[str] = []
        for a in answers:
            if labels and a in labels:
                at = labels.index(a)
                if at < len(choices) and choices[at].strip():
                    golds.append(choices[at].strip())
            elif a.strip():
                golds.append(a.strip())
        return cls(labels, tuple(dict.fromkeys(golds)))


def _as_list(value: Any) -> list[Any]:
    if value is None or isinstance(value, str | float):
        return []
    return list(value)


@dataclass(frozen=True)
class Eligibility:
    """The rules in force: ``exclude`` (a subset of ``RULES``) and ``min_letters`` (English).

    Examples
    --------
    >>> rules = Eligibility(frozenset(WORDS_DESIGN_RULES))
    >>> text = "Send two apples to www.example.com/to/ now"
    >>> blocked = rules.blocked_spans(text, RowContext())
    >>> rules.reason(text, 5, 8, blocked, RowContext(), language="english")
    'number_words'
    >>> rules.reason(text, 30, 32, blocked, RowContext(), language="english")
    'urls'
    >>> rules.reason(text, 15, 17, blocked, RowContext(), language="english") is None
    True
    """

    exclude: frozenset[str] = field(default_factory=frozenset)
    min_letters: int = 0

    @property
    def active(self) -> bool:
        return bool(self.exclude) or self.min_letters > 0

    def blocked_spans(self, text: str, row: RowContext) -> dict[str, list[tuple[int, int]]]:
        """The spans of ``text`` that the span rules (urls, maths, gold_spans) shut off."""
        out: dict[str, list[tuple[int, int]]] = {}
        if "urls" in self.exclude:
            out["urls"] = _spans(_URL, text)
        if "maths" in self.exclude:
            out["maths"] = _spans(_LATEX, text)
        if "gold_spans" in self.exclude and row.golds:
            spans = []
            for gold in row.golds:
                at = text.find(gold)
                while at >= 0:
                    spans.append((at, at + len(gold)))
                    at = text.find(gold, at + 1)
            out["gold_spans"] = spans
        return out

    def reason(
        self,
        text: str,
        start: int,
        end: int,
        blocked: Mapping[str, Sequence[tuple[int, int]]],
        row: RowContext,
        *,
        language: str,
        pos: str | None = None,
    ) -> str | None:
        """Why ``text[start:end]`` may not be edited (the first rule of ``RULES`` order that
        excludes it, or ``min_letters``), or None when it is eligible. ``blocked`` comes from
        ``blocked_spans(text, row)``; ``pos`` is the UniDic POS of a Japanese occurrence (its
        first token's), needed by ``function_words`` and used by ``number_words``."""
        word = text[start:end]
        ex = self.exclude
        if "digits" in ex and _DIGITS.search(word):
            return "digits"
        if "number_words" in ex and is_number_word(word, language=language, pos=pos):
            return "number_words"
        for rule in ("urls", "maths", "gold_spans"):
            spans = blocked.get(rule)
            if spans and _overlaps(spans, start, end):
                return rule
        if "maths" in ex and _touches_operator(text, start, end):
            return "maths"
        if "option_labels" in ex and self._is_label(text, start, end, row):
            return "option_labels"
        if "function_words" in ex and language == "japanese" and not is_content_morpheme(pos):
            return "function_words"
        if (
            self.min_letters
            and language == "english"
            and sum(ch.isalpha() for ch in word) < self.min_letters
        ):
            return "min_letters"
        return None

    @staticmethod
    def _is_label(text: str, start: int, end: int, row: RowContext) -> bool:
        word = text[start:end]
        labels = row.labels or tuple("ABCDEFGHIJ")
        if word not in labels:
            return False
        before = text[start - 1] if start else ""
        after = text[end] if end < len(text) else ""
        if after in _LABEL_AFTER or before in _LABEL_BEFORE:
            return True
        # a lone capital that is one of the labels ("Answer: B", "between A and C")
        return len(word) == 1 and word.isupper()


def from_params(cfg: Mapping[str, Any], *, source: str = "params.yaml") -> Eligibility:
    """The rules of a ``perturb`` params section: ``exclude`` (``auto`` or a list of ``RULES``)
    and ``min_letters`` (``auto`` or an integer >= 0).

    ``auto`` depends on the design and the model: ``design: words`` with ``model: uniform``
    keeps every occurrence (the uniform model's rows stay independent of the rules); ``design: words`` with another model
    excludes ``WORDS_DESIGN_RULES``; ``design: count`` excludes every rule and needs
    ``COUNT_DESIGN_MIN_LETTERS`` letters.

    Raises
    ------
    InputError naming the file and key for an unknown rule or a bad minimum.

    Examples
    --------
    >>> from_params({}).active  # the default model, design words
    False
    >>> sorted(from_params({"exclude": ["maths", "digits"]}).exclude)
    ['digits', 'maths']
    >>> from_params({"design": "count"}).min_letters
    3
    """
    # keys a partial mapping (tests, library callers) leaves out take the schema's defaults
    design = cfg.get("design", default_of("perturb.design"))
    model = cfg.get("model", default_of("perturb.model"))
    exclude = cfg.get("exclude", default_of("perturb.exclude"))
    if exclude == "auto" or exclude is None:
        if design == "count":
            rules = frozenset(RULES)
        elif typo_model(model).plain:
            rules = frozenset()
        else:
            rules = frozenset(WORDS_DESIGN_RULES)
    else:
        if isinstance(exclude, str) or not isinstance(exclude, Iterable):
            raise InputError(
                f"{source}: perturb.exclude must be auto or a list of {', '.join(RULES)}; "
                f"found {exclude!r}"
            )
        unknown = [r for r in exclude if r not in RULES]
        if unknown:
            raise InputError(
                f"{source}: perturb.exclude has unknown rule(s) {unknown}; expected some of "
                f"{', '.join(RULES)}"
            )
        rules = frozenset(exclude)
    minimum = cfg.get("min_letters", default_of("perturb.min_letters"))
    if minimum == "auto" or minimum is None:
        minimum = COUNT_DESIGN_MIN_LETTERS if design == "count" else 0
    if isinstance(minimum, bool) or not isinstance(minimum, int) or minimum < 0:
        raise InputError(
            f"{source}: perturb.min_letters must be auto or an integer >= 0, found {minimum!r}"
        )
    return Eligibility(rules, minimum)


class OccurrenceRules:
    """The rules as ``perturb_frame`` applies them: one per frame, told the row (``row``) and
    the field text (``field``) before it asks about each occurrence (``excluded``), counting the
    excluded occurrences per rule in ``counts``.

    Parameters
    ----------
    rules : the Eligibility in force (None: every occurrence is eligible).
    benchmark : the benchmark frame (``labels, choices, answer, answers`` give each row's
        option labels and gold texts).
    language : the benchmark's language.
    reader : an ``ime.JapaneseContext`` (its ``pos(text, start, end)``) for Japanese, or None.
    """

    def __init__(
        self,
        rules: Eligibility | None,
        benchmark: Any,
        language: str,
        reader: Any = None,
    ) -> None:
        self.rules = rules
        self.active = rules is not None and rules.active
        self.language = language
        self.pos_of = reader.pos if reader is not None and language == "japanese" else None
        self.counts: dict[str, int] = {}
        self._columns = (
            {
                c: benchmark[c].tolist() if c in benchmark.columns else [None] * len(benchmark)
                for c in ("labels", "choices", "answer", "answers")
            }
            if self.active
            else {}
        )
        self._row = RowContext()
        self._text = ""
        self._blocked: dict[str, list[tuple[int, int]]] = {}

    def row(self, r: int) -> None:
        if self.active:
            self._row = RowContext.from_row({c: v[r] for c, v in self._columns.items()})

    def field(self, text: str) -> None:
        if self.active:
            self._text = text
            self._blocked = self.rules.blocked_spans(text, self._row)  # type: ignore[union-attr]

    def excluded(self, start: int, end: int) -> bool:
        """True (and counted) when the occurrence ``[start, end)`` of the current field may not
        be edited."""
        pos = self.pos_of(self._text, start, end) if self.pos_of is not None else None
        why = self.rules.reason(  # type: ignore[union-attr]
            self._text, start, end, self._blocked, self._row, language=self.language, pos=pos
        )
        if why is None:
            return False
        self.counts[why] = self.counts.get(why, 0) + 1
        return True

    def summary(self, model: str, redrawn: Mapping[str, int]) -> dict[str, Any]:
        """The summary keys of the rules and of redrawn kinds (``{"redrawn": {"transpose->delete":
        n}, "eligibility": {...}}``), or ``{}`` for the uniform model without rules, whose
        summaries stay as earlier versions wrote them."""
        if typo_model(model).plain and not self.active:
            return {}
        rules = self.rules or Eligibility()
        return {
            "redrawn": dict(sorted(redrawn.items())),
            "eligibility": {
                "exclude": sorted(rules.exclude),
                "min_letters": rules.min_letters,
                "excluded": dict(sorted(self.counts.items())),
            },
        }
