"""Metrics and robustness statistics, checked against scikit-learn / scipy and hand computations."""

from __future__ import annotations

from statistics import NormalDist

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rapidfuzz import fuzz
from scipy.stats import binomtest
from sklearn.metrics import accuracy_score as sk_accuracy
from sklearn.metrics import confusion_matrix, precision_recall_fscore_support

from evalpipe.errors import InputError
from evalpipe.scoring.metrics import best_score, char_f1, classification_report
from evalpipe.scoring.robustness import (
    Originals,
    accuracy_by_rate,
    benchmark_summary,
    mcnemar_exact,
    originals_of,
    paired_stats,
    pdr,
    word_table,
)
from evalpipe.scoring.summaries import ClassificationSetup, build_reports, rounded
from tests.scoring_fixtures import pairs_of

LABELS = ["entailment", "contradiction", "neutral"]


# ----------------------------------------------------------------------------- char_f1


def test_char_f1_uses_the_default_processor_like_llm_jp_eval():
    assert char_f1("Tokyo", "tokyo") == 1.0
    assert char_f1("徳川家康。", "徳川家康") == 1.0
    # Without the processor rapidfuzz gives 80 / 88.9 here (llm-jp-eval uses the processor).
    assert fuzz.token_sort_ratio("Tokyo", "tokyo") == pytest.approx(80.0)
    assert char_f1("new york city", "city york new") == 1.0


def test_char_f1_of_empty_prediction_is_zero():
    assert char_f1("", "東京") == 0.0
    assert char_f1(None, "東京") == 0.0


def test_extractive_score_is_the_best_over_accepted_answers():
    assert best_score("東京都", ["大阪", "東京都"], metric="char_f1") == 1.0
    partial = best_score("東京", ["東京都", "大阪府"], metric="char_f1")
    assert partial == pytest.approx(char_f1("東京", "東京都"))
    assert 0 < partial < 1


# ----------------------------------------------------------------------------- classification


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from(LABELS), st.sampled_from([*LABELS, None])),
        min_size=1,
        max_size=60,
    )
)
def test_classification_report_matches_scikit_learn(pairs):
    y_true = [t for t, _ in pairs]
    y_pred = [p for _, p in pairs]
    report = classification_report(y_true, y_pred, labels=LABELS)
    filled = [p if p is not None else "invalid" for p in y_pred]
    p, r, f, _ = precision_recall_fscore_support(
        y_true, filled, labels=LABELS, average="macro", zero_division=0
    )
    assert report["accuracy"] == pytest.approx(sk_accuracy(y_true, filled))
    assert (report["precision_macro"], report["recall_macro"], report["f1_macro"]) == pytest.approx(
        (p, r, f)
    )
    pc, rc, fc, sc = precision_recall_fscore_support(y_true, filled, labels=LABELS, zero_division=0)
    for i, label in enumerate(LABELS):
        cls = report["per_class"][label]
        assert (cls["precision"], cls["recall"], cls["f1"], cls["support"]) == pytest.approx(
            (pc[i], rc[i], fc[i], sc[i])
        )
    matrix = confusion_matrix(y_true, filled, labels=LABELS)
    assert [[report["confusion"][a][b] for b in LABELS] for a in LABELS] == matrix.tolist()
    assert report["invalid"] == sum(p is None for p in y_pred)


def test_unparsed_predictions_count_as_wrong_not_dropped():
    report = classification_report(
        ["positive", "negative", "negative"],
        ["positive", None, None],
        labels=["positive", "negative"],
    )
    assert report["n"] == 3
    assert report["accuracy"] == pytest.approx(1 / 3)
    assert report["per_class"]["negative"]["recall"] == 0.0
    assert report["invalid"] == 2


def test_non_strict_mode_shows_an_explicit_invalid_class():
    report = classification_report(
        ["positive", "negative"],
        ["positive", "neutral"],
        labels=["positive", "negative"],
        explicit_invalid=True,
    )
    assert report["confusion"]["negative"]["invalid"] == 1
    assert report["per_class"]["invalid"]["support"] == 0
    assert "invalid" not in report["confusion"]  # no gold is invalid
    # Macro averages stay over the real labels.
    assert report["recall_macro"] == pytest.approx(0.5)


# ----------------------------------------------------------------------------- PDR, McNemar, CI


