"""The typos a person makes: models ``keyboard`` and ``natural`` (``ops.decide`` calls ``make``).

Both models share the mechanics below; ``natural`` differs in its operation mix (the GitHub Typo
Corpus shares, ``natural.natural_probabilities``) and, for English words with entries, in taking
the typo from a real misspelling dictionary (``natural.dictionary_typo``).

- **English letters.** Replacements are QWERTY neighbours (2:1 horizontal over vertical) in the
  letter's case; insertions repeat or neighbour a letter beside the slot, in the case of the
  letter *after* the slot (a stray key is typed in the case of what is being typed: ``Qauestion``,
  never ``QAuestion``; at the end of the word, the case of the last letter). The first letter
  is rarely touched: positions and slots next to it weigh ``FIRST_WEIGHT`` against
  ``OTHER_WEIGHT``. A capitalised word may get a Shift slip (``THe``: the second letter typed
  while Shift is still down), weighted like a horizontal neighbour. Transpositions swap two
  adjacent different letters, keys typed by different hands weighing ``CROSS_HAND_WEIGHT``
  against 1 (and the first letter's pair weighs ``FIRST_WEIGHT`` / ``OTHER_WEIGHT`` of that).
- **Japanese kana words.** Replacements and insertions are romaji slips re-read by the IME
  (``keyboard.kana_slips``, ``keyboard.kana_insertions``); deletions leave out one key of the
  romaji (``ime.keystroke_deletions``: の ``no`` -> お, ん), or drop a kana when no key can go;
  transpositions swap two keys of the romaji and are kept only when the IME reads them back as
  kana (``ime.keystroke_transpositions``).
- **Japanese words with kanji.** No random kanji: the slip is made on the keys of the word's
  reading (taken in context), and the IME converts the new reading to its first candidate with
  the same part of speech, or leaves it as kana (rule ``ime``). Conversions pick a homophone of
  the same part of speech, weighted by frequency (``ime.ImeLexicon``).
- **Digits** are never replaced, deleted, swapped or used as anchors.
- **When the drawn kind cannot apply** (no homophone, no pair to swap, a one-kana word), another
  kind that can is drawn in proportion to the configured probabilities (bytes 8-15 of the
  digest), so the configured rate is the rate delivered; the operation records the kind first
  drawn in ``drawn``. Only when no kind with a probability applies is the occurrence left as it
  is (``Skipped(reason="nothing_applies")``).
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping
from typing import Any

from evalpipe.perturb import ime
from evalpipe.perturb.homophones import Homophones
from evalpipe.perturb.keyboard import (
    HORIZONTAL_WEIGHT,
    kana_insertions,
    kana_slips,
    kana_units,
    letter_insertions,
    letter_slips,
    to_hiragana,
)
from evalpipe.perturb.natural import dictionary_typo, profiled
from evalpipe.perturb.records import Operation, Skipped
from evalpipe.perturb.scripts import INVENTORIES, char_class, other_of_class

FIRST_WEIGHT = 1
SINGLE_KANJI_RATIO = 20  # a one-kanji word's homophone must be at least 1/20 as frequent
OTHER_WEIGHT = 6
CROSS_HAND_WEIGHT = ime.CROSS_HAND_WEIGHT
DIGIT_CLASSES = frozenset({"digit", "fullwidth_digit"})
# Characters no keyboard rule covers keep the uniform rule (kanji are handled through the reading).
FALLBACK_CLASSES = frozenset({"fullwidth_lower", "fullwidth_upper", "halfwidth_katakana"})
KINDS = ("replace", "insert", "delete", "transpose", "conversion")

Choice = tuple[Operation, int]  # an operation the model may make, and its weight


def _latin(ch: str) -> bool:
    return ch.isascii() and ch.isalpha()


def _position_weight(i: int) -> int:
    return FIRST_WEIGHT if i == 0 else OTHER_WEIGHT


def _hand(ch: str) -> str:
    return "left" if ch.lower() in ime.LEFT_HAND else "right"


@functools.lru_cache(maxsize=65_536)
def replacements(word: str) -> tuple[Choice, ...]:
    """Every replacement the model may make in ``word`` with its weight: Latin letters (QWERTY
    neighbours in the letter's case, times the position weight; the Shift slip on the second
    letter of a capitalised word), kana units (romaji slips), and characters of
    ``FALLBACK_CLASSES`` (rule ``uniform``: ``new_char`` None, drawn by the caller)."""
    units = dict(kana_units(word))
    out: list[Choice] = []
    i, n = 0, len(word)
    while i < n:
        ch = word[i]
        if _latin(ch):
            pw = _position_weight(i)
            for new, w in letter_slips(ch):
                keys = f"{ch.lower()}->{new.lower()}"
                out.append((_replace(word, i, i + 1, new, "qwerty", keys), w * pw))
            if i == 1 and word[0].isupper() and ch.islower():
                out.append((_replace(word, 1, 2, ch.upper(), "shift", f"shift+{ch}"), 2 * pw))
            i += 1
            continue
        end = units.get(i)
        if end is not None:
            for new, keys, w in kana_slips(word[i:end]):
                out.append((_replace(word, i, end, new, "romaji", keys), w))
            i = end
            continue
        if char_class(ch) in FALLBACK_CLASSES:
            out.append((Operation("replace", i, ch, None, word, "uniform"), HORIZONTAL_WEIGHT))
        i += 1
    return tuple(out)


def _replace(word: str, start: int, end: int, new: str, rule: str, keys: str) -> Operation:
    return Operation(
        "replace", start, word[start:end], new, word[:start] + new + word[end:], rule, keys
    )


def _insert(word: str, slot: int, new: str, rule: str, keys: str | None) -> Operation:
    return Operation("insert", slot, None, new, word[:slot] + new + word[slot:], rule, keys)


@functools.lru_cache(maxsize=65_536)
def insertions(word: str) -> tuple[Choice, ...]:
    """Every insertion the model may make: a stray key beside a kana unit that the IME reads as
    one more kana, or beside a Latin letter (repeated or a neighbour) in the case of the letter
    after the slot (the last letter at the end), weighted by the slot (slots 0 and 1 touch the
    first letter); slots anchored on ``FALLBACK_CLASSES`` get the uniform rule."""
    n = len(word)
    units = kana_units(word)
    unit_ending = {e: (s, e) for s, e in units}
    unit_starting = {s: (s, e) for s, e in units}
    inside = {k for s, e in units for k in range(s + 1, e)}
    out: list[Choice] = []
    for slot in range(n + 1):
        before = unit_ending.get(slot)
        after = unit_starting.get(slot)
        made = False
        if (before or after) and slot not in inside:
            for new, keys, w in kana_insertions(
                word[before[0] : before[1]] if before else "",
                word[after[0] : after[1]] if after else "",
            ):
                out.append((_insert(word, slot, new, "romaji", keys), w))
                made = True
        if made:
            continue
        left, right = word[slot - 1 : slot], word[slot : slot + 1]
        letters = [c for c in (left, right) if _latin(c)]
        if letters:
            case_of = right if _latin(right) else left
            pw = FIRST_WEIGHT if slot <= 1 and _latin(word[0]) else OTHER_WEIGHT
            for new, w in letter_insertions(letters):
                new = new.upper() if case_of.isupper() else new.lower()
                keys = f"{left}{right}->{left}{new}{right}".lower()
                out.append((_insert(word, slot, new, "qwerty", keys), w * pw))
            continue
        anchor = word[min(slot, n - 1)] if n else ""
        if anchor and char_class(anchor) in FALLBACK_CLASSES:
            out.append((Operation("insert", slot, None, None, word, "uniform"), HORIZONTAL_WEIGHT))
    return _merge(out)


def _merge(choices: list[Choice]) -> tuple[Choice, ...]:
    """Add the weights of identical operations (the same character reached from two anchors)."""
    weights: dict[Operation, int] = {}
    for op, w in choices:
        weights[op] = weights.get(op, 0) + w
    return tuple(weights.items())


@functools.lru_cache(maxsize=65_536)
def deletions(word: str) -> tuple[Choice, ...]:
    """Every deletion: any character but a digit, the first Latin letter weighing less."""
    out = []
    for i, ch in enumerate(word):
        if char_class(ch) in DIGIT_CLASSES:
            continue
        w = _position_weight(i) if _latin(ch) else OTHER_WEIGHT
        out.append((Operation("delete", i, ch, None, word[:i] + word[i + 1 :], "keyboard"), w))
    return tuple(out)


@functools.lru_cache(maxsize=65_536)
def transpositions(word: str) -> tuple[Choice, ...]:
    """Every transposition: two adjacent different Latin letters (different hands weigh
    ``CROSS_HAND_WEIGHT``, the pair with the first letter ``FIRST_WEIGHT`` / ``OTHER_WEIGHT``
    as much); for a kana word, two keys of its romaji swapped and re-read as kana."""
    out: list[Choice] = []
    if ime.is_kana_word(word):
        for new, keys, w in ime.keystroke_transpositions(word):
            out.append((Operation("transpose", 0, word, new, new, "romaji", keys), w))
        return tuple(out)
    for i in range(len(word) - 1):
        a, b = word[i], word[i + 1]
        if a == b or not (_latin(a) and _latin(b)):
            continue
        w = (CROSS_HAND_WEIGHT if _hand(a) != _hand(b) else 1) * _position_weight(i)
        swapped = word[:i] + b + a + word[i + 2 :]
        out.append((Operation("transpose", i, a + b, b + a, swapped, "adjacent"), w))
    return tuple(out)


def _ime_choices(kind: str, word: str, reading: ime.Reading, lexicon: ime.ImeLexicon):
    """Slips on the keys of a kanji word's reading, re-converted by the IME or left as kana."""
    hira = to_hiragana(reading.kana)

    def keys_of(start: int, end: int, path: str) -> str:
        # a slip's key path on one unit (ka->ja) widened to the whole reading (kaku->jaku)
        before, after = path.split("->")
        head, tail = ime.romaji(hira[:start]) or "", ime.romaji(hira[end:]) or ""
        return f"{head}{before}{tail}->{head}{after}{tail}"

    if kind == "replace":
        slips = [
            (hira[:s] + new + hira[e:], keys_of(s, e, keys), w)
            for s, e in kana_units(hira)
            for new, keys, w in kana_slips(hira[s:e])
        ]
    elif kind == "insert":
        units = kana_units(hira)
        ends = {e: (s, e) for s, e in units}
        starts = {s: (s, e) for s, e in units}
        slips = []
        for slot in range(len(hira) + 1):
            b, a = ends.get(slot), starts.get(slot)
            for new, keys, w in kana_insertions(
                hira[b[0] : b[1]] if b else "", hira[a[0] : a[1]] if a else ""
            ):
                span = (b[0] if b else slot, a[1] if a else slot)
                slips.append((hira[:slot] + new + hira[slot:], keys_of(*span, keys), w))
    elif kind == "delete":
        slips = list(ime.keystroke_deletions(hira, after=reading.after))
    else:
        slips = list(ime.keystroke_transpositions(hira, after=reading.after))
    out: list[Choice] = []
    for new_kana, keys, w in slips:
        shown = lexicon.first_candidate(new_kana, reading.pos, reading.cform) or new_kana
        if shown != word:
            out.append((Operation(kind, 0, word, shown, shown, "ime", keys, reading.kana), w))
    return out


