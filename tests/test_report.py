"""The report's HTML builders on small frames whose every value is known."""

from __future__ import annotations

import html
import re
import xml.etree.ElementTree as ET

import numpy as np
import pandas as pd
import pytest
from scipy.stats import binomtest

from evalpipe.report import ReportData, ReportOptions, build_figures, build_report
from evalpipe.report import html as h
from evalpipe.report.accuracy import headline_rows, parse_status_rows
from evalpipe.report.answer import most_harmful
from evalpipe.report.compare import build_comparison, diff_metrics, flatten_metrics, word_changes
from evalpipe.report.data import by_model
from evalpipe.report.examples import highlight_edits, pick_examples
from evalpipe.report.svg import ForestRow, forest_plot, nice_ticks
from tests.report_fixtures import (
    MODEL,
    full_data,
    header_titles,
    html_table,
    pairs_frame,
    robustness,
    scored_frame,
    section_body,
    section_ids,
    words_frame,
)

SVG_NS = "{http://www.w3.org/2000/svg}"


def external_references(page: str) -> list[str]:
    """Every URL the page could fetch: src/href attributes and CSS url(), except in-page anchors
    and the SVG namespace (an identifier, never fetched)."""
    refs = re.findall(r'(?:src|href)\s*=\s*"([^"#][^"]*)"', page)
    refs += re.findall(r"url\(([^)]*)\)", page)
    return [r for r in refs if r != "http://www.w3.org/2000/svg"]


# --- formatting and tables ------------------------------------------------------------------


def test_missing_values_show_as_na_and_numbers_keep_their_type():
    assert h.fmt_num(None) == "n/a"
    assert h.fmt_num(float("nan")) == "n/a"
    assert h.fmt_num(pd.NA) == "n/a"
    assert h.fmt_num(np.int64(46)) == "46"
    assert h.fmt_num(0.12345) == "0.123"
    assert h.fmt_signed(-0.1) == "-0.100"
    assert h.fmt_ci(0.1, None) == "n/a"
    assert h.fmt_p(0.00001) == "1.00e-05"


def test_table_escapes_cells_and_gives_numbers_a_sort_value():
    out = h.table(
        [h.text("word", "word"), h.num("delta", "delta")],
        [{"word": "<b>&", "delta": -0.25}, {"word": "x"}],
        sortable=True,
        table_id="t",
    )
    assert "&lt;b&gt;&amp;" in out and "<b>&" not in out
    assert 'class="sortable"' in out and 'id="t"' in out
    assert 'data-v="-0.25"' in out
    assert 'data-v=""' in out and ">n/a<" in out  # the row without a delta


# --- statistics shown in the report --------------------------------------------------------


@pytest.mark.parametrize(("k", "n"), [(0, 10), (8, 10), (10, 10), (27, 40), (1, 1)])
def test_accuracy_intervals_are_scipys_wilson_intervals(k, n):
    data = ReportData(robustness={"m": {"b": {"n": n, "accuracy_original": k / n}}})
    (row,) = headline_rows(data)
    ref = binomtest(k, n).proportion_ci(confidence_level=0.95, method="wilson")
    assert row["accuracy_original_low"] == pytest.approx(ref.low, abs=1e-12)
    assert row["accuracy_original_high"] == pytest.approx(ref.high, abs=1e-12)


def test_headline_adds_accuracy_intervals_and_keeps_absent_keys_absent():
    rows = {r["benchmark"]: r for r in headline_rows(full_data())}
    jnli = rows["jnli"]
    ref = binomtest(24, 40).proportion_ci(method="wilson")  # 0.6 of 40 pairs
    assert jnli["accuracy_original_low"] == pytest.approx(ref.low)
    assert jnli["accuracy_strict"] == 0.4
    assert jnli["model"] == MODEL and jnli["language"] == "japanese"
    assert "accuracy_strict" not in rows["gsm8k"]


def test_flat_metrics_are_attributed_to_the_run_model_and_nested_ones_kept():
    flat = by_model(robustness(), "m1")
    assert list(flat) == ["m1"] and set(flat["m1"]) == {"jnli", "gsm8k"}
    nested = by_model({"m1": robustness(), "m2": {"jnli": robustness()["jnli"]}}, "x")
    assert sorted(nested) == ["m1", "m2"] and list(nested["m2"]) == ["jnli"]


