"""perturb.draws: K typo draws per (example, word) reach the outputs, pair with their example's
single original and count once per example in the word tables, whose intervals cluster on it."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from evalpipe.errors import InputError
from evalpipe.inference.generate import OUTPUT_COLUMNS, outputs_frame, validate_perturbed
from evalpipe.inference.types import Generation
from evalpipe.scoring.intervals import paired_interval
from evalpipe.scoring.robustness import originals_of, word_table
from evalpipe.scoring.simulate import Design, Replication, simulate, word_rows
from evalpipe.scoring.word_impact import ImpactSettings
from tests.scoring_fixtures import impact_of, pairs_of

K = 3
# example -> perturbed correctness per draw (original always right); e3's third draw had no typo
DRAWS = {
    "e0": [False, False, False],
    "e1": [False, False, True],
    "e2": [True, True, True],
    "e3": [True, True],
    "e4": [True, True, True],
    "e5": [True, True, True],
}


def _scored() -> pd.DataFrame:
    rows = []
    for eid, answers in DRAWS.items():
        rows.append({"example_id": eid, "variant": "original", "word_rank": 0, "draw": 0,
                     "correct": True, "perturbed_occurrences": 0})  # fmt: skip
        for draw, right in enumerate(answers):
            rows.append({"example_id": eid, "variant": "the", "word_rank": 1, "draw": draw,
                         "correct": right, "perturbed_occurrences": 1})  # fmt: skip
    frame = pd.DataFrame(rows).assign(benchmark="mmlu", model="m", occurrences=1,
                                      parse_status="strict")  # fmt: skip
    return frame


def _perturbed(scored: pd.DataFrame) -> pd.DataFrame:
    op = {"op": "replace", "original_char": "h", "new_char": "j"}
    return scored[["benchmark", "example_id", "word_rank", "draw"]].assign(
        language="english",
        perturbations=[[] if r == 0 else [op] for r in scored["word_rank"]],
    )


def test_outputs_always_carry_draw():
    edit = [{"op": "replace", "original_char": "h", "new_char": "j"}]
    rows = pd.DataFrame({"benchmark": "mmlu", "example_id": ["1", "1", "1"],
                         "variant": ["original", "the", "the"], "word_rank": [0, 1, 1],
                         "draw": pd.array([0, 0, 1], dtype="int32"), "condition": "typo", "fields": "{}",
                         "language": "english", "n_typos": [0, 1, 1], "n_edited_chars": [0, 1, 1],
                         "op": [None, "replace", "replace"], "script": [None, "latin", "latin"],
                         "perturbations": [[], edit, edit]})  # fmt: skip
    gens = [Generation("x", "stop", 1, 1)] * 3
    out = outputs_frame(rows, ["a", "b", "b"], gens, model="m")
    assert out.columns.tolist()[:5] == ["benchmark", "example_id", "variant", "word_rank", "draw"]
    assert out["draw"].tolist() == [0, 0, 1] and str(out["draw"].dtype) == "int32"
    one = outputs_frame(rows.iloc[:2], ["a", "b"], gens[:2], model="m")
    assert one.columns.tolist() == list(OUTPUT_COLUMNS)  # draws: 1 -> the same columns, draw 0
    assert one["draw"].tolist() == [0, 0] and str(one["draw"].dtype) == "int32"


def test_a_repeated_key_in_the_perturbed_rows_is_an_input_error():
    rows = pd.DataFrame({"benchmark": "mmlu", "example_id": ["1", "1", "1"],
                         "variant": ["original", "the", "the"], "word_rank": [0, 1, 1],
                         "draw": [0, 1, 1], "condition": "typo", "fields": "{}", "language": "english",
                         "n_typos": [0, 1, 1], "n_edited_chars": [0, 1, 1], "op": None,
                         "script": None, "perturbations": [[], [], []]})  # fmt: skip
    with pytest.raises(InputError, match=r"p\.parquet, row 2: a second row for .*draw"):
        validate_perturbed(rows, source="p.parquet")
    validate_perturbed(rows.assign(draw=[0, 1, 2]), source="p.parquet")


def test_k_draws_pair_with_their_original_and_cluster_on_the_example():
    scored = _scored()
    pairs = pairs_of({"mmlu": scored})
    assert len(pairs) == sum(len(a) for a in DRAWS.values()) == 17
    assert pairs["correct_original"].all()
    for eid, answers in DRAWS.items():
        mine = pairs.loc[pairs["example_id"] == eid]
        assert mine["draw"].tolist() == list(range(len(answers)))
        assert mine["correct_perturbed"].tolist() == answers
        assert mine["cluster"].nunique() == 1  # one cluster per example, whatever the draw
    assert pairs["cluster"].nunique() == len(DRAWS)

    words = pd.DataFrame({"rank": [1], "word": ["the"], "source": ["wordfreq"]})
    table, operations, _ = impact_of({"mmlu": scored}, {"mmlu": _perturbed(scored)},
                                     {"english": words}, languages={"mmlu": "english"},
                                     settings=ImpactSettings(level=0.95, small_n=5))  # fmt: skip
    row = table.loc[table["scope"] == "pooled"].iloc[0]
    assert row["n"] == len(DRAWS)  # examples, not the 17 pairs
    assert not row["small_n"]
    assert (row["n_c2i"], row["n_i2c"]) == (5, 0)  # flips count pairs, one per draw
    assert row["delta"] == pytest.approx(-5 / 17)  # the word's effect averaged over the draws
    # The draws of one example agree more than independent pairs would: the interval widens.
    o = pairs["correct_original"].to_numpy()
    p = pairs["correct_perturbed"].to_numpy()
    low, high, _ = paired_interval(o, p)
    assert row["design_effect"] > 1.0
    assert row["ci_high"] - row["ci_low"] > high - low
    assert operations.loc[operations["scope"] == "pooled", "n"].tolist() == [len(DRAWS)]

    per_benchmark = word_table(pairs, originals=originals_of(scored), level=0.95)
    assert per_benchmark["n"].tolist() == [len(DRAWS)]
    assert per_benchmark["n_c2i"].tolist() == [5]
    assert per_benchmark["ci_low"].iloc[0] == pytest.approx(row["ci_low"])


def test_one_draw_counts_pairs_as_before():
    scored = _scored()
    first = scored.loc[scored["draw"] == 0]
    words = pd.DataFrame({"rank": [1], "word": ["the"]})
    table, _, _ = impact_of({"mmlu": first}, {"mmlu": _perturbed(first)},
                            {"english": words}, languages={"mmlu": "english"},
                            settings=ImpactSettings(level=0.95, small_n=5))  # fmt: skip
    row = table.loc[table["scope"] == "pooled"].iloc[0]
    assert row["n"] == len(pairs_of({"mmlu": first})) == len(DRAWS)
    assert row["design_effect"] == 1.0


def test_four_draws_narrow_the_word_intervals_of_the_same_study():
    design = Design(n_words=30, noise=0.5, draws=4)
    rep = simulate(design, np.random.default_rng(7))
    # The study's pairs come in runs of 4 draws per (word, example): every 4th is a one-draw study
    first = Replication(**{name: getattr(rep, name)[::4] for name in
                           ("word", "benchmark", "example", "original", "perturbed")},
                        harm=rep.harm, truth=rep.truth)  # fmt: skip
    assert (rep.example.reshape(-1, 4) == first.example[:, None]).all()
    four = word_rows(rep, n_words=design.n_words)
    one = word_rows(first, n_words=design.n_words)
    assert four["n"].tolist() == one["n"].tolist()  # the same examples per word
    wide = one["n"] >= 10
    ratio = (four["ci_high"] - four["ci_low"])[wide] / (one["ci_high"] - one["ci_low"])[wide]
    assert ratio.mean() < 0.8 and (ratio < 1).mean() > 0.9
    assert four["design_effect"][wide].median() > 1.3  # the draws of one example are clustered
