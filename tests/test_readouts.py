"""Readouts beyond accuracy: calibration of the choice probabilities, clean vs typo'd
(evalpipe.scoring.calibration, studies/readouts)."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest

from evalpipe import atomic
from evalpipe.benchmarks import get_spec
from evalpipe.inference.loglikelihood import loglikelihood_columns, loglikelihood_requests
from evalpipe.inference.types import Loglikelihood
from evalpipe.paths import ProjectPaths
from evalpipe.report.data import ReportData
from evalpipe.scoring.calibration import (
    BINS,
    brier,
    calibration_pairs,
    calibration_summary,
    choice_kl,
    choice_probabilities,
    ece,
    ece_difference_interval,
)
from evalpipe.scoring.loglikelihood import score_loglikelihood
from evalpipe.scoring.mean_interval import clustered_mean_interval
from evalpipe.scoring.pairs import build_pairs
from evalpipe.scoring.simulate_calibration import calibration_study, truth
from evalpipe.scoring.skewed_mean import bootstrap_t_mean_interval
from evalpipe.scoring.study import ScoreInputs
from evalpipe.studies.readouts import paths as readouts_paths
from evalpipe.studies.readouts.report import calibration_section
from evalpipe.studies.readouts.score import scoring
from tests.scoring_fixtures import make_outputs


def test_probabilities_are_the_softmax_of_the_log_likelihoods() -> None:
    p = choice_probabilities([math.log(1), math.log(3)], [" A", " B"], normalised=False)
    assert p.tolist() == pytest.approx([0.25, 0.75])
    # per character: -2 over 1 char and -4 over 4 chars give -2 and -1
    p = choice_probabilities([-2.0, -4.0], ["A", "ABCD"], normalised=True)
    assert p.tolist() == pytest.approx([1 / (1 + math.e), math.e / (1 + math.e)])
    assert choice_probabilities([-1.0, math.nan], [" A", " B"], normalised=False) is None
    assert choice_probabilities([-math.inf, -math.inf], [" A", " B"], normalised=False) is None
    # an option with log-likelihood -inf has probability 0
    assert choice_probabilities([-1.0, -math.inf], [" A", " B"], normalised=False).tolist() == [
        1.0,
        0.0,
    ]


def test_brier_and_ece_by_hand() -> None:
    assert brier(np.array([0.5, 0.3, 0.2]), 0) == pytest.approx(0.25 + 0.09 + 0.04)
    assert brier(np.array([1.0, 0.0]), 1) == pytest.approx(2.0)
    # bins [0.9, 1.0]: conf 0.9, 0.95 correct 1, 0 -> |0.5 - 0.925| * 2/5
    # bin [0.6, 0.7): conf 0.6, 0.65, 0.62, correct 1, 1, 1 -> |1 - 0.6233| * 3/5
    got = ece([0.9, 0.95, 0.6, 0.65, 0.62], [1, 0, 1, 1, 1])
    assert got == pytest.approx(0.425 * 2 / 5 + (1 - 1.87 / 3) * 3 / 5)
    assert ece([1.0], [1]) == 0.0  # 1.0 falls in the last bin, closed
    assert ece([], []) is None
    assert BINS == 10


def _frames() -> tuple[pd.DataFrame, dict[str, pd.DataFrame]]:
    """Two examples of one .ll view: clean rows confident and right, typo'd rows unsure."""
    lp = math.log
    rows = [
        # example, variant, word_rank, ll_logprobs, correct, gold choice
        ("1", "original", 0, [lp(0.8), lp(0.2)], True, 0),
        ("1", "w1", 1, [lp(0.4), lp(0.6)], False, 0),
        ("2", "original", 0, [lp(0.1), lp(0.9)], True, 1),
        ("2", "w1", 1, [lp(0.5), lp(0.5)], False, 1),  # a tie goes to the first option: wrong
        ("2", "w2", 2, [math.nan, lp(0.5)], False, 1),  # no probabilities: unscored
    ]
    view = pd.DataFrame(
        {
            "example_id": [r[0] for r in rows],
            "variant": [r[1] for r in rows],
            "word_rank": [r[2] for r in rows],
            "draw": 0,
            "condition": "typo",
            "ll_logprobs": [r[3] for r in rows],
            "ll_continuations": [[" A", " B"]] * len(rows),
            "parse_extra": [json.dumps({"gold_choices": [r[5]]}) for r in rows],
            "correct": [r[4] for r in rows],
        }
    )
    typo = view.loc[view["variant"] != "original"]
    pairs = pd.DataFrame(
        {
            "view": "b.ll",
            "benchmark": "b",
            "language": "english",
            "cluster": typo["example_id"].astype(int).to_numpy(),
            "example_id": typo["example_id"].to_numpy(),
            "variant": typo["variant"].to_numpy(),
            "word_rank": typo["word_rank"].astype("int64").to_numpy(),
            "draw": np.zeros(len(typo), dtype="int32"),
            "condition": "typo",
        }
    )
    generated = view.drop(columns=["ll_logprobs", "ll_continuations"])
    return pairs, {"b.ll": view, "b": generated}


