"""The typo models' promises checked on every record they make over the bundled sample data:
keyboard slips are layout neighbours or IME re-readings, transpositions swap adjacent characters,
conversions keep the UniDic reading, digits and protected spans hold, runs are deterministic and
one probability's move leaves the other kinds' records in place."""

from __future__ import annotations

import functools
import json
import os
from pathlib import Path

import pytest

from evalpipe.benchmarks import get_spec, load_benchmark
from evalpipe.perturb import Probabilities, occurrence_digest, perturb_frame
from evalpipe.perturb.homophones import Homophones
from evalpipe.perturb.ime import ImeLexicon, read_keys
from evalpipe.perturb.japanese import Tokenizer
from evalpipe.perturb.keyboard import (
    KANA_TO_ROMAJI,
    ime_read,
    is_kana,
    is_neighbour,
    to_hiragana,
    to_katakana,
)
from evalpipe.perturb.scripts import char_class
from evalpipe.words import word_list

SAMPLES = {
    "gsm8k": "english",
    "bbh": "english",
    "mmlu": "english",
    "imdb": "english",
    "jamp": "japanese",
    "jnli": "japanese",
    "niilc": "japanese",
    "jsquad": "japanese",
    "jcommonsenseqa": "japanese",
    "lawqa": "japanese",
}
# Every probability <= 1/6: inside the bound of ops.decide where one probability's move leaves
# every other kind's decisions in place.
MIX = dict(replace=1 / 6, insert=1 / 6, delete=1 / 6, transpose=1 / 6, conversion=1 / 6)
KEYBOARD = Probabilities(**MIX, model="keyboard")
# The same checks over the publishers' full files, when a folder laid out like
# data/raw/benchmarks holds them (e.g. EVALPIPE_PUBLISHER_FILES=data/raw/benchmarks).
PUBLISHER_FILES = os.environ.get("EVALPIPE_PUBLISHER_FILES")
FULL = ["mmlu@files", "jsquad@files"]
FALLBACK = {"kanji", "fullwidth_lower", "fullwidth_upper", "halfwidth_katakana"}


@functools.cache
def _words(language: str):
    return word_list(
        language,
        "wordfreq",
        raw_dir="/nonexistent",
        top_n=300,
        min_length=2 if language == "english" else 1,
    )


@functools.cache
def _shared():
    tokenizer = Tokenizer()
    return tokenizer, Homophones()


@functools.cache
def _bench(name: str):
    if name.endswith("@files"):
        folder = Path(PUBLISHER_FILES or "/nonexistent")
        if not (folder / name.split("@")[0]).is_dir():
            pytest.skip(f"no publisher files: set EVALPIPE_PUBLISHER_FILES to a folder with {name}")
        spec = get_spec(name.split("@")[0])
        return load_benchmark(spec, source="files", files_dir=folder)[0]
    return load_benchmark(get_spec(name), source="sample")[0]


def _language(name: str) -> str:
    return SAMPLES[name.split("@")[0]]


@functools.cache
def _run(name: str, probs: Probabilities, seed: int = 42):
    tokenizer, homophones = _shared()
    return perturb_frame(
        _bench(name),
        _words(_language(name)),
        probabilities=probs,
        seed=seed,
        tokenizer=tokenizer,
        homophones=homophones,
    )


def _romaji_slip(keys: str, original: str, new: str, *, insertion: bool) -> None:
    before, after = keys.split("->")
    assert ime_read(after) is not None
    if insertion:
        assert len(after) == len(before) + 1
        assert any(after[:k] + after[k + 1 :] == before for k in range(len(after)))
    else:
        assert before == KANA_TO_ROMAJI[to_hiragana(original)]
        diff = [(a, b) for a, b in zip(before, after, strict=True) if a != b]
        assert len(diff) == 1 and is_neighbour(*diff[0])
        assert ime_read(after) == to_hiragana(new)


LEXICON = ImeLexicon()


def _keystroke(p: dict, word: str, op: str, following: str = "") -> None:
    """An IME-level typo: the key path is one edit of the kind, the shown text is what the IME
    reads from the new keys, or its first candidate (a lexicon word), never a random kanji.
    A word ending in っ is typed with the kana after it (``following``): those keys are in the
    path, and that kana reads back unchanged."""
    before, after = p["keys"].split("->")
    kana = read_keys(after)
    assert kana is not None
    own, typed = to_hiragana(p["reading"] or word), to_hiragana(read_keys(before) or "")
    if len(typed) > len(own) and typed.startswith(own):
        extra = typed[len(own) :]
        assert own.endswith("っ") and to_hiragana(following).startswith(extra), (p, following)
        assert to_hiragana(kana).endswith(extra)
        kana = kana[: len(kana) - len(extra)]
    if op == "delete":
        assert len(after) == len(before) - 1
    elif op == "transpose":
        assert len(after) == len(before) and sorted(after) == sorted(before)
    elif op == "insert":
        assert len(after) == len(before) + 1
    shown = p["perturbed"]
    if any(char_class(c) == "kanji" for c in shown):
        assert shown in {e.surface for e in LEXICON.by_reading[to_katakana(kana)]}
    else:
        assert to_hiragana(shown) == to_hiragana(kana), (p, kana)