def _japanese_reading(word: str, context: ime.Reading | None) -> ime.Reading | None:
    if context is not None:
        return context
    return _alone().reading_alone(word)


@functools.cache
def _alone() -> ime.JapaneseContext:
    return ime.JapaneseContext()


def _choices(
    kind: str, word: str, *, lexicon: ime.ImeLexicon | None, context: ime.Reading | None
) -> list[Choice] | tuple[Choice, ...]:
    """Every operation of ``kind`` the model may make on ``word`` (empty: it cannot apply)."""
    if kind == "conversion":
        if lexicon is None or not ime.has_kanji(word):
            return ()
        if any(char_class(ch) in DIGIT_CLASSES for ch in word):
            return ()
        rd = _japanese_reading(word, context)
        if rd is None or not rd.kana or not rd.unit:
            return ()  # a compound's part, a prefix or suffix, a proper noun: no conversion
        found = lexicon.homophones(rd.kana, rd.pos, rd.cform, rd.lemmas, word)
        if len(word) == 1:  # a lone kanji: a homophone nearly as common (者 -> 物, not 年 -> 念)
            entries = lexicon.by_reading.get(rd.kana, ())
            own = max((e.weight for e in entries if e.surface == word), default=0)
            found = [e for e in found if e.weight * SINGLE_KANJI_RATIO >= own]
        return [
            (
                Operation("conversion", 0, word, e.surface, e.surface, "homophone", None, rd.kana),
                e.weight,
            )
            for e in found
        ]
    if lexicon is not None and ime.has_kanji(word):
        rd = _japanese_reading(word, context)
        made = _ime_choices(kind, word, rd, lexicon) if rd is not None and rd.kana else []
        if made or kind != "delete":
            return made
        return deletions(word)  # no reading to slip: a character is dropped
    if kind == "replace":
        return replacements(word)
    if kind == "insert":
        return insertions(word)
    if kind == "delete":
        if lexicon is not None and ime.is_kana_word(word):  # Japanese: one key left out
            after = context.after if context is not None else ""
            keyed = [
                (Operation("delete", 0, word, new, new, "romaji", keys), w)
                for new, keys, w in ime.keystroke_deletions(word, after=after)
            ]
            if keyed:
                return keyed
        return deletions(word)
    if context is not None and context.after and ime.is_kana_word(word):
        return tuple(
            (Operation("transpose", 0, word, new, new, "romaji", keys), w)
            for new, keys, w in ime.keystroke_transpositions(word, after=context.after)
        )
    return transpositions(word)