def test_most_harmful_sorts_by_delta_with_missing_last_and_ties_by_word():
    frame = pd.DataFrame({"word": ["b", "a", "c", "d"], "delta": [-0.1, -0.1, None, -0.3]})
    assert list(most_harmful(frame, top=4)["word"]) == ["d", "a", "b", "c"]
    assert list(most_harmful(frame, top=2)["word"]) == ["d", "a"]


def test_parse_status_counts_per_prompt_kind_and_truncation():
    rows = {r["prompts"]: r for r in parse_status_rows({"jnli": scored_frame()})}
    assert rows["original"]["n"] == 2
    assert rows["original"]["strict"] == 1 and rows["original"]["unparsed"] == 1
    assert rows["original"]["truncated"] == 1
    assert rows["perturbed"]["fallback"] == 1 and rows["perturbed"]["fallback_share"] == 1.0


def test_examples_prefer_answers_that_flipped_from_right_to_wrong():
    frame = scored_frame().assign(model=MODEL)
    extra = frame.iloc[[1]].assign(example_id="e2", variant="猫", word_rank=9)
    scored = pd.concat([frame, extra], ignore_index=True)
    shown = pick_examples(pairs_frame(scored).iloc[::-1], scored, limit=2)
    assert [p["example_id"] for _, p in shown] == ["e1", "e2"]  # e1 flipped, e2 was wrong before
    assert bool(shown[0][0]["correct"]) is True
    assert [p["variant"] for _, p in shown] == ["日本", "猫"]  # the texts of the pair's own row
    assert pick_examples(pairs_frame(scored), scored, limit=0) == []


# --- edit highlighting -----------------------------------------------------------------------


def test_each_edit_is_marked_in_both_texts():
    text = "the cat and the dog"
    edits = [
        {"start": 12, "end": 15, "original": "the", "perturbed": "teh", "op": "replace"},
        {"start": 0, "end": 3, "original": "the", "perturbed": "th", "op": "delete"},
    ]
    before, after, problems = highlight_edits(text, edits)
    assert problems == []
    assert before.count("<del") == 2 and after.count("<ins") == 2
    assert re.sub(r"<[^>]+>", "", before) == text
    assert re.sub(r"<[^>]+>", "", after) == "th cat and teh dog"


def test_japanese_offsets_are_code_points_and_text_is_escaped():
    text = "<b>日本の首都"
    edit = {"start": 3, "end": 5, "original": "日本", "perturbed": "日木", "op": "replace"}
    before, after, _ = highlight_edits(text, [edit])
    assert before.startswith("&lt;b&gt;<del") and ">日本</del>の首都" in before
    assert ">日木</ins>の首都" in after


def test_an_edit_whose_offsets_do_not_match_is_reported_not_marked():
    _, after, problems = highlight_edits(
        "abc", [{"start": 0, "end": 2, "original": "xy", "perturbed": "z"}]
    )
    assert after == "abc" and len(problems) == 1 and "'xy'" in problems[0]


# --- figures ---------------------------------------------------------------------------------


def test_nice_ticks_cover_the_range_with_round_steps():
    assert nice_ticks(-0.3, 0.0) == [-0.3, -0.2, -0.1, 0.0]
    assert nice_ticks(0.0, 1.0, 4) == [0.0, 0.25, 0.5, 0.75, 1.0]
    ticks = nice_ticks(-0.37, 0.12)
    assert ticks[0] <= -0.37 and ticks[-1] >= 0.12


def test_forest_plot_is_valid_svg_with_one_marker_per_row():
    rows = [
        ForestRow("of", -0.25, -0.4, -0.1, note="rank 2"),
        ForestRow("and", 0.05, -0.05, 0.15),
        ForestRow("to", None),
        ForestRow("日本", -0.05, -0.2, 0.0, weak=True),
    ]
    svg = forest_plot(rows, title="t", x_label="x")
    root = ET.fromstring(svg)
    markers = root.findall(f"{SVG_NS}rect[@width='8']")
    assert len(markers) == 3  # the row without an estimate gets "n/a", no marker
    assert [m.get("fill") for m in markers] == ["#b42318", "#067647", "#ffffff"]  # hollow = weak
    texts = [t.text for t in root.iter(f"{SVG_NS}text")]
    assert "日本" in texts and "rank 2" in texts and "n/a" in texts
    assert svg == forest_plot(rows, title="t", x_label="x")


