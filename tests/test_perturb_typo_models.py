"""Typo models: keyboard slips (QWERTY, romaji re-read by an IME), transpositions, kana-kanji
conversion slips, their validation and the common random numbers behind the decision."""

from __future__ import annotations

import functools
import itertools

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from evalpipe.errors import InputError
from evalpipe.perturb import Probabilities, Skipped, decide, occurrence_digest
from evalpipe.perturb.homophones import Homophones, ReadingAnalyser
from evalpipe.perturb.ime import ImeLexicon, read_keys
from evalpipe.perturb.keyboard import (
    KANA_TO_ROMAJI,
    NEIGHBOURS,
    ime_read,
    is_kana,
    is_neighbour,
    to_hiragana,
)
from evalpipe.perturb.ops import _SCALE, OPS, validate_probabilities
from evalpipe.perturb.scripts import char_class

digests = st.binary(min_size=32, max_size=32)
latin_words = st.text(alphabet="abcxyzQWERTYmnop0123", min_size=1, max_size=8)
kana_words = st.text(
    alphabet="かきくけこさしすせそたちつてとなにのはまやらわんっゃょーアイカキャ",
    min_size=1,
    max_size=6,
)
mixed_words = st.text(alphabet="食べ物日本語かなカナabc12ー", min_size=1, max_size=6)
KEYBOARD_REPLACE = Probabilities(1, 0, 0, model="keyboard")
KEYBOARD_INSERT = Probabilities(0, 1, 0, model="keyboard")
KEYBOARD_ALL = Probabilities(0.25, 0.25, 0.25, 0.25, model="keyboard")


@functools.cache
def homophones() -> Homophones:
    return Homophones()


# ----------------------------------------------------------------------------- QWERTY


def test_the_layout_weights_horizontal_neighbours_two_to_one():
    assert dict(NEIGHBOURS["s"]) == {"a": 2, "d": 2, "w": 1, "e": 1, "z": 1, "x": 1}
    assert dict(NEIGHBOURS["q"]) == {"w": 2, "a": 1}
    assert dict(NEIGHBOURS["m"]) == {"n": 2, "j": 1, "k": 1}
    for key, near in NEIGHBOURS.items():  # touching is symmetric, with the same weight
        for other, weight in near:
            assert dict(NEIGHBOURS[other])[key] == weight


@given(word=latin_words, digest=digests)
@settings(max_examples=400, deadline=None)
def test_a_keyboard_replacement_is_a_layout_neighbour_in_the_same_case(word, digest):
    op = decide(word, digest, KEYBOARD_REPLACE)
    if type(op) is Skipped:  # a word of digits: nothing to replace, and no other kind to draw
        assert all(ch.isdigit() for ch in word) and op.reason == "nothing_applies"
        return
    assert op.op == "replace"
    if op.rule == "shift":  # Shift held too long: the letter after a capital, capitalised
        assert op.position == 1 and word[0].isupper() and op.new_char == op.original_char.upper()
    else:
        assert op.rule == "qwerty"
        assert is_neighbour(op.original_char, op.new_char)
        assert op.original_char.isupper() == op.new_char.isupper()
        assert op.keys == f"{op.original_char.lower()}->{op.new_char.lower()}"
    assert [c for c in op.perturbed if c.isdigit()] == [c for c in word if c.isdigit()]


@given(word=latin_words, digest=digests)
@settings(max_examples=400, deadline=None)
def test_a_keyboard_insertion_repeats_or_neighbours_an_adjacent_letter(word, digest):
    op = decide(word, digest, KEYBOARD_INSERT)
    assume(type(op) is not Skipped)
    assert op.op == "insert" and op.rule == "qwerty"
    s, new = op.position, op.new_char
    adjacent = [c for c in (word[s - 1 : s], word[s : s + 1]) if c.isalpha()]
    assert any(new.lower() == a.lower() or is_neighbour(a, new) for a in adjacent)
    # the stray key is typed in the case of the letter after it (the last letter at the end)
    after = word[s : s + 1] if word[s : s + 1].isalpha() else word[s - 1 : s]
    assert new.isupper() == after.isupper()
    assert op.perturbed == word[:s] + new + word[s:]


