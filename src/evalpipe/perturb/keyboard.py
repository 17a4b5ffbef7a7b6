"""Keyboard slips: neighbouring keys on a QWERTY layout, and romaji input re-read by an IME.

Latin letters: a key's neighbours are the keys left and right of it on its row (weight 2) and
the keys above and below it on the staggered layout (weight 1): MulTypo's 2:1 weighting of
horizontal over vertical slips. Each row sits about half a key to the right of the row above, so
the key at column ``c`` of a row touches columns ``c`` and ``c + 1`` of the row above and ``c - 1``
and ``c`` of the row below (``s`` touches ``w, e`` above and ``z, x`` below).

Kana: Japanese is typed as romaji that an input method (IME) turns into kana as the keys arrive.
A slip replaces one key of the kana's romaji spelling by a neighbour (or, for an insertion, types
one more key that repeats or neighbours the adjacent one); the keys are then read back the way an
IME reads them (longest romaji match, a doubled consonant gives っ, ``n`` before a consonant gives
ん). Only slips that the IME turns entirely into kana count: ``ka`` -> ``ja`` (か -> じゃ) does,
``ka`` -> ``ma`` (か -> ま) does, ``ka`` -> ``kz`` (left as ``kz`` on screen) does not.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable

ROWS = ("qwertyuiop", "asdfghjkl", "zxcvbnm")
HORIZONTAL_WEIGHT = 2
VERTICAL_WEIGHT = 1


def _neighbours() -> dict[str, tuple[tuple[str, int], ...]]:
    where = {key: (r, c) for r, row in enumerate(ROWS) for c, key in enumerate(row)}
    table: dict[str, tuple[tuple[str, int], ...]] = {}
    for key, (r, c) in where.items():
        found: list[tuple[str, int]] = []
        for dc in (-1, 1):
            if 0 <= c + dc < len(ROWS[r]):
                found.append((ROWS[r][c + dc], HORIZONTAL_WEIGHT))
        for dr, cols in ((-1, (c, c + 1)), (1, (c - 1, c))):
            if 0 <= r + dr < len(ROWS):
                for cc in cols:
                    if 0 <= cc < len(ROWS[r + dr]):
                        found.append((ROWS[r + dr][cc], VERTICAL_WEIGHT))
        table[key] = tuple(found)
    return table


NEIGHBOURS: dict[str, tuple[tuple[str, int], ...]] = _neighbours()
"""Lowercase key -> ``((neighbour, weight), ...)``: horizontal first (weight 2), then vertical."""


def is_neighbour(a: str, b: str) -> bool:
    """True when keys ``a`` and ``b`` (either case) touch on the QWERTY layout."""
    return any(k == b.lower() for k, _ in NEIGHBOURS.get(a.lower(), ()))


def _with_case(key: str, like: str) -> str:
    return key.upper() if like.isupper() else key


def letter_slips(ch: str) -> tuple[tuple[str, int], ...]:
    """Weighted replacements of one ASCII letter: its neighbours, in its case."""
    return tuple((_with_case(k, ch), w) for k, w in NEIGHBOURS.get(ch.lower(), ()))


def letter_insertions(anchors: Iterable[str]) -> tuple[tuple[str, int], ...]:
    """Weighted characters a stray key leaves next to the ``anchors`` (the letters beside the
    slot): each anchor repeated (weight 2, a key pressed twice) or one of its neighbours; the
    case is the anchor's. The same character reached from two anchors adds its weights."""
    weights: dict[str, int] = {}
    for a in anchors:
        if not (a.isascii() and a.isalpha()):
            continue
        for k, w in ((a.lower(), HORIZONTAL_WEIGHT), *NEIGHBOURS[a.lower()]):
            key = _with_case(k, a)
            weights[key] = weights.get(key, 0) + w
    return tuple(sorted(weights.items()))


# ----------------------------------------------------------------------------- romaji and kana

_GOJUON = {
    "": "あいうえお",
    "k": "かきくけこ",
    "g": "がぎぐげご",
    "s": "さしすせそ",
    "z": "ざじずぜぞ",
    "t": "たちつてと",
    "d": "だぢづでど",
    "n": "なにぬねの",
    "h": "はひふへほ",
    "b": "ばびぶべぼ",
    "p": "ぱぴぷぺぽ",
    "m": "まみむめも",
    "r": "らりるれろ",
}
_YOON = {"k": "き", "g": "ぎ", "n": "に", "h": "ひ", "b": "び", "p": "ぴ", "m": "み", "r": "り"}


