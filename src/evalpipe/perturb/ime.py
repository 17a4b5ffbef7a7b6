"""Japanese typos made through an input method (IME), for the keyboard and natural models.

A Japanese typist types the reading of a word as romaji, the IME shows kana and converts them to
kanji on request. So a keyboard slip never produces a random kanji: it changes the *keys* of the
reading, and the IME then either finds a word for the new reading (its first candidate, i.e. the
most frequent word with that reading and the same part of speech) or leaves the kana on screen.

- ``JapaneseContext`` reads a whole field text once (UniDic through fugashi/unidic-lite) and gives
  each occurrence its reading *in context* (的 in 具体的 is テキ, not マト), its part of speech and
  its conjugation form.
- ``ImeLexicon`` is the frozen table ``ime_lexicon.tsv``: the one-token kanji words of wordfreq
  3.1.1's Japanese top 50,000 with their UniDic reading, lemma, POS, conjugation form and
  frequency, without proper names (``固有名詞``) and classical forms (``文語`` conjugations).
  It gives the reconversion of a slipped reading and the homophones of a conversion slip
  (same reading, another lemma, same POS and conjugation form, weighted by frequency).
- ``romaji`` spells kana as keys (``っ`` doubles the next consonant, ``ん`` is ``nn``, ``ー`` is
  ``-``); ``keystroke_transpositions`` and ``keystroke_deletions`` edit those keys and keep the
  edits that ``keyboard.ime_read`` reads back entirely as kana.
"""

from __future__ import annotations

import functools
import os
import sys
from pathlib import Path
from typing import NamedTuple

from evalpipe.errors import InputError
from evalpipe.perturb.keyboard import (
    KANA_TO_ROMAJI,
    ime_read,
    is_kana,
    kana_units,
    to_hiragana,
    to_katakana,
)
from evalpipe.perturb.scripts import char_class

LEXICON_SIZE = 50_000
MIN_ZIPF = 2.0  # words rarer than about 1 in 10 million tokens are left out
LEXICON_PATH = Path(__file__).with_name("ime_lexicon.tsv")
LEFT_HAND = frozenset("qwertasdfgzxcvb")
MIN_WEIGHT = 316  # zipf 3.5 (about 3 per million words): rarer words are never offered
MIN_READING = 2  # one-kana readings (ヒ, タ) are left as kana: an IME offers the kana first
BLOCKED = frozenset({"糞", "屎"})  # vulgar words never offered as a slip
CROSS_HAND_WEIGHT = 4  # a swap of keys typed by different hands, against 1 for the same hand


class Reading(NamedTuple):
    """An occurrence as UniDic reads it in its text."""

    kana: str  # katakana reading (UniDic ``kana``), "" when a token has none
    pos: str  # the first token's POS, e.g. 名詞-普通名詞-一般
    cform: str  # the last token's conjugation form ("*" when it does not conjugate)
    lemmas: tuple[str, ...]
    # the kana unit right after the occurrence in its text: a word ending in っ is typed with
    # it (やっ|て is typed "yatte"), so its keystroke slips are made in that context
    after: str = ""
    # whether an IME converts the occurrence as a unit of its own: not a proper noun, not a
    # prefix or suffix, not a part of a kanji compound (県 of 愛知県, 先 of 委託先, 安全 of
    # 安全性 are converted with the whole compound, so no homophone of the part is typed)
    unit: bool = True


def _tagger():
    try:
        import fugashi
        import unidic_lite

        dicdir = unidic_lite.DICDIR
        rc = os.path.join(dicdir, "mecabrc")
        return fugashi.GenericTagger(f'-r "{rc}" -d "{dicdir}"')
    except Exception as exc:  # ImportError, or RuntimeError from MeCab
        raise InputError(
            f"Japanese IME typos need fugashi with the unidic-lite dictionary "
            f"(pip install fugashi unidic-lite): {exc}"
        ) from exc


def _feature_parts(feature: tuple[str, ...]) -> tuple[str, str, str, str]:
    """(kana, POS, cForm, lemma) of one UniDic feature tuple (unidic-lite's 26 columns)."""
    if len(feature) > 17:
        pos = "-".join(p for p in feature[:4] if p and p != "*")
        kana = feature[17] if feature[17] != "*" else ""
        return kana, pos, feature[5], feature[7].split("-")[0]
    return "", "", "*", ""