@pytest.mark.parametrize("name", [*sorted(SAMPLES), *FULL])
def test_every_record_on_the_samples_keeps_the_models_promises(name):
    result = _run(name, KEYBOARD)
    table = result.table.to_pylist()
    bench = _bench(name).set_index("example_id")
    analyser = _shared()[1].analyser
    kinds = set()
    for row in table:
        src = bench.loc[row["example_id"]]
        before = json.loads(src["fields"])
        after = json.loads(row["fields"])
        protected = [p for p in (src.get("protected") or []) if p] if "protected" in bench else []
        for field in before:
            text = before[field]
            ops = sorted(
                (p for p in row["perturbations"] if p["field"] == field), key=lambda p: p["start"]
            )
            rebuilt, cursor = [], 0
            for p in ops:
                rebuilt += [text[cursor : p["start"]], p["perturbed"]]
                cursor = p["end"]
            assert "".join(rebuilt) + text[cursor:] == after[field]
        for p in row["perturbations"]:
            kinds.add((p["op"], p["rule"]))
            word = before[p["field"]][p["start"] : p["end"]]
            assert word == p["original"] and p["perturbed"] != word
            for needle in protected:  # no edited occurrence overlaps a protected string
                at = before[p["field"]].find(needle)
                while at >= 0:
                    assert p["end"] <= at or at + len(needle) <= p["start"]
                    at = before[p["field"]].find(needle, at + 1)
            touched = p["original_char"] or ""
            assert not any(char_class(c) in ("digit", "fullwidth_digit") for c in touched)
            assert sum(c.isdigit() for c in p["perturbed"]) == sum(c.isdigit() for c in word)
            i, op, rule = p["position"], p["op"], p["rule"]
            if rule in ("ime", "romaji") and p["original_char"] == word and op != "replace":
                following = before[p["field"]][p["end"] : p["end"] + 2]
                _keystroke(p, word, op, following)  # a key left out / swapped on the romaji
                continue
            if rule == "ime":  # a kanji word: a slip of its reading, re-converted or left as kana
                _keystroke(p, word, op, before[p["field"]][p["end"] : p["end"] + 2])
                continue
            if rule == "shift":
                assert i == 1 and word[0].isupper() and p["new_char"] == p["original_char"].upper()
                continue
            if op == "replace":
                assert word[i : i + len(p["original_char"])] == p["original_char"]
                if rule == "qwerty":
                    assert is_neighbour(p["original_char"], p["new_char"])
                    assert p["original_char"].isupper() == p["new_char"].isupper()
                elif rule == "romaji":
                    _romaji_slip(p["keys"], p["original_char"], p["new_char"], insertion=False)
                else:  # the uniform rule, for the scripts no keyboard rule covers
                    assert rule == "uniform"
                    assert char_class(p["original_char"]) in FALLBACK
                    assert char_class(p["new_char"]) == char_class(p["original_char"])
            elif op == "insert":
                adjacent = word[max(i - 1, 0) : i + 1]
                if rule == "qwerty":
                    assert any(
                        a.isalpha()
                        and (a.lower() == p["new_char"].lower() or is_neighbour(a, p["new_char"]))
                        for a in adjacent
                    )
                elif rule == "romaji":
                    assert is_kana(p["new_char"])
                    _romaji_slip(p["keys"], "", p["new_char"], insertion=True)
                else:
                    assert char_class(p["new_char"]) in FALLBACK
            elif op == "delete":
                assert p["perturbed"] == word[:i] + word[i + 1 :]
            elif op == "transpose":
                assert p["perturbed"] == word[:i] + word[i + 1] + word[i] + word[i + 2 :]
                assert word[i] != word[i + 1]
                assert all(c.isascii() and c.isalpha() for c in word[i : i + 2]) or all(
                    is_kana(c) for c in word[i : i + 2]
                )
            else:
                assert op == "conversion" and _language(name) == "japanese"
                surfaces = {e.surface for e in LEXICON.by_reading[p["reading"]]}
                assert p["perturbed"] in surfaces and analyser is not None
    ops_seen = {op for op, _ in kinds}
    redrawn = result.summary["redrawn"]
    assert {"replace", "insert", "delete", "transpose"} <= ops_seen
    if _language(name) == "japanese":
        assert ("replace", "romaji") in kinds
        assert "conversion" in ops_seen or any(k.startswith("conversion->") for k in redrawn)
    else:
        assert ("replace", "qwerty") in kinds and "conversion" not in ops_seen
        # conversions drawn on English words became other kinds (the rate is delivered)
        assert redrawn and all(k.startswith(("conversion->", "transpose->")) for k in redrawn)
    assert result.summary["perturbed_occurrences"] == sum(result.summary["drawn"].values())


@pytest.mark.parametrize("name", ["gsm8k", "jsquad"])
def test_the_samples_give_the_same_bytes_twice_and_keep_other_kinds_when_one_moves(name):
    tokenizer, homophones = _shared()
    first = _run(name, KEYBOARD)
    again = perturb_frame(
        _bench(name),
        _words(_language(name)),
        probabilities=KEYBOARD,
        seed=42,
        tokenizer=tokenizer,
        homophones=homophones,
    )
    assert again.table.equals(first.table) and again.summary == first.summary

    def drawn_kind(row, p, probs) -> str | None:
        digest = occurrence_digest(
            42, row["benchmark"], row["example_id"], row["variant"], p["field"], p["occurrence"]
        )
        u = int.from_bytes(digest[:8], "big")
        return next((op for a, b, op in probs.intervals if a <= u < b), None)

    def records(result, skip: str, probs) -> set:
        # a kind that could not apply was replaced by one drawn in proportion to the others:
        # only occurrences whose drawn kind was made keep their decision when a probability moves
        return {
            (
                row["example_id"],
                row["variant"],
                p["field"],
                p["occurrence"],
                p["op"],
                p["position"],
                p["new_char"],
            )
            for row in result.table.to_pylist()
            for p in row["perturbations"]
            if p["op"] != skip and drawn_kind(row, p, probs) == p["op"]
        }

    for kind in ("transpose", "conversion", "replace"):
        moved = Probabilities(**{**MIX, kind: 0.05}, model="keyboard")
        assert records(_run(name, moved), kind, moved) == records(first, kind, KEYBOARD), kind
