"""Tokens of each edited word before and after its typo (tiny-random's tokenizer, a server's
/tokenize, none), and the groupings of the pairs that use them: accuracy by tokenizer split and
the harm beyond a matched control."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from evalpipe.inference.backends import word_token_counter
from evalpipe.inference.word_tokens import (
    WordTokenCounter,
    edit_token_columns,
    hf_counter,
    server_counter,
    uncounted_message,
)
from evalpipe.perturb import Probabilities, perturb_frame
from evalpipe.scoring.controls import (
    CONTROL_COLUMNS,
    SPLIT_BINS,
    control_effect,
    token_split,
    with_control,
)
from evalpipe.scoring.intervals import paired_score
from tests.inference_servers import CannedServer, canned_tokens

WORDS = pd.DataFrame({"rank": [1, 2], "word": ["the", "questionnaire"], "lemma": None, "pos": None})


def perturbed_rows(text: str) -> pd.DataFrame:
    bench = pd.DataFrame(
        {
            "benchmark": "demo", "example_id": ["1"], "subtask": None, "language": "english",
            "task_type": "mc", "fields": [json.dumps({"q": text})], "perturbable": [["q"]],
            "choices": [None], "answer": ["A"], "answers": [["A"]], "labels": [None],
        }
    )  # fmt: skip
    probs = Probabilities(0.4, 0.3, 0.3)
    return perturb_frame(bench, WORDS, probabilities=probs, seed=3).table.to_pandas()


@pytest.fixture(scope="module")
def tiny_tokenizer(tiny_model: Path):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(tiny_model))


def test_tiny_random_counts_a_word_with_its_leading_space_before_and_after_the_typo(
    tiny_model: Path, tiny_tokenizer
):
    rows = perturbed_rows("Fill in the questionnaire and the form.")
    counter = word_token_counter(
        {"name": "tiny-random", "backend": "vllm"}, model_cache=tiny_model.parent
    )
    columns, counts = edit_token_columns(rows, counter)

    def n(text: str) -> int:
        return len(tiny_tokenizer(text, add_special_tokens=False)["input_ids"])

    assert counts["edits"] == counts["counted"] > 0 and counts["tokenizer"] == "local"
    for i, records in enumerate(rows["perturbations"]):
        if rows["variant"].iloc[i] == "original":
            assert list(columns["edit_tokens_before"][i]) == [] and columns["tokens_before"][i] == 0
            continue
        want_before = [n(" " + p["original"]) for p in records]  # every word follows a space
        want_after = [n(" " + p["perturbed"]) for p in records]
        assert columns["edit_tokens_before"][i] == want_before
        assert columns["edit_tokens_after"][i] == want_after
        assert columns["tokens_before"][i] == sum(want_before)
        assert columns["tokens_after"][i] == sum(want_after)


def test_hand_made_words_split_into_more_tokens_when_mistyped(tiny_model: Path):
    counter = hf_counter(str(tiny_model))
    before, after = counter.counts([" questionnaire", " quesionnaire"])
    assert counter.counts([" the"]) == [1]  # the most frequent word of the corpus is one token
    assert after >= before > 1


def test_without_a_tokenizer_the_columns_are_null_and_the_edits_counted_with_the_reason():
    rows = perturbed_rows("the cat and the dog")
    counter = WordTokenCounter(None, source=None, reason="tokenizer_unavailable")
    columns, counts = edit_token_columns(rows, counter)
    edits = sum(len(r) for r in rows["perturbations"])
    assert edits and counts == {
        "edits": edits,
        "counted": 0,
        "not_counted": {"tokenizer_unavailable": edits},
        "tokenizer": None,
    }
    assert all(v is None for v in columns["tokens_before"] + columns["edit_tokens_after"])
    # and the run says so in one line, rather than leaving an empty token split unexplained
    line = uncounted_message("toy", counts)
    assert line.startswith(
        f"toy: {edits} of {edits} edited words have no token counts: no tokenizer"
    )
    assert uncounted_message("toy", {"edits": 3, "counted": 3, "not_counted": {}}) is None


def test_a_server_counts_through_its_tokenize_endpoint(tmp_path: Path):
    with CannedServer(tmp_path / "log.jsonl") as server:
        counter = server_counter(server.url, "canned")
        assert counter.counts([" cat", "猫"]) == [
            len(canned_tokens(" cat", False)),
            len(canned_tokens("猫", False)),
        ]
    # the server is gone: no counts, and the reason says so
    assert counter.counts([" dog"]) == [None]
    assert counter.reason == "tokenize_unavailable"


def pairs_frame() -> pd.DataFrame:
    """Eight typo pairs of two words over four examples, token counts hand-set."""
    return pd.DataFrame(
        {
            "model": "m", "view": "b", "benchmark": ["b"] * 6 + ["c"] * 2, "language": "english",
            "example_id": ["1", "2", "3", "4", "1", "2", "9", "9"],
            "cluster": [0, 1, 2, 3, 0, 1, 4, 4], "variant": ["the"] * 4 + ["of"] * 4,
            "word_rank": [1] * 4 + [2] * 4, "draw": [0, 0, 0, 0, 0, 0, 0, 1],
            "condition": "typo",
            "tokens_before": [1, 1, 1, 2, 1, 1, 1, None],
            "tokens_after": [1, 2, 2, 6, 0, 3, 1, None],
            "correct_original": [True, True, True, True, True, False, True, True],
            "correct_perturbed": [True, False, True, False, True, False, False, True],
            "prediction_original": ["A", "A", "A", "A", "A", "B", "A", "A"],
            "prediction_perturbed": ["A", "C", "A", "B", "A", "B", "D", "A"],
        }
    )  # fmt: skip


def test_the_token_split_bins_each_pair_by_its_extra_tokens_with_a_paired_interval():
    table = token_split(pairs_frame(), level=0.95)
    pooled = table[table["scope"] == "pooled"].set_index("extra_tokens")
    assert list(pooled.index) == list(SPLIT_BINS)  # in order; extra tokens -1, 0, 1, 2, 4
    assert pooled.loc["1", "n"] == 2 and pooled.loc["1", "delta"] == -0.5
    assert pooled.loc["0", "n"] == 2 and pooled.loc["0", "delta"] == -0.5
    assert pooled["n"].sum() == 7  # the pair without counts is left out
    assert pooled.loc["2", "answer_change"] == 0.0
    assert pooled.loc["3+", "n"] == 1 and pooled.loc["<0", "n"] == 1  # 2 -> 6 and 1 -> 0
    low, high = pooled.loc["1", ["ci_low", "ci_high"]]
    assert low < -0.5 < high < 1
    by_bench = table[table["scope"] == "benchmark"]
    assert set(by_bench["benchmark"]) == {"b", "c"}


def test_harm_beyond_control_is_control_accuracy_minus_typo_accuracy_on_matched_keys():
    typo = pairs_frame()
    control = typo.loc[[0, 1, 2, 4, 5]].assign(
        condition="control", correct_perturbed=[True, True, True, False, True]
    )
    effect = control_effect(typo, control, level=0.95)
    the = effect[(effect["scope"] == "pooled") & (effect["variant"] == "the")].iloc[0]
    # "the": typo right on examples 1, 3 of 1..3; control right on all three
    assert the["harm_beyond_control"] == pytest.approx(1.0 - 2 / 3)
    assert the["control_n"] == 3 and the["control_unmatched"] == 1
    expected = paired_score([True, False, True], [True, True, True], clusters=[0, 1, 2])
    assert the["harm_ci_low"] == pytest.approx(expected.low)
    assert the["harm_ci_high"] == pytest.approx(expected.high)
    of = effect[(effect["scope"] == "pooled") & (effect["variant"] == "of")].iloc[0]
    assert of["control_unmatched"] == 2 and of["harm_beyond_control"] == pytest.approx(0.0)


def test_the_word_table_gets_the_control_columns_and_keeps_its_rows():
    typo = pairs_frame()
    control = typo.loc[[0, 1]].assign(condition="control")
    effect = control_effect(typo, control, level=0.95)
    words = pd.DataFrame(
        {"model": "m", "language": "english", "scope": ["pooled", "pooled", "b"],
         "rank": [1, 2, 1], "variant": ["the", "of", "the"], "delta": [-0.5, 0.0, -0.5]}
    )  # fmt: skip
    table = with_control(words, effect)
    assert len(table) == 3 and set(CONTROL_COLUMNS) <= set(table.columns)
    assert table.loc[1, "control_n"] == 0 and np.isnan(table.loc[1, "harm_beyond_control"])