def test_keyboard_replacements_cover_the_layout_with_the_2_to_1_weights():
    counts: dict[str, int] = {}
    for k in range(6000):
        op = decide("s", occurrence_digest(5, "b", str(k), "s", "q", 0), KEYBOARD_REPLACE)
        counts[op.new_char] = counts.get(op.new_char, 0) + 1
    assert set(counts) == {"a", "d", "w", "e", "z", "x"}
    horizontal = (counts["a"] + counts["d"]) / 2
    vertical = (counts["w"] + counts["e"] + counts["z"] + counts["x"]) / 4
    assert 1.7 < horizontal / vertical < 2.3  # expected 2 (6000 draws: sd of the ratio ~0.1)


# ----------------------------------------------------------------------------- romaji / IME


def test_the_ime_reads_romaji_as_kana():
    assert ime_read("kitte") == "きって"
    assert ime_read("shinbun") == "しんぶん"
    assert ime_read("kyouto") == "きょうと"
    assert ime_read("ja") == ime_read("jya") == ime_read("zya") == "じゃ"
    assert ime_read("kz") is None and ime_read("q") is None


@given(word=kana_words, digest=digests)
@settings(max_examples=400, deadline=None)
def test_a_kana_replacement_is_one_neighbouring_key_re_read_by_the_ime(word, digest):
    op = decide(word, digest, KEYBOARD_REPLACE)
    assume(type(op) is not Skipped and op.op == "replace")
    assert op.rule == "romaji"
    before, after = op.keys.split("->")
    assert before == KANA_TO_ROMAJI[to_hiragana(op.original_char)]
    assert len(before) == len(after)
    diff = [(a, b) for a, b in zip(before, after, strict=True) if a != b]
    assert len(diff) == 1 and is_neighbour(*diff[0])
    assert ime_read(after) == to_hiragana(op.new_char) != to_hiragana(op.original_char)
    # katakana stays katakana, hiragana hiragana
    assert all(is_kana(c) for c in op.new_char)
    assert char_class(op.new_char[0]) == char_class(op.original_char[0])
    s = op.position
    assert op.perturbed == word[:s] + op.new_char + word[s + len(op.original_char) :]


def test_kana_slips_follow_the_examples_of_the_design():
    seen = {}
    for k in range(400):
        op = decide("か", occurrence_digest(1, "b", str(k), "か", "q", 0), KEYBOARD_REPLACE)
        seen[op.new_char] = op.keys
    assert seen["じゃ"] == "ka->ja" and seen["ま"] == "ka->ma"  # k -> j (horizontal), m (below)
    op = next(
        o
        for k in range(200)
        if (o := decide("かた", occurrence_digest(1, "b", str(k), "w", "q", 0), KEYBOARD_INSERT))
        and o.new_char == "っ"
    )
    assert op.perturbed == "かった" and op.keys == "kata->katta"


@given(word=kana_words, digest=digests)
@settings(max_examples=300, deadline=None)
def test_a_kana_insertion_is_one_stray_key_the_ime_reads_as_one_more_kana(word, digest):
    op = decide(word, digest, KEYBOARD_INSERT)
    assume(type(op) is not Skipped and op.op == "insert" and op.rule == "romaji")
    before, after = op.keys.split("->")
    assert len(after) == len(before) + 1
    assert ime_read(after) is not None
    assert op.perturbed == word[: op.position] + op.new_char + word[op.position :]
    assert len(op.new_char) == 1 and is_kana(op.new_char)


def test_kanji_words_are_slipped_on_their_reading_never_replaced_by_a_random_kanji():
    lexicon = ImeLexicon()
    made = set()
    for k in range(200):
        digest = occurrence_digest(2, "b", str(k), "w", "q", 0)
        op = decide("時代", digest, KEYBOARD_ALL, homophones=lexicon)
        assert op.rule == "ime" and op.reading == "ジダイ" and op.original_char == "時代"
        before, after = op.keys.split("->")
        assert before == "jidai" and read_keys(after) is not None
        shown = op.perturbed
        kana = read_keys(after)
        # the IME's first candidate for the slipped reading, or the kana left as typed
        assert shown == kana or (lexicon.first_candidate(kana, "名詞-普通名詞", "*") == shown)
        made.add(shown)
        op = decide("1年", digest, KEYBOARD_ALL, homophones=lexicon)
        if op is not None and type(op) is not Skipped:
            assert "1" in op.perturbed and op.original_char != "1"
    assert "偉大" in made or "いだい" in made  # jidai -> idai: a dropped key
    assert any(all(is_kana(c) for c in m) for m in made)


