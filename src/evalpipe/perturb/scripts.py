"""Script classes: which characters may stand in for a character without changing its script.

A replaced or inserted character is always drawn from the inventory of the class of the
character it replaces or stands next to: hiragana for hiragana, katakana for katakana, kanji (from
the fixed ``KANJI_INVENTORY``) for kanji, lowercase Latin for lowercase Latin, uppercase for
uppercase, digits for digits, and the full-width forms of Latin letters and digits for their own
kind. Every other character (punctuation, accented Latin, emoji, combining marks, symbols) has no
class: it is never replaced and never chosen as the anchor of an insertion, but may be deleted.
"""

from __future__ import annotations

from evalpipe.perturb.kanji import KANJI_INVENTORY


def _span(first: int, last: int) -> str:
    return "".join(chr(c) for c in range(first, last + 1))


HIRAGANA = _span(0x3041, 0x3093)  # ぁ..ん: the hiragana of ordinary text
KATAKANA = _span(0x30A1, 0x30F4) + "ー"  # ァ..ヴ and the long-vowel mark, part of katakana words
HALFWIDTH_KATAKANA = _span(0xFF66, 0xFF9D)  # ｦ..ﾝ
LATIN_LOWER = _span(ord("a"), ord("z"))
LATIN_UPPER = _span(ord("A"), ord("Z"))
DIGITS = _span(ord("0"), ord("9"))
FULLWIDTH_LOWER = _span(0xFF41, 0xFF5A)
FULLWIDTH_UPPER = _span(0xFF21, 0xFF3A)
FULLWIDTH_DIGITS = _span(0xFF10, 0xFF19)
KANJI = KANJI_INVENTORY

INVENTORIES: dict[str, str] = {
    "hiragana": HIRAGANA,
    "katakana": KATAKANA,
    "halfwidth_katakana": HALFWIDTH_KATAKANA,
    "kanji": KANJI,
    "latin_lower": LATIN_LOWER,
    "latin_upper": LATIN_UPPER,
    "digit": DIGITS,
    "fullwidth_lower": FULLWIDTH_LOWER,
    "fullwidth_upper": FULLWIDTH_UPPER,
    "fullwidth_digit": FULLWIDTH_DIGITS,
}

# char -> (class, index in the class inventory); kanji outside the inventory get index -1.
_INDEX: dict[str, tuple[str, int]] = {
    ch: (name, i) for name, inv in INVENTORIES.items() for i, ch in enumerate(inv)
}
# Members of a class that are not drawn as replacements (rare forms) still belong to the class.
_EXTRA_MEMBERS = {
    "ゔ": "hiragana", "ゕ": "hiragana", "ゖ": "hiragana", "ゝ": "hiragana", "ゞ": "hiragana",
    "ヵ": "katakana", "ヶ": "katakana", "ヷ": "katakana", "ヸ": "katakana", "ヹ": "katakana",
    "ヺ": "katakana", "ヽ": "katakana", "ヾ": "katakana",
    "々": "kanji", "〆": "kanji", "〇": "kanji",
}  # fmt: skip
for _ch, _name in _EXTRA_MEMBERS.items():
    _INDEX.setdefault(_ch, (_name, -1))


def _is_kanji(code: int) -> bool:
    return (
        0x4E00 <= code <= 0x9FFF  # CJK Unified Ideographs
        or 0x3400 <= code <= 0x4DBF  # Extension A
        or 0xF900 <= code <= 0xFAFF  # Compatibility Ideographs
        or 0x20000 <= code <= 0x3134F  # Extensions B-G (astral plane)
    )


def char_class(ch: str) -> str | None:
    """The script class of one character, or None when it has none.

    Parameters
    ----------
    ch : a single character.

    Returns
    -------
    One of the keys of ``INVENTORIES``, or None.

    Examples
    --------
    >>> char_class("漢"), char_class("ア"), char_class("q"), char_class("Q"), char_class("é")
    ('kanji', 'katakana', 'latin_lower', 'latin_upper', None)
    """
    hit = _INDEX.get(ch)
    if hit is not None:
        return hit[0]
    if _is_kanji(ord(ch)):
        return "kanji"
    return None


def inventory_index(ch: str) -> tuple[str | None, int]:
    """``(class, index of ch in that class's inventory)``; index -1 when ch is not in it."""
    hit = _INDEX.get(ch)
    if hit is not None:
        return hit
    if _is_kanji(ord(ch)):
        return "kanji", -1
    return None, -1


# The coarse script of an edit, as the typo tables group them: the classes above folded by
# writing system (full-width and half-width forms join their kind), "other" for no class.
SCRIPTS = ("hiragana", "katakana", "kanji", "latin", "digit", "other")
SCRIPT_OF_CLASS: dict[str, str] = {
    "hiragana": "hiragana",
    "katakana": "katakana",
    "halfwidth_katakana": "katakana",
    "kanji": "kanji",
    "latin_lower": "latin",
    "latin_upper": "latin",
    "fullwidth_lower": "latin",
    "fullwidth_upper": "latin",
    "digit": "digit",
    "fullwidth_digit": "digit",
}


def edit_script(op: str, original_char: str | None, new_char: str | None) -> str:
    """The script (one of ``SCRIPTS``) of the characters one edit acted on.

    An insertion is drawn from the class of the character it stands next to, so the inserted
    text names the script; every other edit acts on the original text (a replacement's or
    deletion's character, a transposition's pair, a conversion's word): its first character
    names it. No such character, or one without a class, is ``"other"``.

    Examples
    --------
    >>> edit_script("insert", None, "ゃ"), edit_script("replace", "Q", "W")
    ('hiragana', 'latin')
    >>> edit_script("conversion", "東京", "東教"), edit_script("delete", "、", None)
    ('kanji', 'other')
    """
    ch = new_char if op == "insert" else original_char
    if not ch:
        return "other"
    return SCRIPT_OF_CLASS.get(char_class(ch[0]) or "", "other")


def other_of_class(ch: str, r: int) -> str:
    """A character of ``ch``'s class other than ``ch``, chosen by the integer ``r`` (the
    ``uniform`` rule; a kanji outside the inventory may become any inventory kanji)."""
    cls, index = inventory_index(ch)
    return other_in(INVENTORIES[cls], index, r)  # type: ignore[index]


def other_in(inv: str, index: int, r: int) -> str:
    """``other_of_class`` of a character whose class's inventory is ``inv`` and whose index in it
    is ``index`` (``inventory_index``): for callers that looked these up once per spelling."""
    if index < 0:
        return inv[r % len(inv)]
    k = r % (len(inv) - 1)
    return inv[k + 1] if k >= index else inv[k]  # skip the original: never a no-op
