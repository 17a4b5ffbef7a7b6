"""The interval and the p printed beside it agree in the written tables too, not only in memory:
rounding to 4 decimals must not carry an interval limit onto 0 or a p onto 0.05."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from evalpipe.scoring.summaries import build_reports, verdict_rounded
from evalpipe.scoring.word_impact import ImpactSettings, top_words
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
    assert verdict_rounded(value, threshold) == printed
    assert verdict_rounded(np.array([value]), threshold).tolist() == [printed]
