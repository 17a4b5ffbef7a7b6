"""perturb.draws: K independent typo draws per (example, word), keyed by a `draw` column, each
draw keeping the common random numbers of a single draw."""

from __future__ import annotations

import functools

import pytest

from evalpipe.benchmarks import get_spec, load_benchmark
from evalpipe.errors import InputError
from evalpipe.perturb import Probabilities, perturb_frame
from evalpipe.words import word_list

PROBS = Probabilities(0.15, 0.15, 0.15, 0.15, model="keyboard")


@functools.cache
def _inputs():
    bench = load_benchmark(get_spec("gsm8k"), source="sample")[0]
    words = word_list("english", "wordfreq", raw_dir="/nonexistent", top_n=100, min_length=2)
    return bench, words


def _rows(probs: Probabilities, draws: int) -> list[dict]:
    bench, words = _inputs()
    table = perturb_frame(bench, words, probabilities=probs, seed=3, draws=draws).table
    return table.to_pylist()


def _key(row: dict) -> tuple:
    return (row["example_id"], row["word_rank"], row["draw"])


def test_the_first_draw_is_the_single_draw_and_the_others_are_independent():
    one = _rows(PROBS, 1)
    three = _rows(PROBS, 3)
    assert {row["draw"] for row in one} == {0}
    assert {row["draw"] for row in three} == {0, 1, 2}
    assert [r for r in three if r["draw"] == 0] == one  # draw 0: the rows of a single draw
    keys = [_key(r) for r in three]
    assert len(set(keys)) == len(keys)  # (example, word rank, draw) is the row key
    originals = [r for r in three if r["variant"] == "original"]
    assert all(r["draw"] == 0 for r in originals)
    by_draw = {d: {(r["example_id"], r["word_rank"]): r["fields"] for r in three if r["draw"] == d}
               for d in range(3)}  # fmt: skip
    shared = set(by_draw[1]) & set(by_draw[2]) - {(r["example_id"], 0) for r in originals}
    assert shared and sum(by_draw[1][k] != by_draw[2][k] for k in shared) > len(shared) / 2
    seeds = {(r["example_id"], r["word_rank"], r["draw"]): r["seed"] for r in three}
    assert len(set(seeds.values())) == len(seeds)


def test_each_draw_keeps_the_other_kinds_when_one_probability_moves():
    def records(rows, skip):
        return {
            (*_key(row), p["field"], p["occurrence"], p["op"], p["position"], p["new_char"])
            for row in rows
            for p in row["perturbations"]
            if p["op"] != skip
        }

    base = _rows(PROBS, 3)
    moved = _rows(Probabilities(0.15, 0.15, 0.15, 0.05, model="keyboard"), 3)
    assert records(moved, "transpose") == records(base, "transpose")


def test_draws_must_be_a_positive_integer():
    bench, words = _inputs()
    for bad in (0, -1, 1.5, True):
        with pytest.raises(InputError, match=r"perturb\.draws must be an integer >= 1"):
            perturb_frame(bench, words, probabilities=PROBS, seed=3, draws=bad)