def test_pdr_is_undefined_when_original_accuracy_is_zero():
    assert pdr(0.0, 0.0) is None
    assert pdr(0.0, 0.4) is None
    assert pdr(0.5, 0.75) == pytest.approx(-0.5)  # typos can help
    assert pdr(0.8, 0.8) == 0.0


def test_mcnemar_without_discordant_pairs_is_one():
    assert mcnemar_exact(0, 0) == 1.0
    stats = paired_stats([True, False, True], [True, False, True])
    assert stats.mcnemar_p == 1.0
    # No pair flipped, yet the interval is not [0, 0]: Tango's +-z^2/(n+z^2).
    assert stats.ci_low == pytest.approx(-(1.96**2) / (3 + 1.96**2), abs=1e-3)
    assert stats.ci_high == pytest.approx(1.96**2 / (3 + 1.96**2), abs=1e-3)
    assert stats.n_c2i == stats.n_i2c == 0


@settings(max_examples=50, deadline=None)
@given(st.integers(0, 40), st.integers(0, 40))
def test_mcnemar_equals_scipy_binomial_test(b, c):
    expected = 1.0 if b + c == 0 else binomtest(b, b + c, 0.5).pvalue
    assert mcnemar_exact(b, c) == pytest.approx(expected)
    assert mcnemar_exact(b, c) == pytest.approx(mcnemar_exact(c, b))


def test_paired_stats_on_random_pairs_match_direct_computation():
    rng = np.random.default_rng(7)
    o = rng.random(300) < 0.6
    p = np.where(rng.random(300) < 0.2, ~o, o)
    s = paired_stats(o, p, level=0.95)
    assert s.accuracy_original == pytest.approx(o.mean())
    assert s.accuracy_perturbed == pytest.approx(p.mean())
    assert s.delta == pytest.approx(p.mean() - o.mean())
    assert s.flip_c2i == pytest.approx((o & ~p).mean())
    assert s.flip_i2c == pytest.approx((~o & p).mean())
    assert s.pdr == pytest.approx(1 - p.mean() / o.mean())


# ----------------------------------------------------------------------------- per word / benchmark


def _scored(rows):
    frame = pd.DataFrame(
        rows, columns=["example_id", "variant", "word_rank", "correct", "perturbed_occurrences"]
    )
    frame["benchmark"] = "toy"
    frame["condition"] = "typo"
    frame["parse_status"] = "strict"
    frame["score"] = frame["correct"].astype(float)
    return frame


def _words(scored):
    return word_table(pairs_of({"toy": scored}), originals=originals_of(scored), level=0.95)


def _summary(scored):
    return benchmark_summary(pairs_of({"toy": scored}), originals=originals_of(scored), level=0.95)


def _rate(frame):
    """accuracy_by_rate over one view per benchmark of a frame of several benchmarks."""
    views = {str(name): rows for name, rows in frame.groupby("benchmark", sort=True)}
    originals = sum((originals_of(rows.assign(parse_status="strict")) for rows in views.values()),
                    Originals())  # fmt: skip
    return accuracy_by_rate(pairs_of(views), originals=originals)


def test_word_table_pairs_perturbed_rows_with_their_originals():
    scored = _scored([
        ("e1", "original", 0, True, 0), ("e2", "original", 0, True, 0),
        ("e3", "original", 0, False, 0), ("e4", "original", 0, True, 0),
        ("e1", "the", 1, False, 2), ("e2", "the", 1, True, 1), ("e3", "the", 1, True, 1),
        ("e4", "of", 2, False, 1),
    ])  # fmt: skip
    table = _words(scored).set_index("word")
    the = table.loc["the"]
    assert the["n"] == 3
    assert the["accuracy_original"] == pytest.approx(2 / 3)
    assert the["accuracy_perturbed"] == pytest.approx(2 / 3)
    assert (the["n_c2i"], the["n_i2c"]) == (1, 1)
    # Upstream per-occurrence impact: base 3/4; merged keeps e4's original answer: e1 F, e2 T,
    # e3 T, e4 T = 3/4; 4 perturbed occurrences.
    assert the["accuracy_merged"] == pytest.approx(0.75)
    assert the["per_occurrence_impact"] == pytest.approx(0.0)
    of = table.loc["of"]
    assert of["accuracy_merged"] == pytest.approx(0.5)
    assert of["per_occurrence_impact"] == pytest.approx((0.75 - 0.5) / 1)
    assert of["pdr"] == pytest.approx(1.0)