def test_pairs_and_summary_on_a_tiny_frame() -> None:
    pairs, views = _frames()
    table = calibration_pairs(pairs, views)
    assert table["view"].unique().tolist() == ["b.ll"]  # the generated view has no probabilities
    assert table["confidence_perturbed"].iloc[:2].tolist() == pytest.approx([0.6, 0.5])
    assert table["brier_original"].tolist() == pytest.approx([0.08, 0.02, 0.02])
    s = calibration_summary(table, level=0.95)["b.ll"]
    assert (s["n"], s["n_unscored"], s["n_examples"]) == (2, 1, 2)
    # clean: conf 0.8 and 0.9, both right -> ECE mean(0.2, 0.1); typo'd: 0.6, 0.5 wrong
    assert s["ece_original"] == pytest.approx(0.15)
    assert s["ece_perturbed"] == pytest.approx(0.55)
    assert s["ece_delta"] == pytest.approx(0.40)
    assert s["brier_original"] == pytest.approx((0.08 + 0.02) / 2)
    assert s["brier_perturbed"] == pytest.approx((2 * 0.36 + 2 * 0.25) / 2)
    assert s["ece_ci_low"] <= s["ece_delta"] <= s["ece_ci_high"]
    assert s["brier_ci_low"] <= s["brier_delta"] <= s["brier_ci_high"]
    kl_1 = 0.8 * math.log(0.8 / 0.4) + 0.2 * math.log(0.2 / 0.6)
    kl_2 = 0.1 * math.log(0.1 / 0.5) + 0.9 * math.log(0.9 / 0.5)
    assert table["choice_kl"].iloc[:2].tolist() == pytest.approx([kl_1, kl_2])
    assert s["choice_kl"] == pytest.approx((kl_1 + kl_2) / 2)
    assert s["n_choice_kl_infinite"] == 0


def test_intervals_cover_a_planted_truth() -> None:
    """A small coverage check (perf/calibration_coverage.py prints the full table)."""
    t = truth("overconfident_blur", examples=100_000)
    rng = np.random.default_rng(5)
    hits_ece, hits_brier, hits_kl, reps = 0, 0, 0, 60
    for r in range(reps):
        s = calibration_study("overconfident_blur", rng, examples=200, draws=1)
        low, high = ece_difference_interval(
            s.conf_clean, s.correct_clean, s.conf_typo, s.correct_typo, s.clusters,
            level=0.95, seed=r, samples=199,
        )  # fmt: skip
        hits_ece += low <= t["ece_delta"] <= high
        b = clustered_mean_interval(s.brier_typo - s.brier_clean, s.clusters, level=0.95)
        hits_brier += b.low <= t["brier_delta"] <= b.high
        k = bootstrap_t_mean_interval(s.kl, s.clusters, level=0.95, seed=r, samples=199)
        hits_kl += k.low <= t["choice_kl"] <= k.high
    # 95% nominal; 60 replications: a binomial 99.9% lower bound is about 0.84
    assert hits_ece / reps >= 0.84
    assert hits_brier / reps >= 0.84
    assert hits_kl / reps >= 0.84


