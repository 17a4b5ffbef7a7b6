"""The interval and the p printed beside it agree in the written tables and the report too, not
only in memory: rounding to 4 (tables) or 3 (report) decimals must not carry an interval limit
onto 0 or a p onto 0.05."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from evalpipe.report.assemble import build_report
from evalpipe.scoring.summaries import build_reports, rounded_frame
from evalpipe.scoring.verdicts import alpha_of, verdict_rounded
from evalpipe.scoring.word_impact import ImpactSettings, top_words
from tests.report_fixtures import full_data, html_table
from tests.scoring_fixtures import impact_of, pairs_of

# 160 examples hit by "the": 18 right -> wrong, 8 wrong -> right. The score test gives
# p = 0.04986 and Tango's interval (-0.1288, -0.00004): significant, and the interval excludes 0
# by 4e-5, which rounds to 0.0 to the nearest.
TRANSITIONS = (
    [(True, False)] * 18 + [(False, True)] * 8 + [(True, True)] * 67 + [(False, False)] * 67
)


def _scored() -> pd.DataFrame:
    rows = []
    for i, (before, after) in enumerate(TRANSITIONS):
        rows.append(("toy", f"e{i:03d}", "original", 0, before, 0))
        rows.append(("toy", f"e{i:03d}", "the", 1, after, 1))
    frame = pd.DataFrame(
        rows,
        columns=["benchmark", "example_id", "variant", "word_rank", "correct",
                 "perturbed_occurrences"],
    )  # fmt: skip
    frame["gold"] = "A"
    frame["prediction"] = np.where(frame["correct"], "A", "B")
    frame["prompt"] = "p" * 50
    frame["model"] = "m"
    frame["condition"] = "typo"
    frame["parse_status"] = "strict"
    return frame


def _excludes_zero(low: float, high: float) -> bool:
    return low > 0 or high < 0


def test_a_just_significant_word_row_is_written_with_an_interval_that_excludes_zero():
    scored = _scored()
    reports = build_reports({"toy": scored}, pairs_of({"toy": scored}), classification={},
                            level=0.95, margin=None)  # fmt: skip
    row = reports.word_accuracy_drop.iloc[0]
    details = reports.robustness["toy"]
    for figures in (row, details):
        assert figures["mcnemar_p"] == pytest.approx(0.0499)
        assert figures["ci_high"] == -0.0001  # not 0.0: the p beside it is below 0.05
        assert _excludes_zero(figures["ci_low"], figures["ci_high"])


def test_the_top_words_csv_keeps_the_verdict_of_a_just_significant_word():
    scored = _scored()
    perturbed = pd.DataFrame({"benchmark": "toy", "example_id": scored["example_id"].unique(),
                              "word_rank": 1, "perturbations": [[]] * len(TRANSITIONS)})  # fmt: skip
    words = {"english": pd.DataFrame({"rank": [1], "word": ["the"], "lemma": [None],
                                      "pos": [None], "score": [9.0], "source": ["wordfreq"]})}  # fmt: skip
    table, _, _ = impact_of({"toy": scored}, {"toy": perturbed}, words,
                            languages={"toy": "english"},
                            settings=ImpactSettings(level=0.95, small_n=0))  # fmt: skip
    raw = table.iloc[0]
    assert raw["ci_high"] < 0 and raw["mcnemar_p"] < 0.05
    top = top_words(table, language="english", top_n=1, level=0.95).iloc[0]
    assert top["ci_high"] == -0.0001
    assert top["mcnemar_p"] < 0.05 and _excludes_zero(top["ci_low"], top["ci_high"])


@pytest.mark.parametrize(
    ("value", "threshold", "printed"),
    [
        (-0.000041, 0.0, -0.0001),  # a limit just below 0 stays below it
        (0.000049, 0.0, 0.0001),  # and just above 0 stays above
        (0.049962, 0.05, 0.0499),  # a p just below 0.05 stays below it
        (0.050004, 0.05, 0.0501),  # nor is a value just above the threshold printed on it
        (0.05, 0.05, 0.05),
        (-0.12884, 0.0, -0.1288),  # away from the threshold: rounded to the nearest
        (0.0, 0.0, 0.0),
    ],
)
def test_rounding_keeps_each_value_on_its_side_of_the_verdict(value, threshold, printed):
    assert verdict_rounded(value, threshold, 4) == printed
    assert verdict_rounded(np.array([value]), threshold, 4).tolist() == [printed]


def test_a_p_just_below_005_is_not_written_as_005_at_level_095():
    # 1 - 0.95 is 0.050000000000000044: a p written as 0.05 would sit below that threshold
    scored = _scored()
    reports = build_reports({"toy": scored}, pairs_of({"toy": scored}), classification={},
                            level=0.95, margin=None)  # fmt: skip
    frame = reports.word_accuracy_drop.assign(mcnemar_p=0.049962)
    assert rounded_frame(frame, alpha=alpha_of(0.95))["mcnemar_p"].tolist() == [0.0499]


def test_the_report_prints_a_just_significant_row_with_its_verdict():
    data = full_data()
    words = data.words.copy()
    row = words.index[(words["word"] == "of") & (words["scope"] == "pooled")][0]
    # a word row of perf/verdict_agreement.py's 4-draw study: p 0.0496 printed as 0.050 before
    words.loc[row, ["ci_low", "ci_high", "mcnemar_p"]] = [-0.4028, -0.00053, 0.04961]
    # and a limit of -0.0004 printed as -0.000 beside p 0.0493
    other = words.index[(words["word"] == "and") & (words["scope"] == "pooled")][0]
    words.loc[other, ["ci_low", "ci_high", "mcnemar_p"]] = [-0.21, -0.0004, 0.0493]
    data.words = words
    data.robustness = {**data.robustness}
    data.robustness["jnli"] = {**data.robustness["jnli"], "ci_high": -0.0004, "mcnemar_p": 0.0496}
    page = build_report(data)
    _, rows, _ = html_table(page, "words-english-wordfreq")
    shown = {(r["word"], r["scope"]): r for r in rows}
    assert (shown["of", "pooled"]["CI high"], shown["of", "pooled"]["McNemar p"]) == (
        "-0.001",
        "0.049",
    )
    assert (shown["and", "pooled"]["CI high"], shown["and", "pooled"]["McNemar p"]) == (
        "-0.001",
        "0.049",
    )
    # the headline table: the accuracy change's interval beside its p
    assert "[-0.250, -0.001]" in page and "[-0.250, -0.000]" not in page
    # rows away from the boundary print rounded to the nearest
    assert shown["the", "pooled"]["CI high"] == "0.000"


def test_holm_and_bh_decisions_keep_their_side_of_alpha_when_written():
    # Holm / BH values are decisions at alpha (p_bh <= 0.05): 0.05004 must not be written 0.05.
    frame = pd.DataFrame({"ci_low": [-0.2, -0.1], "ci_high": [-0.01, 0.05],
                          "mcnemar_p": [0.01, 0.3], "p_holm": [0.050004, 0.04996],
                          "p_bh": [0.0500049, 0.049951]})  # fmt: skip
    written = rounded_frame(frame, alpha=alpha_of(0.95))
    assert written["p_holm"].tolist() == [0.0501, 0.0499]
    assert written["p_bh"].tolist() == [0.0501, 0.0499]
    assert (written["p_bh"] <= 0.05).tolist() == (frame["p_bh"] <= 0.05).tolist()