def test_figures_are_standalone_svg_files_for_each_declared_language():
    figures = build_figures(full_data(), languages=["english", "japanese", "german"])
    assert set(figures) == {
        "accuracy.svg",
        "agreement.svg",
        "words_english.svg",
        "words_japanese.svg",
        "words_german.svg",
    }
    for svg in figures.values():
        ET.fromstring(svg)  # well-formed XML, as DVC's image plots need
    assert "する" in figures["words_japanese.svg"]
    assert "no per-word impact rows" in figures["words_german.svg"]


# --- the whole report ------------------------------------------------------------------------


def test_report_has_every_section_and_no_external_reference():
    page = build_report(full_data(), ReportOptions(top_words=2))
    for anchor in ("provenance", "headline", "words", "classification", "parsing", "examples"):
        assert f'<section id="{anchor}">' in page
    assert external_references(page) == []
    assert '<meta charset="utf-8">' in page and "Noto Sans CJK JP" in page
    assert "default-src 'none'" in page
    # model output is text, never markup
    assert "<script>alert(1)</script>" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    # top_words=2: the English forest plot shows "of" and "the", not "and"
    english_plot = page.partition("english (wordfreq), " + MODEL)[2].partition("</svg>")[0]
    assert ">of<" in english_plot and ">the<" in english_plot and ">and<" not in english_plot
    assert 'id="words-english-wordfreq"' in page and 'id="words-japanese-wordfreq"' in page
    assert "為る" in page and "sample_008" in page


def test_element_ids_are_unique():
    a = build_report(full_data())
    b = build_comparison(
        full_data(), full_data(), label_a="a", label_b="b", metrics_diff={}, diff_source="t"
    )
    for page in (a, b):
        ids = re.findall(r'\sid="([^"]+)"', page)
        assert len(ids) == len(set(ids)), sorted(i for i in ids if ids.count(i) > 1)


def test_report_bytes_depend_only_on_the_inputs():
    assert build_report(full_data()) == build_report(full_data())


def test_each_missing_input_is_named_and_the_rest_still_renders():
    data = full_data()
    data.words = None
    data.scored = {}
    data.kappa_report = None
    data.agreement = None
    page = build_report(data)
    assert "data/impact/words.parquet is missing" in page
    assert "data/scored/*.parquet are missing" in page
    assert "run `dvc repro agreement`" in page
    assert 'id="headline"' in page  # metrics still there
    empty = build_report(ReportData())
    assert empty.count('class="missing"') >= 5


def test_strict_and_truncation_columns_say_na_when_the_metrics_lack_them():
    data = full_data()
    data.robustness = {"gsm8k": robustness()["gsm8k"]}
    page = build_report(data)
    assert "Not in this metrics file (shown as n/a): accuracy_strict" in page


# --- comparison ------------------------------------------------------------------------------


def test_flatten_metrics_keeps_numbers_and_nulls_only():
    flat = flatten_metrics({"jnli": {"delta": -0.1, "pdr": None, "name": "x", "ok": True}})
    assert flat == {"jnli.delta": -0.1, "jnli.pdr": None}


def test_metrics_diff_lists_changed_keys_only():
    diff = diff_metrics(
        {"m.json": {"a": {"x": 1, "y": 2}}, "gone.json": {"z": 1}},
        {"m.json": {"a": {"x": 1, "y": 3, "w": 0.5}}, "gone.json": None},
    )
    assert diff == {
        "gone.json": {"z": {"old": 1, "new": None, "diff": None}},
        "m.json": {
            "a.w": {"old": None, "new": 0.5, "diff": None},
            "a.y": {"old": 2, "new": 3, "diff": 1},
        },
    }


