"""The pairs table (evalpipe.scoring.pairs): one row per arm row of every scored view, joined with
its example's original row, the example numbered in one place."""

from __future__ import annotations

import pandas as pd
import pytest

from evalpipe.errors import InputError
from evalpipe.scoring.names import PAIR_COLUMNS
from evalpipe.scoring.pairs import build_pairs, cluster_codes
from evalpipe.scoring.scorer import score_frame
from tests.scoring_fixtures import make_outputs, pairs_of


def _scored(name: str = "mmlu", **kwargs) -> pd.DataFrame:
    return score_frame(
        make_outputs(name, **kwargs),
        parser="mc_letter",
        metric="exact_match",
        parser_options={"labels": ["A", "B", "C", "D"]},
    )


def _same(a, b) -> bool:
    return (pd.isna(a) and pd.isna(b)) or a == b


def test_every_arm_row_of_every_view_becomes_one_pair_with_the_contract_columns():
    scored = _scored()
    ll = scored.assign(correct=~scored["correct"], finish_reason="not_generated")
    pairs = build_pairs({"mmlu": scored, "mmlu.ll": ll}, model="tiny")
    assert pairs.columns.tolist() == PAIR_COLUMNS
    arms = int((scored["variant"] != "original").sum())
    assert len(pairs) == 2 * arms
    assert pairs.groupby("view")["method"].first().to_dict() == {
        "mmlu": "generate", "mmlu.ll": "loglikelihood",
    }  # fmt: skip
    assert set(pairs["condition"]) == {"typo"} and set(pairs["model"]) == {"tiny"}
    dtypes = pairs.dtypes.astype(str).to_dict()
    assert (dtypes["cluster"], dtypes["word_rank"], dtypes["prompt_chars"]) == ("int64",) * 3
    assert (dtypes["draw"], dtypes["n_typos"], dtypes["n_edited_chars"]) == ("int32",) * 3
    assert (dtypes["correct_original"], dtypes["score_perturbed"]) == ("bool", "float64")
    # each pair holds its example's original answer and its own
    row = pairs.loc[pairs["view"] == "mmlu"].iloc[0]
    original = scored.loc[(scored["example_id"] == row["example_id"])
                          & (scored["variant"] == "original")].iloc[0]  # fmt: skip
    arm = scored.loc[(scored["example_id"] == row["example_id"])
                     & (scored["variant"] == row["variant"])].iloc[0]  # fmt: skip
    assert _same(row["prediction_original"], original["prediction"])
    assert _same(row["prediction_perturbed"], arm["prediction"])
    assert row["prompt_chars"] == len(arm["prompt"])
    assert (row["op"], row["script"], row["language"]) == (arm["op"], arm["script"], "english")
    loglik = pairs.loc[pairs["view"] == "mmlu.ll"]
    assert set(loglik["finish_reason_perturbed"]) == {"not_generated"}


def test_an_example_has_one_cluster_in_every_view_numbered_in_sorted_order():
    scored = _scored()
    pairs = build_pairs({"mmlu": scored, "mmlu.ll": scored}, model="m")
    by_view = pairs.groupby("view").apply(
        lambda g: dict(zip(g["example_id"], g["cluster"], strict=True)), include_groups=False
    )
    assert by_view["mmlu"] == by_view["mmlu.ll"]
    ids = sorted(by_view["mmlu"])
    assert [by_view["mmlu"][i] for i in ids] == list(range(len(ids)))
    shuffled = build_pairs({"mmlu": scored.sample(frac=1, random_state=3)}, model="m")
    pd.testing.assert_frame_equal(shuffled, build_pairs({"mmlu": scored}, model="m"))


def test_cluster_codes_follow_benchmark_then_example_whatever_the_row_order():
    codes = cluster_codes(["mmlu", "bbh", "mmlu", "bbh"], ["2", "10", "10", "10"])
    assert codes.tolist() == [2, 0, 1, 0]
    assert cluster_codes([], []).tolist() == []


def test_draws_of_one_example_share_its_cluster():
    rows = [("b", "e1", "original", 0, 0, True), ("b", "e1", "the", 1, 0, False),
            ("b", "e1", "the", 1, 1, True), ("b", "e2", "original", 0, 0, True),
            ("b", "e2", "the", 1, 0, True), ("b", "e2", "the", 1, 1, True)]  # fmt: skip
    scored = pd.DataFrame(rows, columns=["benchmark", "example_id", "variant", "word_rank", "draw",
                                         "correct"])  # fmt: skip
    pairs = pairs_of({"b": scored})
    assert pairs["draw"].tolist() == [0, 1, 0, 1]
    assert pairs["cluster"].tolist() == [0, 0, 1, 1]
    assert pairs["correct_perturbed"].mean() - pairs["correct_original"].mean() == -0.25


