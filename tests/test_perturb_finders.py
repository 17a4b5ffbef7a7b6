"""Finding occurrences: English whole words, Japanese UniDic tokens."""

from __future__ import annotations

import functools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalpipe.errors import InputError
from evalpipe.perturb import EnglishFinder, JapaneseFinder, Tokenizer
from evalpipe.perturb.targets import Target, make_finder


def _english(words: list[str], text: str) -> list[tuple[str, str]]:
    finder = EnglishFinder(words)
    return [(words[t], text[s:e]) for t, s, e in finder.find(text)]


@functools.cache
def _tokenizer() -> Tokenizer:
    return Tokenizer()


def _japanese(entries: list[tuple[str, str | None, str | None]], text: str) -> list[tuple]:
    finder = JapaneseFinder(entries, tokenizer=_tokenizer())
    return [(entries[t][0], s, e, text[s:e]) for t, s, e in finder.find(text)]


def test_english_matches_whole_words_in_any_case():
    found = _english(["the", "cat"], "The cat sat on THE mat; theme cats tHe.")
    assert found == [("the", "The"), ("cat", "cat"), ("the", "THE"), ("the", "tHe")]


def test_english_apostrophes_join_a_word_and_typographic_ones_count():
    text = "It's don’t it don't o'clock 'it'"
    assert _english(["it"], text) == [("it", "it"), ("it", "it")]  # not inside it's
    assert _english(["don't"], text) == [("don't", "don’t"), ("don't", "don't")]
    assert _english(["o'clock"], text) == [("o'clock", "o'clock")]


def test_english_hyphens_and_slashes_separate_words():
    found = _english(["well", "known", "and"], "well-known and/or well‐known")
    assert [w for w, _ in found] == ["well", "known", "and", "well", "known"]


def test_english_does_not_normalise_unicode_look_alikes():
    text = "ｔｈｅ ﬁnd thé the\u0301 \u212aind kind"  # full width, ligature, accents, Kelvin sign
    assert _english(["the", "find", "kind"], text) == [("kind", "kind")]


def test_english_offsets_index_the_stored_text_around_emoji():
    text = "😀the🙂 cat\u200bthe"
    finder = EnglishFinder(["the", "cat"])
    spans = finder.find(text)
    assert [text[s:e] for _, s, e in spans] == ["the", "cat", "the"]
    assert spans[0][1:] == (1, 4)  # code-point offsets: the emoji is one character


def test_english_target_words_must_be_single_words():
    with pytest.raises(InputError, match=r"row 2, column 'word'.*'t-shirt'"):
        EnglishFinder(["the", "t-shirt"], source="data/words/english.parquet")
    with pytest.raises(InputError, match="duplicate target word"):
        EnglishFinder(["The", "the"])


def test_japanese_lemma_is_not_found_inside_a_longer_token():
    # ますます is one adverb token (lemma 益々), not ます + ます
    entries = [("ます", "ます", "助動詞"), ("ます", None, None)]
    assert _japanese(entries, "ますます便利だ。") == []


def test_japanese_inflected_surfaces_are_found_by_lemma():
    text = "便利になりました。彼は走ります。"
    found = _japanese([("ます", "ます", "助動詞")], text)
    assert [f[3] for f in found] == ["まし", "ます"]
    assert all(text[s:e] == surface for _, s, e, surface in found)


def test_japanese_part_of_speech_must_match_component_wise():
    text = "東京の本を読んだのは私だ。"
    case_marker = _japanese([("の", "の", "助詞-格助詞")], text)
    any_particle = _japanese([("の", "の", "助詞")], text)
    wrong = _japanese([("の", "の", "名詞")], text)
    assert len(case_marker) == 1 and case_marker[0][1:3] == (2, 3)
    assert len(any_particle) == 2
    assert wrong == []


def test_japanese_surface_entries_match_runs_of_whole_tokens():
    text = "本を読んでいます。ますます元気です。"
    found = _japanese([("います", None, None), ("ます", None, None)], text)
    # います = い + ます (two tokens) is found; ます is found after い but not in ますます
    assert [(w, s) for w, s, _, _ in found] == [("います", 5), ("ます", 6)]


def test_japanese_texts_found_ahead_are_the_texts_found_one_by_one():
    entries = [("ます", "ます", "助動詞"), ("の", None, None), ("元気", None, None)]
    texts = ["本を読んでいます。", "ますます元気です。", "元気の素", "本を読んでいます。"]
    one_by_one = JapaneseFinder(entries, tokenizer=_tokenizer())
    expected = [one_by_one.find(t) for t in texts]
    ahead = JapaneseFinder(entries, tokenizer=_tokenizer())
    ahead.prepare(texts[:2])
    ahead.prepare(texts[2:])  # only the last batch is held
    assert set(ahead._ahead) == {"元気の素", "本を読んでいます。"}
    assert [ahead.find(t) for t in texts] == expected
    assert ahead._ahead == {}