def test_word_changes_join_both_sides_and_sort_by_size_of_change():
    a = words_frame()
    b = a.copy()
    b.loc[b["word"] == "and", "delta"] = -0.35  # +0.05 -> -0.35: change -0.4
    b = b[b["word"] != "the"]
    changes = word_changes(a, b)
    first = changes.iloc[0]
    assert first["word"] == "and" and first["change"] == pytest.approx(-0.4)
    the = changes[changes["word"] == "the"].iloc[0]
    assert np.isnan(the["delta_b"]) and the["delta_a"] == -0.1


def test_comparison_report_shows_both_sides_and_the_metrics_diff():
    a, b = full_data(), full_data()
    b.robustness = {**robustness(), "jnli": {**robustness()["jnli"], "delta": -0.05}}
    diff = diff_metrics(
        {"metrics/robustness.json": a.robustness}, {"metrics/robustness.json": b.robustness}
    )
    page = build_comparison(
        a, b, label_a="main", label_b="workspace", metrics_diff=diff, diff_source="test"
    )
    assert "main vs workspace" in page
    assert "jnli" in page and "+0.100" in page  # delta -0.15 -> -0.05
    assert 'id="metrics-diff-table"' in page and external_references(page) == []


def test_report_reads_the_impact_stage_tables_as_written():
    """The real impact tables (evalpipe.scoring.word_impact) feed the report unchanged."""
    from evalpipe.scoring.word_impact import ImpactSettings
    from tests.report_fixtures import study_frames
    from tests.scoring_fixtures import impact_of

    scored, perturbed, words = study_frames()
    tables = impact_of(
        scored,
        perturbed,
        words,
        languages={"jnli": "japanese"},
        settings=ImpactSettings(level=0.95, small_n=5),
    )
    data = ReportData(
        provenance={"models": [MODEL]},
        words=tables[0],
        operations=tables[1],
        scripts=tables[2],
        scored=scored,
    )
    page = build_report(data, ReportOptions(top_words=3))
    plot = page.partition("japanese (wordfreq), " + MODEL)[2].partition("</svg>")[0]
    labels = re.findall(r'text-anchor="end">([^<]+)<', plot)
    assert labels[0].startswith("日本")  # lost 8 of 12 answers: the most harmful word
    assert labels[-1].startswith("の")  # never hurt
    assert "rank 2" in plot
    assert 'id="operations-japanese-wordfreq"' in page and ">replace<" in page
    assert 'id="scripts-japanese-wordfreq"' in page
    # the first screen shows the same most harmful word with the table's own interval and p
    top = tables[0][(tables[0]["scope"] == "pooled") & (tables[0]["variant"] == "日本")].iloc[0]
    _, first, _ = html_table(page, "answer-words-japanese-" + h.slug(MODEL, "wordfreq"))
    assert first[0]["word"].startswith("日本")
    ci_header = next(k for k in first[0] if k.startswith("95% CI"))
    assert first[0][ci_header] == h.fmt_ci(top["ci_low"], top["ci_high"])
    assert first[0]["p Holm"] == h.fmt_p(top["p_holm"])
    # whichever columns the impact stage writes, the typo kinds say which rows to read
    adjusted = any("adjusted" in str(c) for c in tables[1].columns)
    assert ("Read the adjusted columns" in page) == adjusted
    assert (
        "Marginal rows only" in section_body(page, "kinds").split("By script class")[0]
    ) != adjusted
    figures = build_figures(data, ReportOptions(top_words=3), languages=["japanese"])
    assert "日本" in figures["words_japanese.svg"]


def test_examples_show_the_pairs_with_the_texts_of_their_scored_rows():
    data = full_data()
    page = build_report(data)
    assert ">日本</del>の首都は東京です。" in page and ">日木</ins>の首都は東京です。" in page
    assert ">nan<" not in page  # an unparsed prediction shows as n/a
    data.pairs = None  # the pairs choose the examples: without them the section says so
    body = section_body(build_report(data), "examples")
    assert "pairs.parquet is missing" in body and '<del class="edit"' not in body


def test_a_language_without_word_rows_is_named():
    data = full_data()
    data.words = data.words[data.words["language"] == "english"]
    assert "japanese: no per-word rows" in build_report(data)


def test_headline_only_metrics_are_read_as_one_model():
    """metrics/classification.json keeps four numbers per benchmark: still a flat file."""
    headline = {
        "jnli": {"accuracy": 0.5, "f1_macro": 0.3, "precision_macro": 0.2, "recall_macro": 0.4}
    }
    assert by_model(headline, "m1") == {"m1": headline}