def can_convert(word: str, homophones: Any, context: ime.Reading | None) -> bool:
    """Whether a drawn conversion slip has something to make on this occurrence: the
    occurrences a conversion is delivered among (the summary's ``conversion_eligible``).
    ``homophones``: what :func:`prepare` gives (an ``ime.ImeLexicon`` for the keyboard and
    natural models, a ``homophones.Homophones`` for the uniform one, None: no conversions)."""
    if homophones is None:
        return False
    if isinstance(homophones, ime.ImeLexicon):
        return bool(_choices("conversion", word, lexicon=homophones, context=context))
    if any(char_class(ch) in DIGIT_CLASSES for ch in word):
        return False  # as ops.decide's uniform conversion
    return bool(homophones.lookup(word)[1])


def convertible_edits(
    edits: Iterable[Any], fields: Mapping[str, Any], homophones: Any, reader: Any
) -> int:
    """How many of ``edits`` (``columns.Edit``: ``field, start, end, original``) fell on an
    occurrence a conversion slip could change (:func:`can_convert`, read in its field's text):
    the count and control designs' ``conversion_eligible``."""
    return sum(
        can_convert(
            e.original,
            homophones,
            reader.occurrence(fields[e.field], e.start, e.end) if reader is not None else None,
        )
        for e in edits
    )