# Token POS that join a neighbour into one compound the IME converts whole.
_JOINS_BEFORE = ("名詞", "接頭辞")  # a token before the occurrence: 都道府|県, 御|社
_JOINS_AFTER = ("名詞", "接尾辞")  # a token after it: 委託|先, 安全|性, 業者|等
# A verbal noun (UniDic's サ変可能) before a form of する (lemma 為る: する, し, さ|れる) is
# converted with its verb, which picks the kanji: しようする gives 使用する, never 仕様する.
_VERBAL_NOUN = "サ変可能"
_SURU = "為る"


def conversion_unit(
    tokens: list[tuple[int, int, str, str, str, str]],
    first: tuple[int, int, str, str, str, str],
    last: tuple[int, int, str, str, str, str],
    text: str,
) -> bool:
    """Whether the tokens ``first`` .. ``last`` of ``text`` form a unit an IME converts on its
    own: none is a proper noun, the first is no suffix and the last no prefix, no kanji
    noun, prefix or suffix is joined to either end (the compound is converted whole), and the
    last is no verbal noun before する (the verb picks its kanji: 使用する, 使用される).

    Examples
    --------
    >>> ctx = JapaneseContext()
    >>> text = "愛知県の委託先で機会を待つ。"
    >>> toks = ctx.tokens(text)
    >>> [(text[t[0]:t[1]], conversion_unit(toks, t, t, text)) for t in toks[:6]]
    [('愛知', False), ('県', False), ('の', True), ('委託', False), ('先', False), ('で', True)]
    >>> [conversion_unit(toks, t, t, text) for t in toks if text[t[0]:t[1]] == "機会"]
    [True]
    >>> text = "お金を預けるところは？"
    >>> toks = ctx.tokens(text)
    >>> conversion_unit(toks, toks[1], toks[1], text)  # お|金: converted as おかね
    False
    >>> text = "使用される薬と使用の方法"
    >>> toks = ctx.tokens(text)
    >>> [conversion_unit(toks, t, t, text) for t in toks if text[t[0]:t[1]] == "使用"]
    [False, True]
    """
    inside = [t for t in tokens if first[0] <= t[0] and t[1] <= last[1]]
    if any("固有名詞" in t[3] for t in inside):
        return False
    if first[3].startswith("接尾辞") or last[3].startswith("接頭辞"):
        return False
    before = [t for t in tokens if t[1] == first[0]]
    after = [t for t in tokens if t[0] == last[1]]
    if after and _VERBAL_NOUN in last[3] and after[0][5] == _SURU:
        return False
    for edge, neighbour, joins in ((first, before, _JOINS_BEFORE), (last, after, _JOINS_AFTER)):
        # kanji nouns (and affixes) joined to kanji nouns: one compound
        if not neighbour or not _kanji_nominal(edge, text):
            continue
        t = neighbour[0]
        # a prefix joins in kana too: お|金 is typed and converted as おかね
        if t[3].startswith(joins) and (has_kanji(text[t[0] : t[1]]) or t[3].startswith("接頭辞")):
            return False
    return True


def _kanji_nominal(token: tuple[int, int, str, str, str, str], text: str) -> bool:
    return token[3].startswith(("名詞", "接頭辞", "接尾辞")) and has_kanji(
        text[token[0] : token[1]]
    )