def test_control_characters_in_model_output_become_visible_symbols():
    assert h.esc("a\x07b\x00\tc\n\x7f") == "a\u2407b\u2400\tc\n\u2421"


def test_models_section_puts_models_side_by_side_with_method_agreement():
    from evalpipe.report.accuracy import models_section

    stats = {"n": 10, "accuracy_original": 0.6, "accuracy_perturbed": 0.5, "delta": -0.1,
             "ci_low": -0.2, "ci_high": 0.0, "unparsed_rate": 0.1}  # fmt: skip
    agreement = {"n": 10, "agreement": 0.7, "kappa": 0.4, "accuracy_generate": 0.6,
                 "accuracy_loglikelihood": 0.6, "generate_unparsed": 1}  # fmt: skip
    robustness = {
        "small": {"jnli": stats, "jnli.ll": {**stats, "method_agreement": agreement}},
        "large": {"jnli": {**stats, "delta": -0.3}},
    }
    data = ReportData(robustness=robustness, provenance={"models": ["small", "large"]})
    body = models_section(data)
    assert 'id="models-table"' in body
    # one row per (benchmark, method); a column group per model, sorted by name
    assert body.index("large: acc. original") < body.index("small: acc. original")
    assert body.count("<td>jnli</td>") >= 2 and "loglikelihood" in body
    assert "-0.300" in body and "-0.100" in body
    assert "Generated vs log-likelihood answers" in body and "0.700" in body
    alone = models_section(ReportData(robustness={"small": {"jnli": stats}},
                                      provenance={"models": ["small"]}))  # fmt: skip
    assert "Generated vs log-likelihood" not in alone and "1 model(s)" in alone


# --- the first screen: the answer ------------------------------------------------------------

WORDS_EN = "answer-words-english-" + h.slug(MODEL, "wordfreq")
BENCH_JA = "answer-benchmarks-japanese-" + h.slug(MODEL)


def test_the_answer_comes_first_and_provenance_last():
    page = build_report(full_data())
    ids = section_ids(page)
    assert ids[0] == "answer" and ids[-1] == "provenance"
    first_heading = re.search(r"<h2>([^<]+)</h2>", page.split("</h1>", 1)[1]).group(1)
    assert first_heading == "The answer: which typos cost most accuracy"
    # per language and model, in that order
    answer = section_body(page, "answer")
    groups = re.findall(r"<h3>([^<]+)</h3>", answer)
    assert groups == [f"english · {MODEL}", f"japanese · {MODEL}"]
    # the parameters and content hashes are in the last section only
    assert "0123456789ab" in section_body(page, "provenance")
    assert "0123456789ab" not in page.split('<section id="provenance">')[0]


def test_the_answer_lists_the_most_harmful_words_with_interval_and_holm_p():
    page = build_report(full_data())
    headers, rows, _ = html_table(page, WORDS_EN)
    assert headers == ["word", "freq. rank", "pairs", "accuracy change", "95% CI",
                       "MDE (80% power)", "p Holm", "unparsed, perturbed", "small n"]  # fmt: skip
    # pooled rows only (the gsm8k row of "of" is a detail), most harmful first, small n last
    assert [r["word"] for r in rows] == ["of", "the", "and", "to"]
    assert rows[0] == {**rows[0], "accuracy change": "-0.250", "95% CI": "[-0.400, -0.100]",
                       "p Holm": "0.010"}  # fmt: skip
    summary = section_body(page, "answer").split(WORDS_EN)[0]
    assert "Most harmful: of, accuracy change -0.250 [-0.400, -0.100], Holm p 0.010" in summary
    assert "1 of 3 words lost accuracy at Holm p &lt; 0.05" in summary  # "to" has no delta


def test_no_most_harmful_headline_from_words_with_too_few_pairs():
    from evalpipe.report.answer import word_summary

    one_pair = pd.DataFrame({"word": ["that", "of"], "scope": "pooled", "delta": [-1.0, -0.2],
                             "ci_low": [-1.0, -0.9], "ci_high": [0.5, 0.4], "p_holm": [1.0, 1.0],
                             "small_n": [True, True], "word_rank": [9, 2], "n": [1, 3]})  # fmt: skip
    summary = word_summary(one_pair)
    assert "Most harmful" not in summary and "too few to name the most harmful" in summary
    enough = one_pair.assign(small_n=[True, False])
    assert word_summary(enough).startswith("Most harmful: of, accuracy change -0.200")