def test_score_part_writes_readouts_only_with_log_likelihood_views(tmp_path) -> None:
    pairs, views = _frames()
    paths = ProjectPaths(tmp_path)
    params = {"scoring": {"calibration": True, "top_logprobs": 0}}
    part = scoring(params)
    inputs = ScoreInputs("m", paths, views, pairs, 0.95)
    figures = part.figures(inputs)
    part.write(inputs, figures)
    written = json.loads(readouts_paths.metrics(paths, "m").read_text())
    assert written["calibration"]["b.ll"]["n"] == 2
    assert part.lines(figures)[0].startswith("calibration (b.ll): ECE 0.1500 -> 0.5500")
    # generation only: nothing to calibrate, no file (and a stale one goes)
    only_generated = ScoreInputs("m", paths, {"b": views["b"]}, pairs, 0.95)
    assert part.figures(only_generated) is None
    part.write(only_generated, None)
    assert not readouts_paths.metrics(paths, "m").exists()
    off = scoring({"scoring": {"calibration": False, "top_logprobs": 0}})
    assert off.figures(inputs) is None


def test_report_section() -> None:
    pairs, views = _frames()
    summary = calibration_summary(calibration_pairs(pairs, views), level=0.95)
    data = ReportData()
    assert calibration_section(data) is None
    data.metrics["metrics/m/readouts.json"] = {"calibration": summary}
    data.metrics["metrics/m/b.json"] = {"n": 3}
    html = calibration_section(data)
    assert html is not None and "calibration-table" in html and "b.ll" in html
    assert "10 fixed equal-width" in html


def test_docstring_examples_hold() -> None:
    import doctest

    from evalpipe.scoring import calibration

    assert doctest.testmod(calibration).failed == 0


def test_planted_probabilities_through_the_scoring_path(tmp_path) -> None:
    """Outputs with planted choice probabilities -> Parquet -> log-likelihood scoring -> the
    pairs table -> the readouts: clean rows put 0.7 on the gold, typo'd rows 0.4 on the gold
    and 0.5 on the next label."""
    spec = get_spec("mmlu")
    labels = list(spec.labels)
    frame = make_outputs("mmlu", n_examples=12).reset_index(drop=True)
    logprobs = []
    for gold, variant in zip(frame["answer"], frame["variant"], strict=True):
        g = labels.index(gold)
        if variant == "original":
            p = [0.1] * 4
            p[g] = 0.7
        else:
            p = [0.05] * 4
            p[g], p[(g + 1) % 4] = 0.4, 0.5
        logprobs.append([math.log(v) for v in p])
    requests, _ = loglikelihood_requests(spec, frame["prompt"].tolist())
    results = [Loglikelihood(lp, 1, False) for row in logprobs for lp in row]
    outputs = pd.concat([frame, loglikelihood_columns(spec, requests, results)], axis=1)
    path = tmp_path / "mmlu.parquet"
    atomic.write_parquet(path, outputs)
    scored = score_loglikelihood(pd.read_parquet(path), spec, normalised=False)
    views = {"mmlu.ll": scored}
    pairs = build_pairs(views, model="m")
    s = calibration_summary(calibration_pairs(pairs, views), level=0.95)["mmlu.ll"]
    n_typo = int((pairs["view"] == "mmlu.ll").sum())
    assert s["n"] == n_typo and s["n_unscored"] == 0
    assert s["accuracy_original"] == 1.0 and s["accuracy_perturbed"] == 0.0
    assert s["ece_original"] == pytest.approx(0.3)
    assert s["ece_perturbed"] == pytest.approx(0.5)
    assert s["brier_original"] == pytest.approx(0.09 + 3 * 0.01)
    assert s["brier_perturbed"] == pytest.approx(0.36 + 0.25 + 2 * 0.0025)
    assert s["brier_ci_low"] == pytest.approx(s["brier_delta"])  # no spread: a point
    assert s["pairs_per_example"] == pytest.approx(n_typo / s["n_examples"])
    kl = 0.7 * math.log(0.7 / 0.4) + 0.1 * math.log(0.1 / 0.5) + 2 * 0.1 * math.log(0.1 / 0.05)
    assert s["choice_kl"] == pytest.approx(kl)


def test_choice_kl_edges() -> None:
    assert choice_kl([0.5, 0.5], [0.5, 0.5]) == 0.0
    assert choice_kl([0.0, 1.0], [0.5, 0.5]) == pytest.approx(math.log(2))
    assert choice_kl([0.5, 0.5], [1.0, 0.0]) == math.inf  # counted, never a silent zero
    assert math.isnan(choice_kl(None, [1.0]))
    assert math.isnan(choice_kl([0.5, 0.5], [1.0]))