class JapaneseContext:
    """Readings of occurrences taken from the analysis of their whole text (cached per text)."""

    def __init__(self) -> None:
        self._tagger = _tagger()
        self._cache: dict[str, list[tuple[int, int, str, str, str, str]]] = {}

    def tokens(self, text: str) -> list[tuple[int, int, str, str, str, str]]:
        """``[(start, end, kana, pos, cform, lemma), ...]`` with offsets into ``text``."""
        hit = self._cache.get(text)
        if hit is not None:
            return hit
        out = []
        cursor = 0
        for node in self._tagger(text):
            surface = node.surface
            if not surface:
                continue
            at = text.find(surface, cursor)
            if at < 0:
                continue
            kana, pos, cform, lemma = _feature_parts(tuple(node.feature))
            out.append((at, at + len(surface), kana, pos, cform, lemma))
            cursor = at + len(surface)
        if len(self._cache) < 100_000:
            self._cache[text] = out
        return out

    def occurrence(self, text: str, start: int, end: int) -> Reading | None:
        """The reading of ``text[start:end]`` from the tokens that exactly cover it, or None
        when the span does not start and end on token boundaries."""
        toks = [t for t in self.tokens(text) if t[0] < end and start < t[1]]
        if not toks or toks[0][0] != start or toks[-1][1] != end:
            return None
        kana = "".join(t[2] for t in toks) if all(t[2] for t in toks) else ""
        units = kana_units(text[end : end + 2])
        after = text[end : end + units[0][1]] if units and units[0][0] == 0 else ""
        unit = conversion_unit(self.tokens(text), toks[0], toks[-1], text)
        return Reading(kana, toks[0][3], toks[-1][4], tuple(t[5] for t in toks), after, unit)

    def pos(self, text: str, start: int, end: int) -> str | None:
        """The UniDic POS of the occurrence's first token (None off token boundaries)."""
        rd = self.occurrence(text, start, end)
        return rd.pos if rd is not None else None

    def reading_alone(self, word: str) -> Reading | None:
        """A word read on its own (when no text is at hand)."""
        return self.occurrence(word, 0, len(word))


class Entry(NamedTuple):
    surface: str
    lemma: str
    pos: str  # first two POS components, e.g. 名詞-普通名詞
    cform: str
    weight: int  # relative frequency: round(10 ** (zipf - 1))


def _pos2(pos: str) -> str:
    return "-".join(pos.split("-")[:2])


_NOMINAL = ("名詞-普通名詞", "名詞-数詞", "代名詞", "形状詞-一般", "形状詞-タリ")


def pos_class(pos: str) -> str:
    """The part of speech a conversion must keep: nouns and na-adjectives (UniDic's 形状詞, which
    IPAdic files as 名詞-形容動詞語幹) form one nominal class; otherwise the first two components.

    Examples
    --------
    >>> pos_class("名詞-普通名詞-副詞可能"), pos_class("形状詞-一般"), pos_class("形容詞-一般")
    ('nominal', 'nominal', '形容詞-一般')
    """
    two = _pos2(pos)
    return "nominal" if two in _NOMINAL or two.split("-")[0] == "代名詞" else two


class ImeLexicon:
    """Reading -> words, for reconversion and homophones (see the module docstring).

    Examples
    --------
    >>> lex = ImeLexicon()
    >>> [e.surface for e in lex.homophones("イガイ", "名詞-普通名詞-副詞可能", "*", ("以外",))][:1]
    ['意外']
    """

    def __init__(self, path: Path = LEXICON_PATH) -> None:
        self.by_reading: dict[str, list[Entry]] = {}
        for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            if not line or line.startswith("#"):
                continue
            parts = line.split("\t")
            if len(parts) != 6:
                raise InputError(
                    f"{path}, line {i}: expected reading, surface, lemma, pos, cform, weight"
                )
            self.by_reading.setdefault(parts[0], []).append(
                Entry(parts[1], parts[2], parts[3], parts[4], int(parts[5]))
            )
        for entries in self.by_reading.values():
            entries.sort(key=lambda e: (-e.weight, e.surface))

    def first_candidate(self, kana: str, pos: str, cform: str) -> str | None:
        """What the IME offers first for the reading ``kana``: the most frequent word with the
        same POS class and conjugation form and a weight of at least ``MIN_WEIGHT``, or None
        (the kana stay)."""
        want = pos_class(pos)
        if len(kana) < MIN_READING:
            return None
        for e in self.by_reading.get(to_katakana(kana), ()):
            if (
                pos_class(e.pos) == want
                and e.cform == cform
                and e.weight >= MIN_WEIGHT
                and e.surface not in BLOCKED
            ):
                return e.surface
        return None

    def homophones(
        self, kana: str, pos: str, cform: str, lemmas: tuple[str, ...], surface: str = ""
    ) -> list[Entry]:
        """Words with the reading ``kana``, another lemma, the same POS class and conjugation form
        and a weight of at least ``MIN_WEIGHT``, most frequent first (the caller weights its pick by ``Entry.weight``)."""
        want = pos_class(pos)
        own = {lem.split("-")[0] for lem in lemmas}
        if len(kana) < MIN_READING:
            return []
        return [
            e
            for e in self.by_reading.get(to_katakana(kana), ())
            if pos_class(e.pos) == want
            and e.cform == cform
            and e.weight >= MIN_WEIGHT
            and e.surface not in BLOCKED
            and e.lemma not in own
            and e.surface != surface
        ]