def test_the_count_designs_answer_points_to_the_dose_response():
    from evalpipe.report.answer import answer_section

    headline = [{"model": "m", "benchmark": "gsm8k", "language": "english", "delta": -0.1,
                 "n": 10, "accuracy_original": 0.5, "accuracy_perturbed": 0.4}]  # fmt: skip
    words = pd.DataFrame(columns=["word", "model", "language", "delta", "small_n"])
    body = answer_section(words=words, headline=headline, parse=[])
    assert "perturb.design: count" in body and "Dose-response" in body
    assert "words.parquet is missing" not in body


def test_answers_cut_at_a_deliberate_budget_but_read_are_no_distortion():
    from evalpipe.report.answer import distortion_sentences

    # jcommonsenseqa's one-token budget: every answer stops at it, and every one is read
    label = {"benchmark": "jcommonsenseqa", "unparsed_original": 0.0, "unparsed_perturbed": 0.0,
             "truncated_original": 1.0, "truncated_perturbed": 1.0}  # fmt: skip
    assert distortion_sentences([label], None) == []
    cut = {**label, "benchmark": "gsm8k", "unparsed_original": 0.3}
    assert distortion_sentences([cut], None) == [
        "gsm8k: 30% unparsed on original prompts, 100% truncated on original prompts."
    ]


def test_the_answer_ranks_benchmarks_by_accuracy_lost_with_unparsed_and_truncated_shares():
    data = full_data()
    data.robustness = {**robustness(), "jamp": {**robustness()["jnli"], "delta": -0.3}}
    data.languages["jamp"] = "japanese"
    page = build_report(data)
    _, rows, _ = html_table(page, BENCH_JA)
    assert [r["benchmark"] for r in rows] == ["jamp", "jnli"]
    jnli = rows[1]
    assert jnli["accuracy change"] == "-0.150" and jnli["95% CI"] == "[-0.250, -0.050]"
    # scored_frame: of the two original answers one is unparsed and cut at the budget; the one
    # perturbed answer parsed (fallback) and stopped
    assert jnli["unparsed: original / perturbed"] == "50% / 0%"
    assert jnli["truncated: original / perturbed"] == "50% / 0%"
    answer = section_body(page, "answer")
    assert "jnli: 50% unparsed on original prompts, 50% truncated on original prompts." in answer
    # no scored rows for gsm8k: the score stage's rate over all its answers
    _, english, _ = html_table(page, "answer-benchmarks-english-" + h.slug(MODEL))
    assert english[0]["unparsed: original / perturbed"] == "65% of all answers"
    assert "gsm8k: 65% unparsed over all answers." in answer
    # and the words: "the" has 20% unparsed answers on its perturbed prompts
    _, words, _ = html_table(page, WORDS_EN)
    assert words[1]["word"] == "the" and words[1]["unparsed, perturbed"] == "0.200"
    assert "1 of 4 words have more than 10% unparsed answers" in answer


def test_low_unparsed_and_truncated_shares_are_called_harmless():
    data = full_data()
    data.scored = {}
    data.robustness = {"jnli": {**robustness()["jnli"], "unparsed_rate": 0.02}}
    data.words = data.words.assign(unparsed_rate=0.01)
    answer = section_body(build_report(data), "answer")
    assert "stay at or below 10% everywhere here" in answer
    assert "Could distort" not in answer


def test_the_interval_method_is_named_when_the_tables_record_it():
    data = full_data()
    data.words = data.words.assign(ci_method="newcombe")
    data.robustness = {"jnli": {**robustness()["jnli"], "ci_method": "tango"}}
    page = build_report(data)
    assert "95% CI (newcombe)" in html_table(page, WORDS_EN)[0]
    assert "95% CI (tango)" in html_table(page, BENCH_JA)[0]
    assert "95% CI (tango)" in html_table(page, "headline-table")[0]
    assert "intervals: newcombe" in section_body(page, "words")