def test_orphans_second_originals_and_missing_columns_name_the_file():
    scored = _scored()
    orphan = scored.loc[~((scored["example_id"] == "mmlu-001") & (scored["variant"] == "original"))]
    with pytest.raises(InputError, match=r"data/scored/mmlu\.parquet, row \d+: example_id "
                                         r"'mmlu-001' .*no 'original' row"):  # fmt: skip
        build_pairs({"mmlu": orphan}, model="m")
    twice = pd.concat([scored, scored.iloc[:1]], ignore_index=True)
    with pytest.raises(
        InputError,
        match=r"mmlu\.parquet, row \d+: example_id 'mmlu-000' has more than one "
        r"'original' row in condition 'typo'",
    ):
        build_pairs({"mmlu": twice}, model="m")
    with pytest.raises(InputError, match=r"mmlu\.parquet: missing column\(s\) n_typos"):
        build_pairs({"mmlu": scored.drop(columns="n_typos")}, model="m")
    with pytest.raises(InputError, match=r"row \d+: column 'draw': expected an integer"):
        build_pairs({"mmlu": scored.assign(draw=None)}, model="m")


def test_no_arm_rows_give_an_empty_table_with_the_columns():
    scored = _scored()
    pairs = build_pairs({"mmlu": scored.loc[scored["variant"] == "original"]}, model="m")
    assert pairs.empty and pairs.columns.tolist() == PAIR_COLUMNS


def _with_warned_arm(scored: pd.DataFrame) -> pd.DataFrame:
    """The view plus a "warned" arm: every row again, each answer flipped, so the arm's clean
    and typo'd answers both differ from the typo arm's."""
    warned = scored.assign(condition="warned", correct=~scored["correct"].astype(bool))
    return pd.concat([scored, warned], ignore_index=True)


def test_each_arm_pairs_with_its_own_clean_row():
    scored = _scored()
    both = _with_warned_arm(scored)
    pairs = build_pairs({"mmlu": both}, model="m")
    arms = int((scored["variant"] != "original").sum())
    assert pairs["condition"].value_counts().to_dict() == {"typo": arms, "warned": arms}
    typo = pairs.loc[pairs["condition"] == "typo"].reset_index(drop=True)
    warned = pairs.loc[pairs["condition"] == "warned"].reset_index(drop=True)
    key = ["view", "example_id", "variant", "word_rank", "draw"]
    assert warned[key].equals(typo[key])
    # the warned pair's clean answer is the warned clean prompt's, not the plain one's
    assert (warned["correct_original"] == ~typo["correct_original"]).all()
    assert (warned["correct_perturbed"] == ~typo["correct_perturbed"]).all()
    # the same examples share one cluster whatever the arm
    assert warned["cluster"].equals(typo["cluster"])
    # the typo arm's pairs are those of the view without the extra arm, row for row
    alone = build_pairs({"mmlu": scored}, model="m")
    pd.testing.assert_frame_equal(typo, alone)


def test_an_arm_row_without_its_own_clean_row_names_the_condition():
    scored = _scored()
    warned = scored.loc[scored["variant"] != "original"].assign(condition="warned")
    with pytest.raises(InputError, match=r"row \d+: example_id .*condition 'warned'.* no "
                                         r"'original' row of its condition"):  # fmt: skip
        build_pairs({"mmlu": pd.concat([scored, warned], ignore_index=True)}, model="m")
    with pytest.raises(InputError, match=r"column 'condition': expected an arm name, got null"):
        build_pairs({"mmlu": scored.assign(condition=None)}, model="m")


def test_other_arms_never_change_the_headline_or_the_word_tables():
    from evalpipe.scoring.summaries import build_reports

    scored = _scored()
    both = _with_warned_arm(scored)
    alone = build_reports(
        {"mmlu": scored}, build_pairs({"mmlu": scored}, model="m"),
        classification={}, level=0.95, margin=0.02,
    )  # fmt: skip
    with_arm = build_reports(
        {"mmlu": both}, build_pairs({"mmlu": both}, model="m"),
        classification={}, level=0.95, margin=0.02,
    )  # fmt: skip
    assert with_arm.robustness == alone.robustness
    assert with_arm.headline == alone.headline
    pd.testing.assert_frame_equal(with_arm.word_accuracy_drop, alone.word_accuracy_drop)
    pd.testing.assert_frame_equal(with_arm.accuracy_by_rate, alone.accuracy_by_rate)
