"""The matched control of the words design on hand-made examples: the words it picks (same
example, never the target, matched on class, band and length), as many edits as the target,
unmatched targets counted, and the default perturb stage untouched."""

from __future__ import annotations

import json

import pandas as pd
import pyarrow as pa
import pytest

from evalpipe.perturb import Probabilities, Tokenizer, perturb_frame
from evalpipe.perturb.control import (
    CONTROL,
    FUNCTION_WORDS_EN,
    Candidate,
    add_controls,
    order_candidates,
    word_features,
    zipf_band,
)
from evalpipe.perturb.eligibility import WORDS_DESIGN_RULES, Eligibility

ALWAYS = Probabilities(0.4, 0.3, 0.3)
EN_WORDS = pd.DataFrame({"rank": [1, 2], "word": ["the", "house"], "lemma": None, "pos": None})


def bench(texts: list[str], *, language: str = "english", **extra) -> pd.DataFrame:
    n = len(texts)
    frame = pd.DataFrame(
        {
            "benchmark": "demo",
            "example_id": [str(i) for i in range(n)],
            "subtask": None,
            "language": language,
            "task_type": "mc",
            "fields": [json.dumps({"q": t}, ensure_ascii=False) for t in texts],
            "perturbable": [["q"]] * n,
            "choices": [None] * n,
            "answer": ["A"] * n,
            "answers": [["A"]] * n,
            "labels": [None] * n,
        }
    )
    for key, values in extra.items():
        frame[key] = values
    return frame


def controls(frame: pd.DataFrame, words=EN_WORDS, *, seed: int = 7, **kw):
    result = perturb_frame(frame, words, probabilities=ALWAYS, seed=seed, **kw)
    table, summary = add_controls(result.table, frame, words, probabilities=ALWAYS, seed=seed, **kw)
    return result.table.to_pandas(), table.to_pandas(), summary["control"]


def edited_words(row) -> list[str]:
    return [p["original"] for p in row["perturbations"]]


def test_a_function_word_is_controlled_by_a_function_word_of_its_band_never_itself():
    frame = bench(["The cat and the dog sat on a mat in the yard of the house."])
    _, table, summary = controls(frame)
    ctl = table[(table["condition"] == CONTROL) & (table["variant"] == "the")].iloc[0]
    words = edited_words(ctl)
    assert all(w.lower() != "the" for w in words)
    assert all(w.lower() in FUNCTION_WORDS_EN for w in words)
    target = word_features("the", language="english")
    assert all(abs(zipf_band(w, language="english") - target.band) <= 1 for w in words)
    assert summary["unmatched"] == 0


def test_a_content_word_is_controlled_by_a_content_word_of_the_same_length_when_there_is_one():
    # "house" (5 letters, Zipf band 5): "water" and "world" are content words of 5 letters in
    # band 5; "on", "the", "a" are function words; "hippopotamus" is long and rare.
    frame = bench(["The house on the hill has water and a hippopotamus in the world."])
    _, table, _ = controls(frame)
    ctl = table[(table["condition"] == CONTROL) & (table["variant"] == "house")].iloc[0]
    for word in edited_words(ctl):
        feats = word_features(word, language="english")
        assert feats.content and feats.length == 5 and word.lower() != "house"
        assert feats.band == word_features("house", language="english").band
    assert ctl["control_match"] == "exact"


def test_the_control_has_as_many_edits_as_its_target_row_and_its_key():
    frame = bench(["the cat the dog the bird and a fish or a frog in a pond by a tree"])
    typo, table, _ = controls(frame)
    ctl = table[(table["condition"] == CONTROL) & (table["variant"] != "original")]
    assert len(ctl)
    typo = typo[typo["variant"] != "original"].set_index(["example_id", "variant", "draw"])
    for _, row in ctl.iterrows():
        target = typo.loc[(row["example_id"], row["variant"], row["draw"])]
        assert row["n_typos"] == target["n_typos"] == len(row["perturbations"])
        assert row["word_rank"] == target["word_rank"]
        # each edit is a real change of a word of this example's text
        text = json.loads(frame["fields"].iloc[int(row["example_id"])])["q"]
        for p in row["perturbations"]:
            assert text[p["start"] : p["end"]] == p["original"] != p["perturbed"]


def test_a_target_without_any_matching_word_is_counted_not_dropped_silently():
    # "the" is the only function word: nothing of its class to control it with
    frame = bench(["the elephant", "the cat sat on a mat"])
    typo, table, summary = controls(frame)
    n_typo = int((typo["variant"] != "original").sum())
    ctl = table[(table["condition"] == CONTROL) & (table["variant"] != "original")]
    assert summary["rows"] == n_typo
    assert summary["matched"] == len(ctl)
    assert summary["unmatched"] == n_typo - len(ctl) >= 1
    assert summary["unmatched_reasons"].get("no_candidate", 0) >= 1
    assert "0" not in set(ctl["example_id"])