def has_kanji(word: str) -> bool:
    return any(char_class(ch) == "kanji" for ch in word)


def is_kana_word(word: str) -> bool:
    return bool(word) and all(is_kana(ch) or ch == "ー" for ch in word)


@functools.lru_cache(maxsize=65_536)
def romaji(kana: str) -> str | None:
    """The keys most typists press for ``kana`` (hiragana or katakana), or None when a kana
    has no romaji spelling.

    Examples
    --------
    >>> romaji("きって"), romaji("コーヒー"), romaji("ほん")
    ('kitte', 'ko-hi-', 'honn')
    """
    hira = to_hiragana(kana)
    keys: list[str] = []
    double = False
    for s, e in kana_units(hira):
        unit = hira[s:e]
        if unit == "っ":
            if double:
                return None
            double = True
            continue
        spelling = "nn" if unit == "ん" else KANA_TO_ROMAJI.get(unit)
        if spelling is None:
            return None
        if double:
            if spelling[0] in "aiueon":
                keys.append("ltu")
            else:
                keys.append(spelling[0])
            double = False
        keys.append(spelling)
    if double:
        keys.append("ltu")
    out = "".join(keys)
    # ー is typed with the minus key; kana_units skips it, so put it back in order
    if "ー" in hira:
        parts = hira.split("ー")
        spelled = [romaji(p) if p else "" for p in parts]
        if any(s is None for s in spelled):
            return None
        return "-".join(spelled)  # type: ignore[arg-type]
    return out


def read_keys(keys: str) -> str | None:
    """``keyboard.ime_read`` with ``-`` read as ``ー``."""
    pieces = keys.split("-")
    read = [ime_read(p) if p else "" for p in pieces]
    if any(r is None for r in read):
        return None
    return "ー".join(read)  # type: ignore[arg-type]


def _hand(key: str) -> str:
    return "left" if key in LEFT_HAND else "right"


SOKUON = ("っ", "ッ")


def _in_context(
    slips: tuple[tuple[str, str, int], ...], kana: str, after: str
) -> tuple[tuple[str, str, int], ...]:
    """The slips of ``kana + after`` that leave ``after`` as it was, cut back to ``kana``'s
    part: the keystrokes of a word ending in っ run on into the next kana's."""
    tail = to_hiragana(after)
    out = []
    for new, path, w in slips:
        if to_hiragana(new).endswith(tail) and len(new) > len(after):
            head = new[: len(new) - len(after)]
            if to_hiragana(head) != to_hiragana(kana):
                out.append((head, path, w))
    return tuple(out)


def _typed_with(kana: str, after: str) -> bool:
    return bool(after) and kana.endswith(SOKUON) and romaji(kana + after) is not None


@functools.lru_cache(maxsize=65_536)
def keystroke_transpositions(kana: str, after: str = "") -> tuple[tuple[str, str, int], ...]:
    """Two adjacent different keys of the reading swapped, kept when the IME reads the keys
    back as kana other than ``kana``: ``((new kana, key path, weight), ...)``; keys typed by
    different hands weigh ``CROSS_HAND_WEIGHT``, the same hand 1.

    Examples
    --------
    >>> [k for k, _, _ in keystroke_transpositions("ありがとう")][:2]
    ['らいがとう', 'ありがおつ']

    ``after``: the kana unit that follows the word in its text (see :func:`keystroke_deletions`).
    """
    if _typed_with(kana, after):
        return _in_context(keystroke_transpositions(kana + after), kana, after)
    keys = romaji(kana)
    if keys is None:
        return ()
    katakana = kana != to_hiragana(kana)
    found: dict[tuple[str, str], int] = {}
    for i in range(len(keys) - 1):
        a, b = keys[i], keys[i + 1]
        if a == b or not (a.isalpha() and b.isalpha()):
            continue
        typed = keys[:i] + b + a + keys[i + 2 :]
        new = read_keys(typed)
        if new is None or new == to_hiragana(kana):
            continue
        new = to_katakana(new) if katakana else new
        weight = CROSS_HAND_WEIGHT if _hand(a) != _hand(b) else 1
        found.setdefault((new, f"{keys}->{typed}"), weight)
    return tuple((new, path, w) for (new, path), w in found.items())