def _pick(choices: Iterable[Choice], r: int) -> Operation:
    choices = tuple(choices)
    total = sum(w for _, w in choices)
    x = r % total
    for op, w in choices:
        if x < w:
            return op
        x -= w
    raise AssertionError("unreachable: x < total")


def _resolve(op: Operation, word: str, r_char: int) -> Operation:
    """Draw the character of a ``uniform`` fallback (the uniform rule for its script class)."""
    if op.rule != "uniform" or op.new_char is not None:
        return op
    if op.op == "replace":
        new = other_of_class(word[op.position], r_char)
        return op._replace(
            new_char=new, perturbed=word[: op.position] + new + word[op.position + 1 :]
        )
    inv = INVENTORIES[char_class(word[min(op.position, len(word) - 1)])]  # type: ignore[index]
    new = inv[r_char % len(inv)]
    return op._replace(new_char=new, perturbed=word[: op.position] + new + word[op.position :])


def make(
    kind: str,
    word: str,
    digest: bytes,
    widths: Mapping[str, int],
    *,
    dictionary: bool,
    positions: bool = False,
    lexicon: ime.ImeLexicon | None = None,
    context: ime.Reading | None = None,
) -> Operation | Skipped:
    """The typo of kind ``kind`` (drawn by ``ops.decide``) on ``word`` under ``model`` (keyboard
    or natural), or another kind's when it cannot apply (see the module docstring).

    Parameters
    ----------
    digest : the occurrence's 32 bytes: 8-15 redraw the kind, 16-23 pick the operation, 24-31
        the character of a ``uniform`` fallback and of a dictionary misspelling.
    widths : each kind's share of the draw (``Probabilities.widths()``): the redraw weights.
    dictionary : take English typos from the real misspellings where there are some.
    positions : spread English keyboard edits over the word's first letter, middle and last
        letter as ``natural.POSITION_PROFILE`` says.
    lexicon : an ``ime.ImeLexicon`` for Japanese text, None elsewhere.
    context : the occurrence's reading in its text (``ime.JapaneseContext.occurrence``).
    """
    r_alt = int.from_bytes(digest[8:16], "big")
    r_pos = int.from_bytes(digest[16:24], "big")
    r_char = int.from_bytes(digest[24:32], "big")
    first = _attempt(
        kind,
        word,
        r_pos,
        r_char,
        dictionary=dictionary,
        positions=positions,
        lexicon=lexicon,
        context=context,
    )
    if first is not None:
        return first
    made: list[tuple[Operation, int]] = []
    for other in KINDS:
        if other == kind or not widths.get(other):
            continue
        op = _attempt(
            other,
            word,
            r_pos,
            r_char,
            dictionary=dictionary,
            positions=positions,
            lexicon=lexicon,
            context=context,
        )
        if op is not None:
            made.append((op._replace(drawn=kind), widths[other]))
    if not made:
        return Skipped(kind, "nothing_applies")
    return _pick(made, r_alt)