def test_japanese_offsets_survive_whitespace_and_newlines():
    text = "彼は  走り\nました 。 そして ます"
    found = _japanese([("ます", "ます", "助動詞")], text)
    assert [text[s:e] for _, s, e, _ in found] == ["まし", "ます"]


def test_japanese_loanword_glosses_do_not_block_lemma_matches():
    found = _japanese([("テレビ", "テレビ", None)], "テレビを見た。")
    assert [f[3] for f in found] == ["テレビ"]


@given(text=st.text(alphabet="あいうますです本を読東京テレビ  \n\u3000、。ABc1😀", max_size=40))
@settings(max_examples=150, deadline=None)
def test_fast_surface_spans_agree_with_full_tokens(text: str):
    tokenizer = _tokenizer()
    surfaces, starts, ends = tokenizer.spans(text)
    assert surfaces == [text[s:e] for s, e in zip(starts, ends, strict=True)]
    # Whitespace tokens (U+3000 is one for UniDic) can never be part of a target word.
    words = [t for t in tokenizer.tokens(text) if text[t.start : t.end].strip()]
    kept = [(s, e) for s, e in zip(starts, ends, strict=True) if text[s].strip()]
    assert kept == [(t.start, t.end) for t in words]


_JA_ALPHABET = "あいうますです本を読東京テレビ  \n\u3000、。ABc1😀"


@given(
    text=st.text(alphabet=_JA_ALPHABET, max_size=40),
    words=st.lists(
        st.text(alphabet="あいうますです本を読東京テレビ 、。A", min_size=1, max_size=4).filter(
            str.strip
        ),
        min_size=1,
        max_size=8,
        unique=True,
    ),
)
@settings(max_examples=200, deadline=None)
def test_surface_entries_are_every_text_from_a_token_start_to_a_token_end(text, words):
    # The definition, by brute force over every (token start, token end) pair: the text
    # between them equals the entry, and an entry's matches do not overlap (earliest first).
    _, starts, ends = _tokenizer().spans(text)
    index = {w: i for i, w in enumerate(words)}
    expected, last_end = [], {}
    for s in starts:
        for e in sorted(e for e in ends if e > s):
            t = index.get(text[s:e])
            if t is not None and last_end.get(t, -1) <= s:
                expected.append((t, s, e))
                last_end[t] = e
    expected.sort(key=lambda o: (o[1], o[0]))
    finder = JapaneseFinder([(w, None, None) for w in words], tokenizer=_tokenizer())
    assert finder.find(text) == expected


def _surface_runs_brute_force(entries: list[str], text: str) -> list[tuple[int, int, int]]:
    """Every token-aligned span whose text is an entry, an entry's later overlapping spans
    dropped (the earliest start wins), sorted by (start, entry)."""
    _, starts, ends = _tokenizer().spans(text)
    index = {w: i for i, w in reversed(list(enumerate(entries)))}
    out, last_end = [], {}
    for i, start in enumerate(starts):
        for end in ends[i:]:
            w = index.get(text[start:end])
            if w is not None and last_end.get(w, -1) <= start:
                out.append((w, start, end))
                last_end[w] = end
    return sorted(out, key=lambda m: (m[1], m[0]))


_JA_PIECES = [
    "ます",
    "い",
    "ま",
    "す",
    "本",
    "を",
    "読ん",
    "で",
    "元気",
    "です",
    "。",
    "の",
    "ああ",
    "あ",
    "ー",
]


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.sampled_from([*_JA_PIECES, " ", "\n"]), max_size=30),
    st.lists(st.lists(st.sampled_from(_JA_PIECES), min_size=1, max_size=3), min_size=1, max_size=8),
)
def test_japanese_surface_runs_are_the_brute_force_spans(pieces: list[str], words: list[list[str]]):
    text = "".join(pieces)
    entries = ["".join(w) for w in words]
    finder = JapaneseFinder([(w, None, None) for w in entries], tokenizer=_tokenizer())
    assert finder.find(text) == _surface_runs_brute_force(entries, text)


def test_make_finder_says_which_finder_works_ahead():
    # perturb_frame hands a batch of texts to prepare only when the finder batches (MeCab)
    english = make_finder([Target(1, "the", "the", None, None)], "english")
    english.prepare(["ignored"])  # nothing to do ahead, and nothing breaks
    assert not english.batches and english.find("The cat") == [(0, 0, 3)]
    japanese = make_finder([Target(1, "本", "本", None, None)], "japanese")
    assert japanese.batches
    japanese.prepare(["東京の本"])
    assert japanese.find("東京の本") == [(0, 3, 4)]
