"""Character operations, script classes, probabilities and hashed seeds."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalpipe.errors import InputError
from evalpipe.perturb import (
    INVENTORIES,
    Probabilities,
    char_class,
    decide,
    occurrence_digest,
    row_seed,
    validate_probabilities,
)
from evalpipe.perturb.kanji import KANJI_INVENTORY

# Words mixing every script class with characters that have none (punctuation, accents, emoji,
# combining marks, full-width forms).
ALPHABET = "あいうゃんアイウャンー漢字語々Aaz0Zｱｶﾝ９ＡＢａｂ-'’é😀\u0301・"
words = st.text(alphabet=ALPHABET, min_size=1, max_size=8)
digests = st.binary(min_size=32, max_size=32)
ALWAYS = Probabilities(1 / 3, 1 / 3, 1 / 3)


def _one_edit(a: str, b: str) -> bool:
    """True when b is a with exactly one character replaced, inserted or deleted."""
    if len(a) == len(b):
        return sum(x != y for x, y in zip(a, b, strict=True)) == 1
    if len(b) == len(a) + 1:
        a, b = b, a
    if len(a) != len(b) + 1:
        return False
    return any(a[:i] + a[i + 1 :] == b for i in range(len(a)))


@given(word=words, digest=digests)
@settings(max_examples=400, deadline=None)
def test_an_operation_keeps_the_script_of_the_character_it_touches(word: str, digest: bytes):
    op = decide(word, digest, ALWAYS)
    assert op is not None  # total probability 1: every occurrence gets a typo
    n = len(word)
    if op.op == "replace":
        assert op.original_char == word[op.position]
        assert op.new_char != op.original_char
        assert char_class(op.new_char) == char_class(op.original_char) is not None
        assert op.perturbed == word[: op.position] + op.new_char + word[op.position + 1 :]
    elif op.op == "insert":
        assert 0 <= op.position <= n and op.original_char is None
        assert char_class(op.new_char) == char_class(word[min(op.position, n - 1)]) is not None
        assert op.perturbed == word[: op.position] + op.new_char + word[op.position :]
    else:
        assert op.new_char is None and op.original_char == word[op.position]
        assert op.perturbed == word[: op.position] + word[op.position + 1 :]


@given(word=words, digest=digests)
@settings(max_examples=300, deadline=None)
def test_an_occurrence_gets_exactly_one_edit_or_none(word: str, digest: bytes):
    op = decide(word, digest, Probabilities(0.3, 0.2, 0.1))
    if op is not None:
        assert _one_edit(word, op.perturbed)


def test_kanji_is_replaced_by_kanji_from_the_fixed_inventory():
    seen = set()
    for k in range(200):
        op = decide("漢字", occurrence_digest(1, "b", "e", "漢字", "f", k), Probabilities(1, 0, 0))
        assert op.new_char in KANJI_INVENTORY and op.new_char != op.original_char
        seen.add(op.new_char)
    assert len(seen) > 100  # drawn across the inventory, not from a handful


def test_latin_case_is_kept_in_mixed_case_words():
    for k in range(300):
        op = decide("McDonald", occurrence_digest(3, "b", "e", "w", "f", k), Probabilities(1, 0, 0))
        assert op.original_char.isupper() == op.new_char.isupper()
        assert op.new_char.isascii() and op.new_char.isalpha()


def test_katakana_long_vowel_mark_and_small_kana_stay_in_their_script():
    assert char_class("ー") == "katakana"
    assert char_class("ゃ") == "hiragana"
    assert char_class("ャ") == "katakana"
    assert char_class("々") == "kanji"
    assert char_class("Ｑ") == "fullwidth_upper"
    for ch in ("é", "😀", "\u0301", "-", "'", "・"):
        assert char_class(ch) is None


def test_inventories_hold_only_their_own_class():
    for name, inventory in INVENTORIES.items():
        assert len(set(inventory)) == len(inventory)
        assert all(char_class(ch) == name for ch in inventory), name
    assert len(KANJI_INVENTORY) == 1998


def test_a_word_without_classed_characters_is_deleted_from():
    op = decide("・・", occurrence_digest(1, "b", "e", "w", "f", 0), Probabilities(1, 0, 0))
    assert op.op == "delete" and op.perturbed == "・"


@pytest.mark.parametrize(
    ("probs", "expected"),
    [
        (Probabilities(0.2, 0.2, 0.2), {"replace": 1 / 3, "insert": 1 / 3, "delete": 1 / 3}),
        (Probabilities(0.3, 0.0, 0.1), {"replace": 0.75, "insert": 0.0, "delete": 0.25}),
        (Probabilities(0.0, 0.05, 0.0), {"replace": 0.0, "insert": 1.0, "delete": 0.0}),
    ],
)
def test_fraction_perturbed_and_op_mix_follow_the_probabilities(probs, expected):
    n = 20_000
    counts = {"replace": 0, "insert": 0, "delete": 0}
    fired = 0
    for k in range(n):
        op = decide("word", occurrence_digest(42, "stat", str(k), "word", "q", k % 3), probs)
        if op is not None:
            fired += 1
            counts[op.op] += 1
    p = probs.total
    assert abs(fired - n * p) <= 4.5 * math.sqrt(n * p * (1 - p)) + 1
    for name, share in expected.items():
        if share in (0.0, 1.0):
            assert counts[name] == share * fired  # zero-probability ops never happen
        else:
            sd = math.sqrt(fired * share * (1 - share))
            assert abs(counts[name] - fired * share) <= 4.5 * sd


def test_zero_probabilities_never_perturb():
    none = Probabilities(0, 0, 0)
    assert all(
        decide("the", occurrence_digest(1, "b", str(k), "the", "q", 0), none) is None
        for k in range(500)
    )


def test_seeds_are_hashes_of_the_full_key_without_collisions():
    # the upstream scheme base*10000 + example*100 + word collided from word index 100 on
    digests = {
        occurrence_digest(42, "gsm8k", str(e), f"w{w}", "question", 0)
        for e in range(200)
        for w in range(150)
    }
    assert len(digests) == 200 * 150
    seeds = {row_seed(42, "gsm8k", str(e), f"w{w}") for e in range(200) for w in range(150)}
    assert len(seeds) == 200 * 150
    assert all(0 <= s < 2**63 for s in seeds)
    # length-prefixed parts: moving a character between parts changes the key
    assert occurrence_digest(1, "ab", "c", "w", "f", 0) != occurrence_digest(
        1, "a", "bc", "w", "f", 0
    )


def test_the_same_key_always_gives_the_same_operation():
    d = occurrence_digest(7, "mmlu", "abstract_algebra/3", "the", "question", 2)
    assert decide("The", d, ALWAYS) == decide("The", d, ALWAYS)
    assert d == occurrence_digest(7, "mmlu", "abstract_algebra/3", "the", "question", 2)


@pytest.mark.parametrize(
    ("cfg", "message"),
    [
        ({"replace_prob": 1.5, "insert_prob": 0, "delete_prob": 0}, "perturb.replace_prob"),
        ({"replace_prob": -0.1, "insert_prob": 0, "delete_prob": 0}, "perturb.replace_prob"),
        ({"replace_prob": 0.5, "insert_prob": 0.4, "delete_prob": 0.2}, "at most 1"),
        ({"replace_prob": 0.1, "insert_prob": "a lot", "delete_prob": 0}, "perturb.insert_prob"),
        ({"replace_prob": 0.1, "insert_prob": 0.1}, "perturb.delete_prob"),
        ({"replace_prob": 0.1, "insert_prob": True, "delete_prob": 0}, "perturb.insert_prob"),
        ({"replace_prob": float("nan"), "insert_prob": 0, "delete_prob": 0}, "replace_prob"),
    ],
)
def test_bad_probabilities_name_params_yaml_and_the_key(cfg, message):
    with pytest.raises(InputError) as err:
        validate_probabilities(cfg)
    assert "params.yaml" in str(err.value) and message in str(err.value)


def test_probabilities_summing_to_exactly_one_are_accepted():
    probs = validate_probabilities({"replace_prob": 0.5, "insert_prob": 0.3, "delete_prob": 0.2})
    assert probs.total == pytest.approx(1.0)


# --- common random numbers: a sweep point changes only the operations of the swept kind ---


def _ops_over(probs: Probabilities, n: int = 20_000) -> list[tuple[str, str] | None]:
    out = []
    for k in range(n):
        op = decide("word", occurrence_digest(7, "crn", str(k), "word", "q", 0), probs)
        out.append(None if op is None else (op.op, op.perturbed))
    return out


@pytest.mark.parametrize(
    ("before", "after", "swept"),
    [
        (Probabilities(0.2, 0.2, 0.2), Probabilities(0.2, 0.2, 0.4), "delete"),
        (Probabilities(0.2, 0.2, 0.2), Probabilities(0.4, 0.2, 0.2), "replace"),
        (Probabilities(0.2, 0.2, 0.2), Probabilities(0.2, 0.6, 0.2), "insert"),
        (Probabilities(0.05, 0.0, 0.3), Probabilities(0.05, 0.0, 0.95), "delete"),
        (Probabilities(0.7, 0.1, 0.0), Probabilities(0.7, 0.3, 0.0), "insert"),  # insert clamped
    ],
)
def test_raising_one_probability_only_adds_operations_of_that_kind(before, after, swept):
    old, new = _ops_over(before), _ops_over(after)
    added = 0
    for a, b in zip(old, new, strict=True):
        if a is not None:
            assert b == a  # same operation, same position, same character
        elif b is not None:
            assert b[0] == swept
            added += 1
    assert added > 0


def test_operations_and_rates_stay_exact_when_the_insert_interval_must_slide():
    # r > (1 - i) / 2: the insert interval slides; still disjoint, still exact rates
    probs = Probabilities(0.6, 0.3, 0.1)
    r_end, i_start, i_end, d_start = probs.regions
    assert r_end <= i_start <= i_end <= d_start
    assert (r_end, i_end - i_start, 2**64 - d_start) == (
        round(0.6 * 2**64),
        round(0.3 * 2**64),
        round(0.1 * 2**64),
    )
    counts = dict.fromkeys(("replace", "insert", "delete", None), 0)
    n = 20_000
    for item in _ops_over(probs, n):
        counts[None if item is None else item[0]] += 1
    for name, p in (("replace", 0.6), ("insert", 0.3), ("delete", 0.1)):
        assert abs(counts[name] - n * p) <= 4.5 * math.sqrt(n * p * (1 - p))
    assert counts[None] == 0


def test_position_and_character_draws_do_not_depend_on_the_probabilities():
    # the same occurrence, replaced under two very different settings, gets the same typo
    for k in range(300):
        digest = occurrence_digest(5, "b", str(k), "house", "q", 0)
        a = decide("house", digest, Probabilities(1, 0, 0))
        b = decide("house", digest, Probabilities(0.999, 0.0005, 0.0005))
        if b is not None and b.op == "replace":
            assert a == b