def _romaji_table() -> dict[str, str]:
    """Romaji -> kana as a Japanese IME (MS-IME, Google, macOS) reads it."""
    t: dict[str, str] = {}
    for cons, kana in _GOJUON.items():
        for vowel, k in zip("aiueo", kana, strict=True):
            t[cons + vowel] = k
    t.update({"ya": "や", "yu": "ゆ", "yo": "よ", "wa": "わ", "wo": "を", "nn": "ん", "n'": "ん"})
    t.update({"shi": "し", "chi": "ち", "tsu": "つ", "fu": "ふ", "ji": "じ", "ye": "いぇ"})
    t.update({"wi": "うぃ", "we": "うぇ", "va": "ゔぁ", "vi": "ゔぃ", "vu": "ゔ", "ve": "ゔぇ"})
    t.update({"vo": "ゔぉ", "fa": "ふぁ", "fi": "ふぃ", "fe": "ふぇ", "fo": "ふぉ", "je": "じぇ"})
    t.update({"she": "しぇ", "che": "ちぇ", "thi": "てぃ", "dhi": "でぃ", "twu": "とぅ"})
    small = {"a": "ぁ", "i": "ぃ", "u": "ぅ", "e": "ぇ", "o": "ぉ"}
    for prefix in ("x", "l"):
        for vowel, k in small.items():
            t[prefix + vowel] = k
        t.update({prefix + "ya": "ゃ", prefix + "yu": "ゅ", prefix + "yo": "ょ"})
        t.update({prefix + "tu": "っ", prefix + "tsu": "っ", prefix + "wa": "ゎ"})
    for cons, i_kana in _YOON.items():
        for vowel, small_y in (("a", "ゃ"), ("u", "ゅ"), ("o", "ょ")):
            t[cons + "y" + vowel] = i_kana + small_y
    for vowel, small_y in (("a", "ゃ"), ("u", "ゅ"), ("o", "ょ")):
        for spelling, base in (
            ("sh", "し"), ("sy", "し"), ("ch", "ち"), ("ty", "ち"), ("cy", "ち"),
            ("j", "じ"), ("zy", "じ"), ("jy", "じ"), ("dy", "ぢ"),
        ):  # fmt: skip
            t[spelling + vowel] = base + small_y
    return t


ROMAJI_TO_KANA: dict[str, str] = _romaji_table()
_MAX_ROMAJI = max(map(len, ROMAJI_TO_KANA))

# The spelling most people type for each kana unit (Hepburn where an IME accepts it).
_PREFERRED = {
    "し": "shi", "ち": "chi", "つ": "tsu", "ふ": "fu", "じ": "ji", "ん": "nn", "を": "wo",
    "しゃ": "sha", "しゅ": "shu", "しょ": "sho", "ちゃ": "cha", "ちゅ": "chu", "ちょ": "cho",
    "じゃ": "ja", "じゅ": "ju", "じょ": "jo", "ぢ": "di", "づ": "du",
}  # fmt: skip


def _kana_to_romaji() -> dict[str, str]:
    out: dict[str, str] = {}
    for spelling, kana in sorted(ROMAJI_TO_KANA.items(), key=lambda kv: (len(kv[0]), kv[0])):
        if spelling[0] not in "xl" and "'" not in spelling:
            out.setdefault(kana, spelling)
    out.update(_PREFERRED)
    return out


KANA_TO_ROMAJI: dict[str, str] = _kana_to_romaji()

_VOWELS = set("aiueo")


def ime_read(keys: str) -> str | None:
    """The kana an IME shows for the romaji ``keys``, or None if any key is left unconverted.

    Longest match first; a consonant typed twice (``tt``) gives っ and starts the next kana; an
    ``n`` followed by a consonant other than ``y`` (or ending the input) gives ん.

    Examples
    --------
    >>> ime_read("kitte"), ime_read("ja"), ime_read("kanji"), ime_read("kz")
    ('きって', 'じゃ', 'かんじ', None)
    """
    out: list[str] = []
    i = 0
    n = len(keys)
    while i < n:
        c = keys[i]
        if c not in _VOWELS and c != "n" and i + 1 < n and keys[i + 1] == c and c.isalpha():
            out.append("っ")
            i += 1
            continue
        for length in range(min(_MAX_ROMAJI, n - i), 0, -1):
            kana = ROMAJI_TO_KANA.get(keys[i : i + length])
            if kana is not None:
                out.append(kana)
                i += length
                break
        else:
            if c == "n" and (i + 1 == n or (keys[i + 1] not in _VOWELS and keys[i + 1] != "y")):
                out.append("ん")
                i += 1
                continue
            return None
    return "".join(out)


_HIRA_TO_KATA = {chr(c): chr(c + 0x60) for c in range(0x3041, 0x3097)}
_KATA_TO_HIRA = {v: k for k, v in _HIRA_TO_KATA.items()}


def to_hiragana(text: str) -> str:
    return "".join(_KATA_TO_HIRA.get(ch, ch) for ch in text)


def to_katakana(text: str) -> str:
    return "".join(_HIRA_TO_KATA.get(ch, ch) for ch in text)