def test_without_any_input_the_answer_says_what_to_run():
    answer = section_body(build_report(ReportData()), "answer")
    assert "No answer yet" in answer and "dvc repro" in answer


# --- the language column ---------------------------------------------------------------------


def test_the_language_column_comes_from_the_data_never_from_params():
    data = full_data()  # languages as the pairs record them
    _, rows, _ = html_table(build_report(data), "headline-table")
    assert {r["benchmark"]: r["language"] for r in rows} == {"jnli": "japanese", "gsm8k": "english"}
    # without the pairs' languages: the scored rows' column; params.yaml suites are not read
    data.languages = {}
    data.provenance["params"]["benchmarks"] = {"suites": {"jnli": "english", "gsm8k": "english"}}
    _, rows, _ = html_table(build_report(data), "headline-table")
    assert {r["benchmark"]: r["language"] for r in rows} == {"jnli": "japanese", "gsm8k": "n/a"}


# --- one sign convention ---------------------------------------------------------------------


def test_every_signed_column_says_which_way_is_harm_and_harm_reads_the_same_way():
    data = full_data()
    data.operations = adjusted_operations()
    page = build_report(data)
    titled = header_titles(page)
    costs = [label for label, title in titled if "negative = " in title]
    drops = [label for label, title in titled if "positive = " in title]
    assert "adjusted change vs other kinds" in costs and "drop rate (PDR)" in drops
    assert all("change" in label for label in costs)
    assert all("drop" in label for label in drops)
    labels = re.findall(r"<th[^>]*>([^<]*)</th>", page)
    assert not {"delta", "PDR", "per-occ. impact"} & set(labels)
    # "of" lost accuracy: its change and its change per typo'd occurrence are both negative,
    # although the impact table stores per_occurrence_impact positive
    _, rows, classes = html_table(page, "words-english-wordfreq")
    i = next(i for i, r in enumerate(rows) if r["word"] == "of" and r["scope"] == "pooled")
    assert rows[i]["accuracy change"] == "-0.250"
    assert rows[i]["accuracy change per typo'd occ."] == "-0.0045"
    assert "neg" in classes[i]["accuracy change"]
    assert "neg" in classes[i]["accuracy change per typo'd occ."]


# --- typo kinds: marginal beside adjusted ----------------------------------------------------


def adjusted_operations(form: str = "prefix") -> pd.DataFrame:
    """Operations whose marginal rows differ (the words) and whose adjusted rows do not; the
    column names as the impact stage writes them (``adjusted_delta``...) or suffixed."""
    frame = full_data().operations
    columns = {
        "delta": [0.0, -0.01, 0.01],
        "ci_low": [-0.02, -0.04, -0.03],
        "ci_high": [0.02, 0.02, 0.05],
        "p": [0.9, 0.5, 0.7],
        "p_holm": [1.0, 1.0, 1.0],
        "n": [40, 35, 12],
    }
    name = (lambda c: f"adjusted_{c}") if form == "prefix" else (lambda c: f"{c}_adjusted")
    return frame.assign(
        **{name(c): v for c, v in columns.items()}, ci_method="tango+deff", design_effect=1.25
    )


@pytest.mark.parametrize("form", ["prefix", "suffix"])
def test_adjusted_estimates_sit_beside_the_marginal_ones_with_a_sentence_saying_read_them(form):
    data = full_data()
    data.operations = adjusted_operations(form)
    page = build_report(data)
    kinds = section_body(page, "kinds")
    headers, rows, _ = html_table(page, "operations-english-wordfreq")
    for label in ("marginal accuracy change", "adjusted change vs other kinds", "adjusted 95% CI",
                  "adjusted p", "adjusted p Holm", "adjusted n", "interval", "design effect"):  # fmt: skip
        assert label in headers, label
    assert headers.index("marginal accuracy change") < headers.index(
        "adjusted change vs other kinds"
    )
    # ordered by the estimate to read: the adjusted one (delete -0.01 before replace 0.0)
    assert [r["operation"] for r in rows] == ["delete", "replace"]
    assert rows[1]["marginal accuracy change"] == "-0.100"
    assert rows[1]["adjusted change vs other kinds"] == "+0.000"
    assert rows[1]["adjusted 95% CI"] == "[-0.020, 0.020]"
    assert rows[1]["adjusted n"] == "40" and rows[1]["adjusted p"] == "0.900"
    assert rows[1]["interval"] == "tango+deff" and rows[1]["design effect"] == "1.25"
    operations_part = kinds.split("By script class")[0]
    assert "Read the adjusted columns" in operations_part
    assert "confounded by the words" in operations_part
    assert "adjusted change vs other kinds by operation type" in operations_part  # forest plot
    # the scripts table carries no adjusted column: marginal only, and said so
    scripts_part = kinds.split("By script class")[1]
    assert "Marginal rows only" in scripts_part
    assert not any("adjusted" in x for x in html_table(page, "scripts-japanese-wordfreq")[0])