def test_benchmark_summary_pools_pairs_and_counts_unparsed_rows():
    scored = _scored([
        ("e1", "original", 0, True, 0), ("e2", "original", 0, False, 0),
        ("e1", "the", 1, False, 1), ("e2", "the", 1, False, 1), ("e1", "of", 2, True, 1),
    ])  # fmt: skip
    scored.loc[3, "parse_status"] = "unparsed"
    summary = _summary(scored)
    assert summary["n"] == 3
    assert summary["n_words"] == 2
    assert summary["n_examples"] == 2
    assert summary["accuracy_original"] == pytest.approx(2 / 3)
    assert summary["accuracy_perturbed"] == pytest.approx(1 / 3)
    assert summary["unparsed"] == 1
    assert summary["unparsed_rate"] == pytest.approx(1 / 5)


def test_benchmark_without_perturbed_rows_has_null_statistics():
    summary = _summary(_scored([("e1", "original", 0, False, 0)]))
    assert summary["n"] == 0
    assert summary["pdr"] is None and summary["delta"] is None
    assert summary["mcnemar_p"] == 1.0


def test_orphan_perturbed_row_is_an_input_error_naming_the_example():
    scored = _scored([("e1", "original", 0, True, 0), ("e9", "the", 1, False, 1)])
    with pytest.raises(InputError, match=r"data/scored/toy\.parquet, row 1: example_id 'e9'"):
        _words(scored)


def test_duplicate_original_rows_are_an_input_error():
    scored = _scored([("e1", "original", 0, True, 0), ("e1", "original", 0, False, 0)])
    with pytest.raises(InputError, match="more than one 'original'"):
        _summary(scored)


def test_accuracy_by_rate_bins_share_of_changed_characters():
    frame = pd.DataFrame({
        "benchmark": "toy",
        "example_id": ["e1", "e2", "e1", "e2", "e1"],
        "variant": ["original", "original", "w", "w", "v"],
        "prompt": ["x" * 100] * 5,
        "perturbed_occurrences": [0, 0, 1, 1, 3],
        "correct": [True, False, True, False, False],
    })  # fmt: skip
    table = _rate(frame)
    assert table["bin"].tolist() == ["0", "(0.5, 1]", "(2, 4]"]
    assert table["perturbation_rate"].tolist() == pytest.approx([0.0, 1.0, 3.0])
    assert table["n"].tolist() == [2, 2, 1]
    assert table["accuracy_original"].tolist() == pytest.approx([0.5, 0.5, 1.0])
    assert table["accuracy_perturbed"].tolist() == pytest.approx([0.5, 0.5, 0.0])
    assert table["delta"].tolist() == pytest.approx([0.0, 0.0, -1.0])


def test_typos_without_effect_give_a_flat_rate_curve_across_benchmarks():
    # Typo rate tracks prompt length and so benchmark: "short" (accuracy 0.30, 100-character
    # prompts) lands in the 3% bin, "long" (accuracy 0.88, 2000 characters) in the 0.15% bin. The
    # typos change no answer. Pooled unpaired accuracy fell from 0.88 to 0.30 here.
    rows = []
    for name, length, right in (("long", 2000, 44), ("short", 100, 15)):
        for i in range(50):
            correct = i < right
            for variant, fired in (("original", 0), ("the", 3)):
                rows.append({
                    "benchmark": name, "example_id": f"{name}{i}", "variant": variant,
                    "prompt": "x" * length, "perturbed_occurrences": fired, "correct": correct,
                })  # fmt: skip
    table = _rate(pd.DataFrame(rows))
    assert table["bin"].tolist() == ["0", "(0, 0.25]", "(2, 4]"]
    assert table["delta"].tolist() == [0.0, 0.0, 0.0]
    assert (table["accuracy_perturbed"] - table["accuracy_original"]).abs().max() == 0.0


