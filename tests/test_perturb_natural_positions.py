"""Model ``natural``: the position-in-word profile of the GitHub Typo Corpus (first letter
9.7%, middle 67.2%, last 23.2%) on English keyboard edits."""

from __future__ import annotations

import hashlib
import math

import pytest

from evalpipe.perturb.natural import POSITION_PROFILE, position_class
from evalpipe.perturb.records import Operation
from evalpipe.perturb.typo_models.keyboard import MODEL as KEYBOARD
from evalpipe.perturb.typo_models.natural import MODEL as NATURAL

# lowercase words with distinct adjacent letters and no codespell entry: every kind can edit
# every class of position, so the profile is the one sampled
WORDS = ["plumbing", "quartz", "vexing", "jockeys", "frowning", "zephyr", "blanket", "mystic"]
KINDS = ("replace", "insert", "delete", "transpose")
WIDTHS = dict.fromkeys(KINDS, 1)


def _digest(*parts: object) -> bytes:
    return hashlib.sha256(repr(parts).encode()).digest()


def _sampled(model, n: int) -> dict[str, int]:
    counts = dict.fromkeys(POSITION_PROFILE, 0)
    for i in range(n):
        word, kind = WORDS[i % len(WORDS)], KINDS[(i // len(WORDS)) % len(KINDS)]
        op = model.make(kind, word, _digest(i), WIDTHS, lexicon=None, context=None)
        assert isinstance(op, Operation) and op.rule != "dictionary"
        assert op.perturbed != word
        counts[position_class(op, word)] += 1
    return counts


def test_natural_edits_follow_the_position_profile_within_a_binomial_tolerance() -> None:
    n = 6000
    counts = _sampled(NATURAL, n)
    total = sum(POSITION_PROFILE.values())
    for cls, per_mille in POSITION_PROFILE.items():
        p = per_mille / total
        sd = math.sqrt(p * (1 - p) / n)
        assert abs(counts[cls] / n - p) < 4 * sd, (cls, counts[cls] / n, p)


def test_the_keyboard_model_keeps_its_own_profile() -> None:
    # the profile is natural's alone: the keyboard model's first letter stays rarely touched
    counts = _sampled(KEYBOARD, 2000)
    assert counts["first"] / 2000 < 0.06
    assert counts["last"] / 2000 < 0.2


@pytest.mark.parametrize(
    ("op", "word", "expected"),
    [
        (Operation("replace", 3, "d", "f", "worf", "qwerty"), "word", "last"),
        (Operation("delete", 1, "o", None, "wrd", "keyboard"), "word", "middle"),
        (Operation("transpose", 0, "wo", "ow", "owrd", "adjacent"), "word", "first"),
        (Operation("transpose", 2, "rd", "dr", "wodr", "adjacent"), "word", "last"),
        (Operation("insert", 0, None, "q", "qword", "qwerty"), "word", "first"),
        (Operation("insert", 3, None, "s", "worsd", "qwerty"), "word", "middle"),
        (Operation("insert", 4, None, "s", "words", "qwerty"), "word", "last"),
        (Operation("replace", 0, "a", "s", "s", "qwerty"), "a", "first"),
    ],
)
def test_position_classes(op: Operation, word: str, expected: str) -> None:
    assert position_class(op, word) == expected


def test_docstring_examples_hold() -> None:
    import doctest

    from evalpipe.perturb import natural

    assert doctest.testmod(natural).failed == 0