def is_kana(ch: str) -> bool:
    """Hiragana ぁ..ゖ or katakana ァ..ヶ (the long-vowel mark ー is not typed as a letter key)."""
    return "\u3041" <= ch <= "\u3096" or "\u30a1" <= ch <= "\u30f6"


_SMALL = set("ゃゅょぁぃぅぇぉゎャュョァィゥェォヮ")


def kana_units(word: str) -> list[tuple[int, int]]:
    """``(start, end)`` of each kana typed as one romaji spelling: a kana with the small kana
    that follows it when they form one syllable (じゃ, ふぁ), else one kana. っ, ん and kana that
    have no romaji spelling are units too; the caller sees they have no slips."""
    units: list[tuple[int, int]] = []
    i = 0
    n = len(word)
    while i < n:
        if not is_kana(word[i]):
            i += 1
            continue
        pair = word[i : i + 2]
        if (
            i + 1 < n
            and word[i + 1] in _SMALL
            and (pair == to_hiragana(pair) or pair == to_katakana(pair))  # one script
            and to_hiragana(pair) in KANA_TO_ROMAJI
        ):
            units.append((i, i + 2))
            i += 2
        else:
            units.append((i, i + 1))
            i += 1
    return units


@functools.lru_cache(maxsize=4096)
def kana_slips(unit: str) -> tuple[tuple[str, str, int], ...]:
    """Weighted romaji slips of one kana unit: ``((new kana, key path, weight), ...)``.

    One key of the unit's romaji spelling is replaced by a QWERTY neighbour (weights as for
    letters); the slip counts when the IME reads the new keys as kana different from the unit.
    Katakana stays katakana (the typist converts the reading to katakana as intended). The key
    path names the spellings, e.g. ``ka->sa``.

    Examples
    --------
    >>> [s for s in kana_slips("か") if s[0] in ("じゃ", "ま")]
    [('じゃ', 'ka->ja', 2), ('ま', 'ka->ma', 1)]
    """
    katakana = unit != to_hiragana(unit)
    spelling = KANA_TO_ROMAJI.get(to_hiragana(unit))
    if spelling is None or unit in ("ん", "ン", "っ", "ッ"):
        return ()
    found: dict[tuple[str, str], int] = {}
    for i, key in enumerate(spelling):
        for new_key, weight in NEIGHBOURS.get(key, ()):
            typed = spelling[:i] + new_key + spelling[i + 1 :]
            kana = ime_read(typed)
            if kana is None or kana == to_hiragana(unit):
                continue
            new = to_katakana(kana) if katakana else kana
            found[(new, f"{spelling}->{typed}")] = weight
    return tuple((new, path, w) for (new, path), w in sorted(found.items()))


@functools.lru_cache(maxsize=4096)
def kana_insertions(before: str, after: str) -> tuple[tuple[str, str, int], ...]:
    """Weighted kana a stray key inserts between the units ``before`` and ``after`` (either may
    be empty at a word edge): ``((inserted kana, key path, weight), ...)``.

    The stray key repeats (weight 2) or neighbours the last key of ``before`` or the first key of
    ``after``; the keys ``romaji(before) + stray + romaji(after)`` must read back as ``before +
    X + after`` with X exactly one kana (e.g. か|た + ``t`` -> かった: X = っ; か|た + ``a`` -> かあた:
    X = あ).

    Examples
    --------
    >>> sorted({k for k, _, _ in kana_insertions("か", "た")})
    ['あ', 'っ']
    """
    hira_b, hira_a = to_hiragana(before), to_hiragana(after)
    katakana = before + after != hira_b + hira_a
    spell_b = KANA_TO_ROMAJI.get(hira_b, "") if before else ""
    spell_a = KANA_TO_ROMAJI.get(hira_a, "") if after else ""
    if (before and not spell_b) or (after and not spell_a) or before in ("ん", "ン"):
        return ()  # ん typed as "nn": a key after it is read with the next kana
    anchors = ([spell_b[-1]] if spell_b else []) + ([spell_a[0]] if spell_a else [])
    weights: dict[str, int] = {}
    for anchor in anchors:
        for key, w in ((anchor, HORIZONTAL_WEIGHT), *NEIGHBOURS.get(anchor, ())):
            weights[key] = weights.get(key, 0) + w
    found: dict[tuple[str, str], int] = {}
    for key, w in weights.items():
        typed = spell_b + key + spell_a
        kana = ime_read(typed)
        if kana is None or len(kana) != len(hira_b) + len(hira_a) + 1:
            continue
        if not (kana.startswith(hira_b) and kana.endswith(hira_a)):
            continue
        middle = kana[len(hira_b) : len(kana) - len(hira_a)]
        if not is_kana(middle):
            continue
        new = to_katakana(middle) if katakana else middle
        path = f"{spell_b}{spell_a}->{typed}"
        found[(new, path)] = found.get((new, path), 0) + w
    return tuple((new, path, w) for (new, path), w in sorted(found.items()))
