"""Model ladders: the reference of a family, each variant's loss against it with a paired
interval, on hand-made pairs; and the report section, present only with a ladder."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from evalpipe.report.assemble import build_report
from evalpipe.report.data import ReportData
from evalpipe.report.ladder import ladder_section, perplexity_section
from evalpipe.scoring.intervals import paired_score
from evalpipe.scoring.ladder import has_ladder, ladder_table, reference_model
from evalpipe.scoring.score_mean import score_mean_interval

LABELS = {
    "base": {"family": "qwen2.5", "size": "7B", "quantisation": "none"},
    "awq": {"family": "qwen2.5", "size": "7B", "quantisation": "awq-int4"},
    "gptq": {"family": "qwen2.5", "size": "7B", "quantisation": "gptq-int4"},
    "small": {"family": "qwen2.5", "size": "1.5B"},
    "other": {},
}
MODELS = list(LABELS)


def _pairs(seed: int = 0, n_examples: int = 12, words: int = 3) -> pd.DataFrame:
    """Every model answers the same typo'd prompts: (example, word) pairs, two benchmarks."""
    rng = np.random.default_rng(seed)
    loss = {"base": 0.1, "awq": 0.2, "gptq": 0.45, "small": 0.3, "other": 0.0}
    rows = []
    for benchmark, language in (("gsm8k", "english"), ("jnli", "japanese")):
        clean = rng.random(n_examples) < 0.7
        for model in MODELS:
            for e in range(n_examples):
                for w in range(words):
                    # deterministic: the same prompts flip for every model, more with more loss
                    flip = ((e * words + w) * 37 + seed) % 100 < loss[model] * 100
                    rows.append(
                        {
                            "model": model,
                            "benchmark": benchmark,
                            "language": language,
                            "example_id": str(e),
                            "variant": f"w{w}",
                            "word_rank": w + 1,
                            "draw": 0,
                            "correct_original": bool(clean[e]),
                            "correct_perturbed": bool(clean[e] and not flip),
                        }
                    )
    return pd.DataFrame(rows)


def test_reference_is_the_unquantised_model_else_the_largest() -> None:
    assert reference_model(["awq", "base", "small"], LABELS) == "base"
    assert reference_model(["awq", "gptq"], LABELS) == "awq"  # all quantised, same size: first
    sizes = {"a": {"size": "1.5B"}, "b": {"size": "14B"}, "c": {"size": "3B"}}
    assert reference_model(["a", "b", "c"], sizes) == "b"


def test_each_variant_is_compared_with_its_reference_on_the_same_prompts() -> None:
    pairs = _pairs()
    table = ladder_table(pairs, LABELS, models=MODELS, level=0.95)
    pooled = table.loc[(table["scope"] == "pooled") & (table["language"] == "english")]
    by_model = pooled.set_index("model")
    assert set(by_model.index) == set(MODELS)
    assert (by_model.loc[["awq", "gptq", "small"], "reference"] == "base").all()
    assert math.isnan(by_model.loc["base", "delta_vs_reference"])
    assert by_model.loc["other", "reference"] is None or pd.isna(by_model.loc["other", "reference"])
    # the difference of the two paired deltas, each over the same prompts
    eng = pairs.loc[pairs["language"] == "english"]

    def delta(model: str) -> float:
        rows = eng.loc[eng["model"] == model]
        return rows["correct_perturbed"].mean() - rows["correct_original"].mean()

    for model in ("awq", "gptq", "small"):
        assert by_model.loc[model, "delta_vs_reference"] == pytest.approx(
            delta(model) - delta("base"), abs=1e-4
        )
    # gptq loses most (it flips most), so it ranks 1
    assert by_model.loc["gptq", "loss_rank"] == 1
    assert sorted(by_model.loc[["awq", "gptq", "small"], "loss_rank"]) == [1, 2, 3]
    # the per-model interval is the score stage's (Tango, clustered on the example)
    rows = eng.loc[eng["model"] == "gptq"]
    score = paired_score(
        rows["correct_original"], rows["correct_perturbed"], clusters=rows["example_id"]
    )
    assert by_model.loc["gptq", "ci_low"] == pytest.approx(score.low, abs=1e-4)
    assert by_model.loc["gptq", "ci_method"].startswith("tango_score")


