"""The report's dose-response and transitions sections (evalpipe.report.dose): shown with their
data, omitted without it (so the default words design's report gains only the transitions)."""

from __future__ import annotations

import pandas as pd

from evalpipe.report import build_report
from evalpipe.report.dose import dose_section, transitions_section
from evalpipe.scoring.transitions import DOSE_COLUMNS
from tests.report_fixtures import MODEL, full_data, html_table, section_body, section_ids

COUNT_SUMMARY = {
    "benchmark": "gsm8k", "language": "english", "design": "count", "examples": 20, "draws": 1,
    "counts": [1, 8], "eligible_words": 150, "rows_by_k": {"1": 20, "8": 14},
    "shortfall": {"1": 0, "8": 6}, "targeting": {"edits": 132, "inside_target": 132, "share": 1.0},
}  # fmt: skip


def _dose() -> pd.DataFrame:
    rows = []
    for scope, bench in (("pooled", None), ("benchmark", "gsm8k")):
        for k, acc, low, high in ((0, 0.8, None, None), (1, 0.7, -0.2, 0.0), (8, 0.4, -0.6, -0.2)):
            rows.append({"model": MODEL, "scope": scope, "language": "english", "benchmark": bench,
                         "n_typos": k, "n": 20 if k < 8 else 14, "n_examples": 20 if k < 8 else 14,
                         "accuracy_original": 0.8, "accuracy_perturbed": acc, "delta": acc - 0.8,
                         "ci_low": low, "ci_high": high, "answer_change": 0.8 - acc})  # fmt: skip
    return pd.DataFrame(rows, columns=DOSE_COLUMNS)


def _with_transitions(details: dict) -> dict:
    details = {k: dict(v) for k, v in details.items()}
    details["jnli"].update(right_right=20, right_wrong=8, wrong_right=2, wrong_wrong=10,
                           answer_change=0.3, gate="fail")  # fmt: skip
    return details


def test_dose_section_is_omitted_without_a_count_design_summary():
    assert dose_section(_dose(), {}) is None
    assert dose_section(_dose(), {"gsm8k": {**COUNT_SUMMARY, "design": "words"}}) is None
    data = full_data()
    data.study_inputs["dose"] = _dose()
    assert "dose" not in section_ids(build_report(data))


def test_dose_section_shows_accuracy_by_k_and_the_shortfall():
    data = full_data()
    data.study_inputs["dose"] = _dose()
    data.perturb_summaries = {"gsm8k": COUNT_SUMMARY}
    data.robustness = _with_transitions(data.robustness)
    page = build_report(data)
    ids = section_ids(page)
    assert ids.index("models") < ids.index("dose") < ids.index("transitions") < ids.index("words")
    _, pooled, _ = html_table(page, "dose-pooled")
    assert [r["edited words (k)"] for r in pooled] == ["0", "1", "8"]
    assert [r["accuracy, typo'd"] for r in pooled] == ["0.800", "0.700", "0.400"]
    assert pooled[2]["interval (paired, clustered on the example)"] == "[-0.600, -0.200]"
    _, per_benchmark, _ = html_table(page, "dose-benchmarks")
    assert {r["benchmark"] for r in per_benchmark} == {"gsm8k"}
    _, short, _ = html_table(page, "dose-shortfall")
    assert [(r["k"], r["rows"], r["shortfall"], r["edits on target"]) for r in short] == [
        ("1", "20", "0", "132/132"),
        ("8", "14", "6", "132/132"),
    ]


def test_dose_section_says_when_the_table_is_missing():
    body = dose_section(None, {"gsm8k": COUNT_SUMMARY})
    assert "data/impact/dose.parquet is missing" in body and "dose-shortfall" in body


def test_transitions_section_shows_the_four_cells_and_answer_change_per_view():
    data = full_data()
    data.robustness = _with_transitions(data.robustness)
    page = build_report(data)
    _, rows, _ = html_table(section_body(page, "transitions"), "transitions")
    assert len(rows) == 1  # gsm8k's details have no transition counts: no row
    row = rows[0]
    assert row["view"] == "jnli" and row["pairs"] == "40"
    assert (row["right → right"], row["right → wrong"], row["wrong → right"],
            row["wrong → wrong"]) == ("20", "8", "2", "10")  # fmt: skip
    assert row["right → wrong share"] == "0.200" and row["answer changed"] == "0.300"
    assert row["gate"] == "fail"


def test_transitions_section_is_omitted_without_transition_counts():
    data = full_data()
    assert transitions_section(data.robustness, MODEL) is None
    assert "transitions" not in section_ids(build_report(data))