@given(word=mixed_words, digest=digests)
@settings(max_examples=400, deadline=None)
def test_the_keyboard_model_never_touches_a_digit(word, digest):
    op = decide(word, digest, KEYBOARD_ALL)
    if op is None or type(op) is Skipped:
        return
    assert [c for c in op.perturbed if c.isdigit()] == [c for c in word if c.isdigit()]


# ----------------------------------------------------------------------------- transpositions


@given(word=st.one_of(latin_words, kana_words, mixed_words), digest=digests)
@settings(max_examples=400, deadline=None)
def test_a_transposition_swaps_two_adjacent_different_letters_or_kana(word, digest):
    op = decide(word, digest, Probabilities(0, 0, 0, 1))
    assert op is not None
    if type(op) is Skipped:
        assert op.reason == "no_adjacent_pair"
        return
    i = op.position
    assert op.original_char == word[i : i + 2] and op.new_char == word[i + 1] + word[i]
    assert word[i] != word[i + 1]
    assert op.perturbed == word[:i] + word[i + 1] + word[i] + word[i + 2 :]
    pair = word[i : i + 2]
    assert all(c.isascii() and c.isalpha() for c in pair) or all(is_kana(c) for c in pair)


def test_a_word_with_no_adjacent_pair_is_left_as_is():
    for word in ("の", "日本", "aa", "12", "ーー"):
        op = decide(word, occurrence_digest(1, "b", "e", word, "q", 0), Probabilities(0, 0, 0, 1))
        assert op == Skipped("transpose", "no_adjacent_pair")


# ----------------------------------------------------------------------------- conversions


@pytest.mark.parametrize(
    "word", ["以外", "機会", "関心", "事", "人", "日本", "意味", "時間", "世界"]
)
def test_a_conversion_keeps_the_unidic_reading_and_changes_the_text(word):
    analyser = ReadingAnalyser()
    made = set()
    for k in range(40):
        op = decide(
            word,
            occurrence_digest(3, "b", str(k), word, "q", 0),
            Probabilities(0, 0, 0, 0, 1),
            homophones=homophones(),
        )
        if type(op) is Skipped:
            assert op.reason == "no_homophone"
            continue
        assert op.op == "conversion" and op.rule == "homophone"
        assert op.perturbed != word and op.original_char == word
        assert op.reading == analyser.reading(word) == analyser.reading(op.perturbed)
        made.add(op.perturbed)
    if word == "以外":
        assert "意外" in made
    if word == "機会":
        assert "機械" in made


def test_kana_words_english_and_words_without_homophones_are_counted_not_changed():
    probs = Probabilities(0, 0, 0, 0, 1)
    digest = occurrence_digest(3, "b", "e", "w", "q", 0)
    assert decide("ます", digest, probs, homophones=homophones()).reason == "no_homophone"
    assert decide("the", digest, probs).reason == "not_japanese"
    assert decide("1人", digest, probs, homophones=homophones()).reason == "no_homophone"


def test_a_spelling_variant_of_the_same_lemma_is_not_a_homophone():
    _, candidates = homophones().lookup("子供")
    lemmas = {t[2] for c in candidates for t in homophones().analyser.tokens(c)}
    assert "子供" not in lemmas


# ----------------------------------------------------------------------------- validation