def test_tables_without_adjusted_columns_render_marginal_rows_and_say_so():
    page = build_report(full_data())
    headers, rows, _ = html_table(page, "operations-english-wordfreq")
    assert "accuracy change" in headers and not any("adjusted" in x for x in headers)
    assert "interval" not in headers
    assert [r["operation"] for r in rows] == ["delete", "replace"]
    assert section_body(page, "kinds").count("Marginal rows only") == 2


def test_a_kind_without_any_adjusted_estimate_plots_its_marginal_rows_and_says_why():
    data = full_data()
    ops = adjusted_operations()
    data.operations = ops.assign(adjusted_delta=None, adjusted_ci_low=None, adjusted_ci_high=None)
    kinds = section_body(build_report(data), "kinds").split("By script class")[0]
    assert "no adjusted estimate" in kinds and "nothing to compare" in kinds
    assert "marginal accuracy change by operation type" in kinds
    assert "adjusted change vs other kinds by operation type" not in kinds


def test_the_answer_has_one_block_per_language_and_model():
    data = full_data()
    other = words_frame().assign(model="b-model", delta=lambda f: f["delta"] / 2)
    data.words = pd.concat([data.words, other], ignore_index=True)
    data.robustness = {MODEL: robustness(), "b-model": {"jnli": robustness()["jnli"]}}
    data.provenance["models"] = [MODEL, "b-model"]
    page = build_report(data)
    groups = re.findall(r"<h3>([^<]+)</h3>", section_body(page, "answer"))
    assert groups == ["english · b-model", f"english · {MODEL}", "japanese · b-model",
                      f"japanese · {MODEL}"]  # fmt: skip
    _, rows, _ = html_table(page, "answer-words-english-" + h.slug("b-model", "wordfreq"))
    assert rows[0]["word"] == "of" and rows[0]["accuracy change"] == "-0.125"
    # b-model has no English benchmark figures: said, not left blank
    assert "No benchmark figures for b-model in english." in section_body(page, "answer")


def test_the_answer_does_not_call_a_word_harmful_when_no_word_lowered_accuracy():
    data = full_data()
    data.words = data.words.assign(delta=lambda f: f["delta"].abs())
    answer = html.unescape(section_body(build_report(data), "answer"))
    assert "No word's typos lowered accuracy. 0 of 3 words lost accuracy" in answer
    assert "Most harmful" not in answer.split("japanese ·")[0]


def test_bar_labels_that_would_overlap_are_slanted_and_short_ones_stay_level():
    import re

    from evalpipe.report.svg import grouped_bars

    series = [("original", "#333", [0.5] * 8), ("perturbed", "#999", [0.4] * 8)]
    long = [f"{b} · {m}" for b in ("gsm8k", "jnli", "mmlu", "jamp") for m in ("tiny-a", "tiny-b")]
    svg = grouped_bars(long, series, title="t", y_label="accuracy")
    labels = re.findall(r"<text [^>]*>([^<]*)</text>", svg)
    assert all("rotate(-35" in t for t in re.findall(r"<text [^>]*>gsm8k · tiny-a<", svg))
    assert "gsm8k · tiny-a" in labels
    height = int(re.search(r'height="(\d+)"', svg).group(1))
    assert height > 280  # room below for the slanted labels
    short = grouped_bars(["a", "b"], [(n, c, v[:2]) for n, c, v in series], title="t", y_label="y")
    assert "rotate(-35" not in short and 'height="280"' in short