def _attempt(
    kind: str,
    word: str,
    r_pos: int,
    r_char: int,
    *,
    dictionary: bool,
    positions: bool,
    lexicon: ime.ImeLexicon | None,
    context: ime.Reading | None,
) -> Operation | None:
    if dictionary and lexicon is None and kind != "conversion":
        typo = dictionary_typo(word, kind, r_char)
        if typo is not None:
            return typo
    choices = _choices(kind, word, lexicon=lexicon, context=context)
    if not choices:
        return None
    if positions and lexicon is None:
        choices = profiled(choices, word)
    return _resolve(_pick(choices, r_pos), word, r_char)


@functools.cache
def shared_lexicon() -> ime.ImeLexicon:
    return ime.ImeLexicon()


def prepare(
    language: str, reads_context: bool, conversion: float, homophones: Any
) -> tuple[Any, Any]:
    """What ``perturb_frame`` hands to ``ops.decide`` for a benchmark: the homophone source
    (``homophones.Homophones`` for the uniform model, ``ime.ImeLexicon`` for the others; None
    for English) and, for Japanese under the keyboard and natural models, an
    ``ime.JapaneseContext`` whose ``occurrence(text, start, end)`` reads an occurrence in context
    (None otherwise)."""
    if language != "japanese":
        return None, None
    if not reads_context:
        if conversion > 0 and homophones is None:
            homophones = Homophones()
        return homophones, None
    lexicon = homophones if isinstance(homophones, ime.ImeLexicon) else shared_lexicon()
    return lexicon, ime.JapaneseContext()