def test_the_probabilities_sum_at_most_one_and_the_error_names_the_keys():
    cfg = {"replace_prob": 0.3, "insert_prob": 0.3, "delete_prob": 0.3, "transpose_prob": 0.2}
    with pytest.raises(InputError, match=r"perturb\.transpose_prob must be at most 1"):
        validate_probabilities(cfg, source="params.yaml")
    with pytest.raises(InputError, match=r"perturb\.conversion_prob must be in"):
        validate_probabilities({**cfg, "transpose_prob": 0, "conversion_prob": 1.5})
    with pytest.raises(
        InputError,
        match=r"perturb\.model: expected a typo model, one of uniform, keyboard, natural",
    ):
        validate_probabilities({**cfg, "transpose_prob": 0, "model": "azerty"})
    old = validate_probabilities({"replace_prob": 0.2, "insert_prob": 0.2, "delete_prob": 0.2})
    assert (old.transpose, old.conversion, old.model) == (0.0, 0.0, "uniform")


def test_the_params_schema_checks_the_new_keys(tmp_path):
    from evalpipe.params import load_params

    base = "perturb:\n  replace_prob: 0.2\n  insert_prob: 0.2\n  delete_prob: 0.2\n"
    for extra, message in (
        ("  model: dvorak\n", "perturb.model"),
        ("  transpose_prob: 0.5\n", "must be at most 1"),
        ("  conversion_prob: -0.1\n", "perturb.conversion_prob"),
    ):
        path = tmp_path / "params.yaml"
        path.write_text(base + extra, encoding="utf-8")
        with pytest.raises(InputError, match=message):
            load_params(path)


# ----------------------------------------------------------------------------- common random numbers


