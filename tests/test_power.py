"""The minimum detectable effect and `evalpipe plan`: the formula against a simulation of the
same design that runs the tables' own test, the plans fed back into it, the ``mde`` column of the
word, impact and headline tables, and the command's answers and errors."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from evalpipe.cli import main
from evalpipe.errors import InputError
from evalpipe.scoring.power import examples_needed, mde, power
from evalpipe.scoring.power_plan import pilot_rates, plans
from evalpipe.scoring.robustness import Originals, benchmark_summary, word_table
from evalpipe.scoring.simulate_power import PowerDesign, check_mde, pilot_pairs, power_of_plan
from evalpipe.scoring.summaries import HEADLINE_KEYS, WORD_PLOT_COLUMNS
from evalpipe.scoring.word_impact import STAT_COLUMNS


def _plan(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, ["plan", *args], prog_name="evalpipe")
    return result.exit_code, result.output


# ----------------------------------------------------------------------------- the formula


@pytest.mark.parametrize(
    "design",
    [
        PowerDesign(100, 1, 0.6, 0.15),  # independent pairs
        PowerDesign(40, 3, 0.6, 0.1, shared=0.5),  # three draws per example, clustered
    ],
    ids=["independent", "clustered"],
)
def test_mde_matches_a_simulation_of_the_same_design_within_ten_percent(design) -> None:
    check = check_mde(design, sims=200, seed=3)
    assert check.formula is not None
    assert check.relative_error < 0.10, (check.simulated, check.formula)
    if design.draws > 1:  # the clustering the tables print is the one the formula was fed
        assert check.design_effect > 1.2 and math.isfinite(check.df)


def test_mde_is_the_effect_at_the_target_power_and_shrinks_with_the_study() -> None:
    found = mde(n=200, discordance=0.1, design_effect=1.5, df=49, level=0.95)
    assert power(-found, n=200, discordance=0.1, design_effect=1.5, df=49) == pytest.approx(
        0.8, abs=1e-6
    )
    sizes = [mde(n=n, discordance=0.1) for n in (20, 80, 320, 1280)]
    assert sizes == sorted(sizes, reverse=True)
    # four times the pairs halve the MDE once it is small (sqrt(n) scaling)
    assert sizes[3] / sizes[2] == pytest.approx(0.5, rel=0.05)
    # a design effect of 2 costs what halving the pairs costs (at equal df)
    assert mde(n=640, discordance=0.1, design_effect=2.0) == pytest.approx(
        mde(n=320, discordance=0.1), rel=1e-9
    )
    assert mde(n=0, discordance=0.1) is None
    assert mde(n=2, discordance=0.5) is None  # two pairs never reach 80% power


def test_a_plan_fed_back_into_the_simulator_reaches_its_power() -> None:
    truth = PowerDesign(2000, 3, 0.6, 0.1, shared=0.3)
    rates = pilot_rates(pilot_pairs(truth, -0.05, seed=1))[0]
    assert rates.icc_measured and 0.15 < rates.icc < 0.6
    plan = plans(rates, effect=-0.05, draws=[3], level=0.95, target_power=0.8)[0]
    planned = PowerDesign(plan.examples, 3, truth.accuracy, truth.discordance, truth.shared)
    simulated = power_of_plan(planned, -0.05, sims=300, seed=4)
    # Monte Carlo standard error sqrt(0.16 / 300) = 0.023
    assert abs(simulated - 0.8) < 0.07, (plan, simulated)


def test_more_draws_need_fewer_examples_up_to_the_within_example_correlation() -> None:
    one, four = (examples_needed(effect=-0.02, discordance=0.1, draws=m, icc=0.3) for m in (1, 4))
    assert four.examples < one.examples
    assert four.design_effect == pytest.approx(1.9)
    independent = examples_needed(effect=-0.02, discordance=0.1, draws=4, icc=0.0)
    assert independent.examples == pytest.approx(one.examples / 4, rel=0.02)
    with pytest.raises(InputError, match="effect"):
        examples_needed(effect=0.0, discordance=0.1, draws=1)


# ----------------------------------------------------------------------------- the tables


def _pairs(view: str, o: list[bool], p: list[bool], clusters: list[int], ranks: list[int]):
    return pd.DataFrame(
        {
            "view": view,
            "benchmark": view,
            "cluster": clusters,
            "word_rank": ranks,
            "variant": [f"w{r}" for r in ranks],
            "condition": "typo",
            "correct_original": o,
            "correct_perturbed": p,
            "perturbed_occurrences": 1,
            "parse_status_perturbed": "strict",
            "score_original": np.asarray(o, dtype=float),
            "score_perturbed": np.asarray(p, dtype=float),
        }
    )


def test_word_and_headline_tables_carry_the_mde_of_their_pairs() -> None:
    assert HEADLINE_KEYS["mde"] == "mde"
    assert "mde" in WORD_PLOT_COLUMNS and "mde" in STAT_COLUMNS
    # 30 examples, each hit by two words: word 1 flips 6 of 30, word 2 none
    o = [True] * 60
    p = [i >= 6 for i in range(30)] + [True] * 30
    clusters = list(range(30)) * 2
    pairs = _pairs("mmlu", o, p, clusters, [1] * 30 + [2] * 30)
    originals = Originals(n_examples=30, n_correct=30)
    words = word_table(pairs, originals=originals, level=0.95)
    assert words["mde"].tolist() == [
        pytest.approx(mde(n=30, discordance=0.2)),
        pytest.approx(mde(n=30, discordance=0.0)),
    ]
    summary = benchmark_summary(pairs, originals=originals, level=0.95, words=words)
    # the pooled pairs are clustered on the example: never more detectable than 60 free pairs
    assert summary["mde"] >= mde(n=60, discordance=0.1) - 1e-12


# ----------------------------------------------------------------------------- the command


def test_plan_from_stated_rates_prints_examples_per_draw_count() -> None:
    code, out = _plan(
        "--effect", "-0.02", "--accuracy", "0.6", "--discordance", "0.1", "--draws", "1,4",
        "--level", "0.95", "--json",
    )  # fmt: skip
    assert code == 0, out
    answer = json.loads(out)["rates"][0]
    assert [p["draws"] for p in answer["plans"]] == [1, 4]
    expected = examples_needed(effect=-0.02, discordance=0.1, draws=1)
    assert answer["plans"][0]["examples"] == expected.examples
    assert answer["plans"][0]["generations"] == 2 * expected.examples
    code, text = _plan("--effect", "-0.05", "--level", "0.95")
    assert code == 0 and "fewest generations" in text and "not measured" in text


def test_plan_from_a_pilot_pairs_table(tmp_path: Path) -> None:
    pilot = pilot_pairs(PowerDesign(500, 2, 0.7, 0.1, shared=0.4), -0.05, seed=2)
    folder = tmp_path / "data" / "scored" / "tiny"
    folder.mkdir(parents=True)
    pilot.to_parquet(folder / "pairs.parquet")
    code, out = _plan("--pilot", str(folder), "--effect", "-0.05", "--draws", "2", "--json")
    assert code == 0, out
    answer = json.loads(out)["rates"][0]
    rates = pilot_rates(pilot)[0]
    assert answer["source"] == "pilot" and answer["icc_measured"]
    assert (
        answer["plans"][0]["examples"]
        == plans(rates, effect=-0.05, draws=[2], level=0.95, target_power=0.8)[0].examples
    )


def test_plan_reads_the_configured_level(tmp_path: Path) -> None:
    params = tmp_path / "params.yaml"
    params.write_text("scoring:\n  confidence_level: 0.9\n", encoding="utf-8")
    code, out = _plan("--effect", "-0.05", "--params", str(params), "--json")
    assert code == 0 and json.loads(out)["level"] == 0.9


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--effect", "-0.05", "--pilot", "nowhere"], "nowhere: no pairs table"),
        (["--effect", "-0.05", "--draws", "0,2"], "--draws: expected whole numbers >= 1"),
        (["--effect", "-0.7", "--accuracy", "0.6"], "larger than the clean accuracy"),
        (["--effect", "0"], "--effect: expected a change of accuracy"),
        (["--effect", "-0.05", "--discordance", "1.5"], "--discordance: expected a share"),
        (["--effect", "-0.05", "--power", "1"], "--power: expected a value in (0, 1)"),
    ],
)
def test_plan_bad_input_is_a_clear_error(args: list[str], message: str) -> None:
    code, out = _plan(*args, "--level", "0.95")
    assert code == 2 and message in out, out


def test_plan_names_a_pilot_without_the_columns_it_reads(tmp_path: Path) -> None:
    path = tmp_path / "pairs.parquet"
    pd.DataFrame({"view": ["a"], "cluster": [0]}).to_parquet(path)
    code, out = _plan("--pilot", str(path), "--effect", "-0.05", "--level", "0.95")
    assert code == 2 and str(path) in out and "correct_perturbed" in out


# ----------------------------------------------------------------------------- the report


def test_the_answer_says_what_the_study_could_not_see_before_no_effect() -> None:
    from evalpipe.report.answer import answer_section

    headline = [
        {"model": "m", "benchmark": "mmlu", "language": "english", "n": 20, "delta": -0.05,
         "ci_low": -0.2, "ci_high": 0.08, "mde": 0.2691, "accuracy_original": 0.6,
         "accuracy_perturbed": 0.55},
        {"model": "m", "benchmark": "gsm8k", "language": "english", "n": 400, "delta": -0.1,
         "ci_low": -0.14, "ci_high": -0.06, "mde": 0.04, "accuracy_original": 0.6,
         "accuracy_perturbed": 0.5},
    ]  # fmt: skip
    words = pd.DataFrame(
        {"model": "m", "language": "english", "source": "wiki", "scope": "pooled",
         "word": ["the", "of"], "variant": ["the", "of"], "rank": [1, 2], "n": [40, 40],
         "delta": [-0.1, 0.0], "ci_low": [-0.3, -0.09], "ci_high": [0.01, 0.09],
         "mde": [0.21, 0.18], "p_holm": [0.2, 1.0], "small_n": False, "impact_rank": [1, 2],
         "unparsed_rate": 0.0}
    )  # fmt: skip
    body = answer_section(words=words, headline=headline, parse=[])
    assert (
        "mmlu: no change shown (the interval holds 0), but this study could not see an "
        "effect smaller than 26.9 points." in body
    )
    assert "gsm8k: no change shown" not in body  # its interval excludes 0
    assert "2 of 2 words show no change" in body and "18.0-21.0 points" in body
    assert "MDE (80% power)" in body