def test_the_difference_interval_pairs_prompts_and_clusters_on_the_example() -> None:
    pairs = _pairs(seed=3)
    table = ladder_table(pairs, LABELS, models=MODELS, level=0.9)
    row = table.loc[
        (table["model"] == "awq") & (table["scope"] == "benchmark") & (table["benchmark"] == "jnli")
    ].iloc[0]
    jnli = pairs.loc[pairs["benchmark"] == "jnli"]
    key = ["example_id", "variant", "word_rank", "draw"]
    a = jnli.loc[jnli["model"] == "awq"].set_index(key)
    b = jnli.loc[jnli["model"] == "base"].set_index(key).loc[a.index]
    diff = (a["correct_perturbed"].astype(float) - a["correct_original"]) - (
        b["correct_perturbed"].astype(float) - b["correct_original"]
    )
    expected = score_mean_interval(
        diff.to_numpy(float), a.index.get_level_values("example_id"), level=0.9
    )
    assert row["diff_ci_low"] == pytest.approx(expected.low, abs=1e-4)
    assert row["diff_ci_high"] == pytest.approx(expected.high, abs=1e-4)
    assert row["diff_n"] == len(diff)
    # clustering widens it: the same differences treated as independent pairs give less
    independent = score_mean_interval(diff.to_numpy(float), None, level=0.9)
    assert expected.high - expected.low != pytest.approx(independent.high - independent.low)


def test_a_variant_that_flips_exactly_where_its_reference_does_gets_a_non_zero_interval() -> None:
    pairs = _pairs(seed=2)
    twin = pairs.loc[pairs["model"] == "base"].assign(model="awq")
    pairs = pd.concat([pairs.loc[pairs["model"] != "awq"], twin], ignore_index=True)
    table = ladder_table(pairs, LABELS, models=MODELS, level=0.95)
    rows = table.loc[table["model"] == "awq"]
    assert (rows["delta_vs_reference"] == 0).all()
    assert (rows["diff_ci_low"] < 0).all() and (rows["diff_ci_high"] > 0).all()
    assert (rows["diff_ci_method"] == "score_paired_difference").all()


def test_only_prompts_both_models_answered_enter_the_difference() -> None:
    pairs = _pairs(seed=1)
    dropped = pairs.loc[~((pairs["model"] == "awq") & (pairs["example_id"] == "0"))]
    table = ladder_table(dropped, LABELS, models=MODELS, level=0.95)
    row = table.loc[
        (table["model"] == "awq") & (table["benchmark"] == "gsm8k")
    ].iloc[0]  # fmt: skip
    assert row["diff_n"] == row["n"] == 11 * 3


def test_no_ladder_without_two_models_or_labels() -> None:
    assert not has_ladder(["base"], LABELS)
    assert not has_ladder(["a", "b"], {"a": {}, "b": {}})
    assert has_ladder(["base", "other"], LABELS)


def test_the_report_shows_the_ladder_and_names_the_variant_that_loses_most() -> None:
    table = ladder_table(_pairs(), LABELS, models=MODELS, level=0.95)
    html = ladder_section(table)
    assert html is not None and "Loses most under typos" in html
    assert "<b>gptq</b>" in html and "no variant" not in html
    # a variant that did better than its reference is not said to lose
    better = table.assign(delta_vs_reference=table["delta_vs_reference"].abs())
    assert "no variant of qwen2.5 loses more" in ladder_section(better)
    assert ladder_section(None) is None
    one = table.loc[table["model"] == "base"]
    assert ladder_section(one) is None
    page = build_report(ReportData(study_inputs={"ladder": table}))
    assert 'id="ladder"' in page and 'id="perplexity"' not in page


def test_the_report_shows_perplexity_only_when_scored() -> None:
    figures = {
        "enabled": True,
        "benchmarks": {"gsm8k": {"n": 4, "ratio": 1.25, "ci_low": 1.1, "ci_high": 1.4,
                                 "ll_original": -2.0, "ll_perturbed": -2.22}},
        "pooled": {"english": {"n": 4, "ratio": 1.25, "ci_low": 1.1, "ci_high": 1.4}},
    }  # fmt: skip
    html = perplexity_section({"m": figures})
    assert html is not None and "1.250" in html and "english (pooled)" in html
    assert perplexity_section({}) is None
    assert 'id="perplexity"' in build_report(
        ReportData(study_inputs={"perplexity": {"m": figures}})
    )
    assert 'id="ladder"' not in build_report(ReportData())