@functools.lru_cache(maxsize=65_536)
def keystroke_deletions(kana: str, after: str = "") -> tuple[tuple[str, str, int], ...]:
    """One key of the reading left out, kept when the IME reads the rest as other kana.

    ``after`` is the kana unit that follows the word in its text: a word ending in っ is typed
    with it (やっ|て is "yatte"), so its keys are those of both, and only slips that leave the
    next kana as it was count (a dropped "t" gives や|て, never a lone っ's "ltu" slips).

    Examples
    --------
    >>> sorted({k for k, _, _ in keystroke_deletions("じだい")})[:3]
    ['いだい', 'じあい', 'じだ']
    >>> sorted({k for k, _, _ in keystroke_deletions("やっ", after="て")})
    ['あっ', 'や']
    """
    if _typed_with(kana, after):
        return _in_context(keystroke_deletions(kana + after), kana, after)
    keys = romaji(kana)
    if keys is None:
        return ()
    katakana = kana != to_hiragana(kana)
    found: dict[tuple[str, str], int] = {}
    for i in range(len(keys)):
        typed = keys[:i] + keys[i + 1 :]
        new = read_keys(typed) if typed else None
        if not new or new == to_hiragana(kana):
            continue
        new = to_katakana(new) if katakana else new
        found.setdefault((new, f"{keys}->{typed}"), 1)
    return tuple((new, path, w) for (new, path), w in found.items())


def build_table(words: list[str]) -> list[tuple[str, str, str, str, str, int]]:
    """``[(reading, surface, lemma, pos, cform, weight), ...]`` for the one-token kanji words
    among ``words`` (wordfreq order), without proper names, classical forms and symbols."""
    import math

    import wordfreq

    freqs = wordfreq.get_frequency_dict("ja")
    tagger = _tagger()
    rows = []
    seen: set[tuple[str, str]] = set()
    for word in words:
        if not has_kanji(word):
            continue
        zipf = math.log10(freqs[word]) + 9 if freqs.get(word) else 1.0
        nodes = list(tagger(word))
        if len(nodes) != 1 or nodes[0].surface != word:
            continue
        feature = tuple(nodes[0].feature)
        kana, pos, cform, lemma = _feature_parts(feature)
        if zipf < MIN_ZIPF:
            continue
        if not kana or "固有名詞" in pos or feature[4].startswith("文語"):
            continue
        if pos.split("-")[0] in ("記号", "補助記号", "空白"):
            continue
        if (kana, word) in seen:
            continue
        seen.add((kana, word))
        rows.append((kana, word, lemma, _pos2(pos), cform, max(1, round(10 ** (zipf - 1)))))
    return sorted(rows, key=lambda r: (r[0], -r[5], r[1]))


def main() -> None:
    """Write the IME lexicon from wordfreq's Japanese list to stdout."""
    from importlib.metadata import version

    import wordfreq

    rows = build_table(wordfreq.top_n_list("ja", LEXICON_SIZE))
    out = sys.stdout
    out.write(
        f"# reading<TAB>surface<TAB>lemma<TAB>pos<TAB>cform<TAB>weight: wordfreq "
        f"{version('wordfreq')} ja top {LEXICON_SIZE}, unidic-lite {version('unidic-lite')}; "
        f"one-token kanji words, no proper names or classical forms; weight = "
        f"round(10 ** (zipf - 1)), zipf >= {MIN_ZIPF} (python -m evalpipe.perturb.ime)\n"
    )
    for row in rows:
        out.write("\t".join(map(str, row)) + "\n")


if __name__ == "__main__":
    main()
