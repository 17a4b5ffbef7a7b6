"""What a typo decision returns: the operation made (with its provenance) or why none was made."""

from __future__ import annotations

from typing import NamedTuple


class Operation(NamedTuple):
    """One typo applied to one occurrence of a word."""

    op: str  # replace | insert | delete | transpose | conversion
    position: int  # character index in the word (for insert: the slot, 0..len(word))
    original_char: str | None  # None for insert; a kana unit (じゃ), a pair, or the whole word
    new_char: str | None  # None for delete
    perturbed: str  # the word after the operation
    rule: str = "uniform"  # how the new text was chosen: see RULES
    keys: str | None = None  # a keyboard or romaji slip's key path, e.g. k->j, ka->ja
    reading: str | None = None  # a conversion's (or IME slip's) kana reading
    drawn: str | None = None  # the kind first drawn, when it could not apply and this one was


RULES = {
    "uniform": "a character of the same script class, uniformly",
    "qwerty": "a neighbouring key on QWERTY (2:1 horizontal over vertical), or a repeated key",
    "shift": "Shift held one key too long: the letter after a capital typed as a capital",
    "romaji": "a romaji slip re-read by an IME as kana",
    "ime": "a key of the word's reading slipped, re-converted by the IME or left as kana",
    "keyboard": "a deletion that spares digits (model keyboard)",
    "adjacent": "two adjacent letters or kana swapped",
    "homophone": "another word with the same UniDic reading",
    "dictionary": "a real misspelling of the word (codespell's dictionary, model natural)",
}


class Skipped(NamedTuple):
    """A transposition or conversion was drawn but the occurrence has none to make: no typo.

    ``reason``: ``no_adjacent_pair`` (no two adjacent different letters or kana),
    ``no_homophone`` (no other word with the reading, or no kanji), ``not_japanese``,
    ``nothing_applies`` (models keyboard and natural: no kind with a probability can apply).
    """

    op: str
    reason: str
    reading: str | None = None