def test_too_few_candidate_occurrences_are_counted_as_their_own_reason():
    frame = bench(["the cat the dog the bird the fish and nothing"])
    typo, _, summary = controls(frame)
    # with every probability summing to 1 all four "the" are edited; one "and" cannot match them
    assert typo.loc[typo["variant"] == "the", "n_typos"].tolist() == [4]
    assert summary["unmatched_reasons"] == {"too_few_occurrences": 1}


def test_every_example_with_a_control_has_one_control_original_row_with_the_clean_text():
    frame = bench(["The cat and the dog sat on a mat.", "A house of the king and a queen."])
    typo, table, _ = controls(frame)
    originals = table[(table["condition"] == CONTROL) & (table["variant"] == "original")]
    with_control = set(table.loc[(table["condition"] == CONTROL), "example_id"])
    assert sorted(originals["example_id"]) == sorted(with_control)
    clean = typo[typo["variant"] == "original"].set_index("example_id")["fields"]
    for _, row in originals.iterrows():
        assert row["fields"] == clean[row["example_id"]]
    assert (table.loc[table["condition"] == "typo"].shape[0]) == len(typo)


def test_the_eligibility_rules_and_protected_spans_keep_their_words_out_of_the_control():
    text = "the answer is Paris and the city of Paris is in France of course"
    frame = bench([text], protected=[["Paris"]], answers=[["France"]], labels=[None])
    rules = Eligibility(frozenset(WORDS_DESIGN_RULES))
    _, table, _ = controls(frame, eligibility=rules)
    for _, row in table[table["condition"] == CONTROL].iterrows():
        assert not {"Paris", "France"} & set(edited_words(row))


def test_matching_prefers_the_same_band_then_the_nearest_length_and_skips_other_classes():
    target = word_features("house", language="english")

    def cand(word: str, start: int) -> Candidate:
        return Candidate("q", 0, start, start + len(word), word,
                         word_features(word, language="english"))  # fmt: skip

    ranked = order_candidates(
        target,
        [cand("the", 0), cand("water", 4), cand("hippopotamus", 10), cand("ocean", 23)],
        key=(1, "demo", "0", "house"),
    )
    words = [occ[0].word for _, occ in ranked]
    assert "the" not in words  # a function word
    assert words[0] in ("water", "ocean") and ranked[0][0] == (0, 0)


def test_the_control_rows_are_the_same_for_the_same_seed_and_change_with_it():
    frame = bench(["The cat and the dog sat on a mat in the yard of the house by the sea."])
    _, a, _ = controls(frame, seed=1)
    _, b, _ = controls(frame, seed=1)
    _, c, _ = controls(frame, seed=2)
    assert a.equals(b)
    pick = a["condition"] == CONTROL
    assert (
        not a.loc[pick, "fields"]
        .reset_index(drop=True)
        .equals(c.loc[c["condition"] == CONTROL, "fields"].reset_index(drop=True))
    )


def test_japanese_controls_keep_the_content_or_function_class_of_the_morpheme():
    words = pd.DataFrame({"rank": [1], "word": ["の"], "lemma": ["の"], "pos": ["助詞-格助詞"]})
    frame = bench(["東京の空は青くて、海の色が美しい。"], language="japanese")
    tokenizer = Tokenizer()
    _, table, summary = controls(frame, words, tokenizer=tokenizer)
    ctl = table[(table["condition"] == CONTROL) & (table["variant"] != "original")]
    assert summary["matched"] == len(ctl) >= 1
    text = json.loads(frame["fields"].iloc[0])["q"]
    pos_of = {(t.start, t.end): t.pos for t in tokenizer.tokens(text)}
    for _, row in ctl.iterrows():
        for p in row["perturbations"]:
            assert p["original"] != "の"
            assert not pos_of[(p["start"], p["end"])].startswith(("名詞", "動詞", "形容詞"))


def test_the_table_keeps_the_typo_rows_first_with_condition_typo():
    frame = bench(["The cat and the dog sat on a mat."])
    typo, table, _ = controls(frame)
    head = table.iloc[: len(typo)]
    assert (head["condition"] == "typo").all() and head["control_match"].isna().all()
    assert list(head["fields"]) == list(typo["fields"])
    assert pa.Table.from_pandas(table).num_rows == len(table)


@pytest.mark.parametrize("word", ["the", "house", "hippopotamus"])
def test_zipf_bands_order_words_by_frequency(word):
    assert 0 < zipf_band(word, language="english") <= 7
