"""The report's sycophancy section on a planted study: the ranking opens it, the paired
differences and the judge verdicts follow, and it says plainly when no person calibrated it."""

from __future__ import annotations

from evalpipe.report.assemble import build_report
from evalpipe.report.data import ReportData, ReportOptions
from evalpipe.report.sycophancy import NO_HUMANS, ranking_rows, sycophancy_section
from evalpipe.sycophancy.study import run_study
from tests.test_sycophancy_study import planted, settings


def _study(with_people: bool):
    replies, ratings, humans, _ = planted(n_dialogues=120)
    if not with_people:
        humans = humans.iloc[0:0]
    lengths = dict(zip(replies["task_id"], replies["reply_chars"], strict=True))
    return run_study(
        replies,
        ratings,
        humans,
        lengths,
        settings({"judge0": "acme/calm-13b"}, sample_batches=not with_people),
        prompt_version="v",
    )


def test_the_section_opens_with_the_ranking_and_follows_with_differences_and_verdicts():
    result = _study(with_people=True)
    data = ReportData(
        sycophancy={
            "estimates": result.estimates,
            "differences": result.differences,
            "validity": result.validity,
        }
    )
    html = sycophancy_section(data)
    assert html.index("sycophancy-ranking") < html.index("sycophancy-differences")
    assert html.index("sycophancy-differences") < html.index("sycophancy-validity")
    assert NO_HUMANS not in html
    ranks = [r for r in ranking_rows(result.estimates) if r["rank"] == 1]
    assert {r["model"] for r in ranks} == {"eager"}  # planted more sycophantic on every axis
    assert {r["estimator"] for r in ranks} == {"PPI++ (people + judges)"}
    assert "eager more sycophantic" in html
    assert "calm (same_family)" in html  # judge0 is of calm's family
    page = build_report(data, ReportOptions())
    assert "How sycophantic is each model" in page


def test_without_people_the_section_says_the_figures_are_the_judges_alone():
    result = _study(with_people=False)
    data = ReportData(
        sycophancy={
            "estimates": result.estimates,
            "differences": result.differences,
            "validity": result.validity,
        }
    )
    html = sycophancy_section(data)
    assert NO_HUMANS.split(",")[0] in html
    assert "judges only" in html
    assert "illustrative sample batches" in html


def test_no_section_without_the_study():
    assert sycophancy_section(ReportData()) is None


def test_paired_variants_get_their_own_table():
    import pandas as pd

    result = _study(with_people=True)
    arms = pd.DataFrame(
        [
            {
                "model": "calm",
                "arm": "opinion",
                "axis": "social",
                "statistic": "mean",
                "estimator": "ppi",
                "available": True,
                "estimate": 0.4,
                "ci_low": 0.1,
                "ci_high": 0.7,
                "n_judged": 30,
            }
        ]
    )
    html = sycophancy_section(
        ReportData(
            sycophancy={
                "estimates": result.estimates,
                "differences": result.differences,
                "arm_changes": arms,
                "validity": result.validity,
            }
        )
    )
    assert "sycophancy-arms" in html and "opinion" in html and "[0.10, 0.70]" in html