def test_word_table_adjusts_mcnemar_p_over_the_benchmark_words():
    rows = []
    for i in range(30):
        rows.append((f"e{i}", "original", 0, True, 0))
        rows.append((f"e{i}", "the", 1, i >= 12, 1))  # 12 c2i: p = 2 * 0.5**12
        rows.append((f"e{i}", "of", 2, i >= 4, 1))  # 4 c2i: p = 0.125
        rows.append((f"e{i}", "and", 3, i != 0, 1))  # 1 c2i: p = 1
    table = _words(_scored(rows)).set_index("word")
    # mcnemar_p: the score test the interval inverts, (b - c) / sqrt(b + c) = sqrt(12) for "the";
    # the exact McNemar p stays in its own column.
    p_the = 2 * NormalDist().cdf(-(12**0.5))
    assert table.loc["the", "mcnemar_p"] == pytest.approx(p_the)
    assert table.loc["the", "mcnemar_exact_p"] == pytest.approx(2 * 0.5**12)
    assert table.loc["of", "mcnemar_p"] == pytest.approx(2 * NormalDist().cdf(-2.0))
    # Tarone: "of" (at best p = 0.0455 > 0.05 / 2) and "and" cannot reach significance in a
    # family of two, so the family is "the" alone.
    assert table.loc["the", "p_holm"] == pytest.approx(p_the)
    assert table.loc["the", "p_bh"] == pytest.approx(p_the)
    assert table.loc["of", "p_holm"] == 1.0 and table.loc["of", "p_bh"] == 1.0
    assert table.loc["and", "p_holm"] == 1.0 and table.loc["and", "p_bh"] == 1.0


def test_reports_are_rounded_and_json_safe():
    assert rounded({"x": float("nan"), "y": -0.00001, "z": np.float64(0.123456)}) == {
        "x": None,
        "y": 0.0,
        "z": 0.1235,
    }
    scored = _scored([("e1", "original", 0, True, 0), ("e1", "the", 1, False, 1)])
    scored["gold"], scored["prediction"] = "A", ["A", None]
    scored["prompt"] = "p" * 50
    reports = build_reports(
        {"toy": scored},
        pairs_of({"toy": scored}),
        classification={"toy": ClassificationSetup(["A", "B"])},
        level=0.95,
        margin=0.02,
    )
    assert reports.robustness["toy"]["delta"] == -1.0
    # one right answer turned wrong: the transitions, the changed answer, and a gate that
    # cannot tell from one pair
    headline, details = reports.headline["toy"], reports.robustness["toy"]
    assert (details["right_wrong"], details["wrong_right"], details["right_right"]) == (1, 0, 0)
    assert headline["answer_change"] == 1.0 and headline["gate"] == "inconclusive"
    assert reports.classification["toy"]["accuracy"] == 1.0
    assert reports.confusion[["actual", "predicted"]].values.tolist() == [["toy: A", "toy: A"]]
    assert reports.word_accuracy_drop["label"].tolist() == ["toy: the"]
    assert reports.word_accuracy_drop["accuracy_drop"].tolist() == [1.0]
    assert reports.word_accuracy_drop["p_holm"].tolist() == [1.0]


def test_clean_accuracy_over_all_examples_stays_put_when_typos_land_elsewhere():
    # four examples, three right when clean; a sweep's two settings hit different examples
    clean = [("e1", "original", 0, True, 0), ("e2", "original", 0, True, 0),
             ("e3", "original", 0, True, 0), ("e4", "original", 0, False, 0)]  # fmt: skip
    light = _scored([*clean, ("e1", "the", 1, True, 1), ("e4", "the", 1, False, 1)])
    heavy = _scored([*clean, ("e1", "the", 1, True, 1), ("e2", "the", 1, False, 1),
                     ("e3", "of", 2, True, 1)])  # fmt: skip
    figures = []
    for scored in (light, heavy):
        reports = build_reports(
            {"toy": scored}, pairs_of({"toy": scored}), classification={}, level=0.95, margin=0.02
        )
        figures.append(reports.headline["toy"])
    # the paired baseline moves with the pairs ...
    assert (figures[0]["n"], figures[0]["acc_orig"]) == (2, 0.5)
    assert (figures[1]["n"], figures[1]["acc_orig"]) == (3, 1.0)
    # ... the clean accuracy over every example does not
    for headline in figures:
        assert (headline["acc_all"], headline["n_all"]) == (0.75, 4)


@pytest.mark.parametrize(
    "module",
    [
        "answers.normalise",
        "answers.parsers",
        "answers.types",
        "inference.loglikelihood",
        "scoring.loglikelihood",
        "scoring.metrics",
        "scoring.pairs",
        "scoring.robustness",
        "scoring.summaries",
        "scoring.scorer",
    ],
)
def test_docstring_examples_hold(module):
    import doctest
    import importlib

    result = doctest.testmod(importlib.import_module(f"evalpipe.{module}"))
    assert result.attempted > 0
    assert result.failed == 0