def _old_regions(r: float, i: float, d: float) -> tuple[int, int, int, int]:
    """The plain three-operation layout (replace, insert, delete), written out: the general layout must equal it."""

    def w(p: float) -> int:
        return min(_SCALE, max(0, round(p * _SCALE)))

    rr, m, dd = w(r), w(i), w(d)
    if rr + dd > _SCALE:
        dd = _SCALE - rr
    m = min(m, _SCALE - rr - dd)
    start = min(max(_SCALE // 2 - m // 2, rr), _SCALE - dd - m)
    return (rr, start, start + m, _SCALE - dd)


probability = st.floats(0, 1, allow_nan=False)


@given(r=probability, i=probability, d=probability)
@settings(max_examples=500, deadline=None)
def test_without_the_new_operations_the_draw_layout_is_the_old_one(r, i, d):
    assume(r + i + d <= 1)
    replace_end, insert_start, insert_end, delete_start = _old_regions(r, i, d)
    old = [
        (0, replace_end, "replace"),
        (insert_start, insert_end, "insert"),
        (delete_start, _SCALE, "delete"),
    ]
    assert Probabilities(r, i, d).intervals == tuple(o for o in old if o[1] > o[0])


small = st.floats(0, 1 / 6, allow_nan=False)


@given(
    probs=st.tuples(small, small, small, small, small),
    kind=st.sampled_from(OPS),
    new=small,
    seed=st.integers(0, 2**31),
)
@settings(max_examples=60, deadline=None)
def test_moving_one_probability_keeps_the_other_kinds_decisions(probs, kind, new, seed):
    before = Probabilities(*probs, model="keyboard")
    moved = dict(zip(OPS, probs, strict=True))
    moved[kind] = new
    after = Probabilities(*(moved[k] for k in OPS), model="keyboard")
    for k in range(300):
        digest = occurrence_digest(seed, "b", str(k), "word", "q", 0)
        a = decide("かたち", digest, before, homophones=None)
        b = decide("かたち", digest, after, homophones=None)
        kind_a = None if a is None else a.op
        kind_b = None if b is None else b.op
        if getattr(a, "drawn", None) or getattr(b, "drawn", None):
            continue  # a kind that could not apply: the one drawn instead follows the mix
        if kind_a != kind and kind_b != kind:
            assert a == b  # untouched kinds: the same decision, position and character
        if new >= probs[OPS.index(kind)] and kind_a == kind:
            assert b == a  # raising a probability only adds decisions of that kind


def test_every_layout_within_the_sum_is_disjoint_and_exact():
    import random

    rng = random.Random(0)
    for _ in range(2000):
        cut = sorted(rng.random() for _ in range(5))
        raw = [cut[0], *(b - a for a, b in itertools.pairwise(cut))]
        rng.shuffle(raw)
        probs = Probabilities(*raw)
        widths = probs.widths()
        end = 0
        for start, stop, op in probs.intervals:
            assert start >= end and stop - start == widths[op] > 0
            end = stop
        assert end <= _SCALE


# ----------------------------------------------------------------------------- whole frames


def _sample(name: str):
    from evalpipe.benchmarks import get_spec, load_benchmark

    return load_benchmark(get_spec(name), source="sample")[0]


@functools.cache
def _words(language: str):
    from evalpipe.words import word_list

    min_length = 2 if language == "english" else 1
    return word_list(language, "wordfreq", raw_dir="/nonexistent", top_n=200, min_length=min_length)


def _digest(table) -> str:
    import hashlib
    import json

    keys = ["field", "occurrence", "start", "end", "original", "perturbed", "op", "position",
            "original_char", "new_char"]  # fmt: skip
    perturbations = [
        [{k: p[k] for k in keys} for p in row] for row in table.column("perturbations").to_pylist()
    ]
    blob = json.dumps(
        [
            table.column("fields").to_pylist(),
            perturbations,
            table.column("seed").to_pylist(),
            table.column("variant").to_pylist(),
        ],
        ensure_ascii=False,
    ).encode()
    return hashlib.sha256(blob).hexdigest()[:16]


# Digests of the rows made by the code before the typo models existed (commit 684aa47), on the
# bundled samples with wordfreq's top 200 words: the default model must reproduce them exactly.
BEFORE_TYPO_MODELS = {
    "gsm8k": (153, "868286b998e4bb30"),
    "jcommonsenseqa": (84, "8e8337625a8ec97b"),
    "jsquad": (248, "1aa3b970b59c8d77"),
}


@pytest.mark.parametrize("name", sorted(BEFORE_TYPO_MODELS))
def test_the_default_model_reproduces_the_rows_made_before_typo_models(name):
    from evalpipe.perturb import perturb_frame

    bench = _sample(name)
    language = str(bench["language"].iloc[0])
    probs = validate_probabilities({"replace_prob": 0.2, "insert_prob": 0.2, "delete_prob": 0.2})
    result = perturb_frame(bench, _words(language), probabilities=probs, seed=42)
    assert (result.table.num_rows, _digest(result.table)) == BEFORE_TYPO_MODELS[name]
    assert result.summary["operations_by_rule"]["replace"] == {
        "uniform": result.summary["operations"]["replace"]
    }


def test_a_frame_records_each_operation_and_the_summary_counts_kinds_and_rules():
    from evalpipe.perturb import perturb_frame

    bench = _sample("lawqa")  # statute text: kanji words with homophones (者, 使用)
    probs = Probabilities(0.15, 0.1, 0.15, 0.15, 0.15, model="keyboard")
    result = perturb_frame(bench, _words("japanese"), probabilities=probs, seed=7)
    s = result.summary
    records = [p for row in result.table.column("perturbations").to_pylist() for p in row]
    by_kind: dict[str, int] = {}
    by_rule: dict[str, dict[str, int]] = {}
    for p in records:
        by_kind[p["op"]] = by_kind.get(p["op"], 0) + 1
        by_rule.setdefault(p["op"], {})
        by_rule[p["op"]][p["rule"]] = by_rule[p["op"]].get(p["rule"], 0) + 1
        if p["rule"] in ("qwerty", "romaji", "ime"):
            assert p["keys"] and "->" in p["keys"]
        if p["op"] == "conversion" or p["rule"] == "ime":
            assert p["reading"] and p["perturbed"] != p["original"]
        else:
            assert p["reading"] is None
        assert p["rule"] != "uniform"  # no random kanji: kanji words slip on their reading
    assert {k: v for k, v in s["operations"].items() if v} == by_kind
    assert {k: v for k, v in s["operations_by_rule"].items() if v} == by_rule
    assert set(by_kind) == set(OPS)  # every kind happens on a real sample
    assert s["model"] == "keyboard" and s["conversion_prob"] == 0.15
    assert s["keyboard_fallback"].get("kanji", 0) == 0
    # conversions drawn on words without a homophone became another kind, counted
    assert sum(n for k, n in s["redrawn"].items() if k.startswith("conversion->")) > 0
    assert s["perturbed_occurrences"] == sum(s["drawn"].values())
