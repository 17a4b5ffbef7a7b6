"""OCR-like confusions: a glyph read as one that looks like it (``l`` -> ``1``, ``rn`` -> ``m``,
カ -> 力, ロ -> 口, ぱ -> ば).

Text that went through optical character recognition carries these errors rather than keyboard
slips: nlpaug's ``OcrAug`` and NL-Augmenter's OCR perturbation draw from tables of the same
kind. Each drawn kind is made as the error OCR makes:

- replace and insert: one confusion of :data:`CONFUSIONS` found in the word, the occurrence's
  digest (bytes 16-23) picking which; a confusion may read one glyph as two (``m`` -> ``rn``, an
  insertion in effect) or two as one (``rn`` -> ``m``). Recorded as ``replace`` with the whole
  confused text in ``original_char`` / ``new_char`` and the kind drawn in ``drawn`` when it was
  another one.
- delete: a faint glyph lost (a position picked as for the uniform draw).
- transpose and conversion are not OCR errors: they are made as a confusion too (``drawn``
  records the kind), so the configured rate is the rate delivered.

A word with no confusable glyph is left as it is (``Skipped(reason="no_confusion")``, counted in
the summary's ``skipped``). Digits are confusable here (``0`` / ``O``, ``1`` / ``l``): the words
design's automatic exclusions (digits, maths, gold spans) still keep numbers intact.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from evalpipe.perturb.records import Operation, Skipped
from evalpipe.perturb.typo_base import TypoModel

RULE = "ocr"
# Each pair is read both ways. Latin shapes after nlpaug's OCR table; Japanese pairs are the
# katakana / kanji / kana look-alikes OCR engines are known to swap, and (han)dakuten lost or
# gained.
PAIRS = (
    ("0", "O"),
    ("0", "o"),
    ("1", "l"),
    ("1", "I"),
    ("l", "I"),
    ("2", "Z"),
    ("5", "S"),
    ("8", "B"),
    ("6", "b"),
    ("9", "g"),
    ("e", "c"),
    ("a", "o"),
    ("u", "v"),
    ("n", "h"),
    ("rn", "m"),
    ("cl", "d"),
    ("vv", "w"),
    ("ri", "n"),
    ("li", "h"),
    ("カ", "力"),
    ("ロ", "口"),
    ("エ", "工"),
    ("ニ", "二"),
    ("ハ", "八"),
    ("ト", "卜"),
    ("タ", "夕"),
    ("ー", "一"),
    ("へ", "ヘ"),
    ("べ", "ベ"),
    ("ぺ", "ペ"),
    ("り", "リ"),
    ("シ", "ツ"),
    ("ソ", "ン"),
    ("日", "曰"),
    ("未", "末"),
    ("土", "士"),
    ("己", "已"),
    ("は", "ば"),
    ("ば", "ぱ"),
    ("ひ", "び"),
    ("び", "ぴ"),
    ("ふ", "ぶ"),
    ("ぶ", "ぷ"),
    ("ほ", "ぼ"),
    ("ぼ", "ぽ"),
    ("ハ", "バ"),
    ("バ", "パ"),
    ("ホ", "ボ"),
    ("ボ", "ポ"),
)


def _confusions(pairs: tuple[tuple[str, str], ...]) -> dict[str, tuple[str, ...]]:
    table: dict[str, list[str]] = {}
    for a, b in pairs:
        table.setdefault(a, []).append(b)
        table.setdefault(b, []).append(a)
    return {k: tuple(v) for k, v in sorted(table.items())}


CONFUSIONS: Mapping[str, tuple[str, ...]] = _confusions(PAIRS)
"""Every glyph (or glyph pair) -> what OCR may read it as."""
_LONGEST = max(len(k) for k in CONFUSIONS)


def confusions(word: str) -> list[tuple[int, str, str]]:
    """Every confusion the word offers: ``(start, original, new)``, by start then length.

    >>> confusions("corn")[-4:]
    [(1, 'o', 'a'), (2, 'rn', 'm'), (3, 'n', 'h'), (3, 'n', 'ri')]
    """
    out: list[tuple[int, str, str]] = []
    for start in range(len(word)):
        for length in range(1, _LONGEST + 1):
            original = word[start : start + length]
            if len(original) == length:
                out.extend((start, original, new) for new in CONFUSIONS.get(original, ()))
    return out


def make(
    kind: str,
    word: str,
    digest: bytes,
    widths: Mapping[str, int],
    *,
    lexicon: Any = None,
    context: Any = None,
) -> Operation | Skipped:
    """The OCR error of the drawn ``kind`` on ``word`` (see the module docstring).

    >>> make("replace", "modern", bytes(32), {}).perturbed
    'rnodern'
    >>> make("insert", "カメラ", bytes(32), {})[1:]
    (0, 'カ', '力', '力メラ', 'ocr', None, None, 'insert')
    >>> make("replace", "xyz", bytes(32), {})
    Skipped(op='replace', reason='no_confusion', reading=None)
    """
    r_pos = int.from_bytes(digest[16:24], "big")
    if kind == "delete":
        i = r_pos % len(word)
        return Operation("delete", i, word[i], None, word[:i] + word[i + 1 :], RULE)
    found = confusions(word)
    if not found:
        return Skipped(kind, "no_confusion")
    start, original, new = found[r_pos % len(found)]
    perturbed = word[:start] + new + word[start + len(original) :]
    drawn = None if kind == "replace" else kind
    return Operation("replace", start, original, new, perturbed, RULE, drawn=drawn)


MODEL = TypoModel(make=make)
