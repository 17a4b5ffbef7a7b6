"""The report's typo section on real perturb output: the typo model and counts per benchmark from
the perturb summaries, and highlighted examples of every kind (keyboard and romaji slips,
transpositions, kana-kanji conversions)."""

from __future__ import annotations

import functools
import html
import re

import pytest

from evalpipe import atomic
from evalpipe.report.typos import OPS, changed_spans, pick_typo_examples, typos_section
from tests.report_fixtures import html_table, section_body, section_ids, typo_sets
from tests.test_report_stage import lay_out, run

MARKED = re.compile(
    r'<span class="typo-word">(.*?)<mark class="(typo|slot)"[^>]*>(.*?)</mark>(.*?)</span>'
)


@functools.cache
def keyboard_sets():
    return typo_sets("keyboard")


@functools.cache
def uniform_sets():
    return typo_sets("uniform", transpose=0.0, conversion=0.0)


def records(sets) -> list[tuple[str, dict]]:
    return [
        (name, dict(edit))
        for name, (frame, _) in sets.items()
        for edits in frame["perturbations"]
        for edit in edits
    ]


def test_the_fixture_makes_every_kind_of_typo():
    """The checks below need each kind present, in both languages where the kind exists."""
    made = {(name, e["op"]) for name, e in records(keyboard_sets())}
    assert {op for _, op in made} == set(OPS)
    assert ("jsquad", "conversion") in made and ("mmlu", "replace") in made


@pytest.mark.parametrize("sets", [keyboard_sets, uniform_sets], ids=["keyboard", "uniform"])
def test_the_marked_span_is_exactly_what_the_typo_changed(sets):
    for _, edit in records(sets()):
        (a0, a1), (b0, b1) = changed_spans(edit)
        before, after = edit["original"], edit["perturbed"]
        assert a0 == b0 and before[:a0] == after[:b0]  # the same text before the change
        assert before[a1:] == after[b1:]  # and after it
        assert before[a0:a1] == (edit["original_char"] or "")
        assert after[b0:b1] == (edit["new_char"] or "")
        assert before[a0:a1] != after[b0:b1]


def test_a_record_without_position_is_marked_from_the_texts():
    # an older record, or one whose characters do not match its texts
    assert changed_spans({"original": "house", "perturbed": "hiuse"}) == ((1, 2), (1, 2))
    assert changed_spans(
        {"original": "機会", "perturbed": "機械", "position": 0, "original_char": "x"}
    ) == ((1, 2), (1, 2))


def test_examples_are_chosen_the_same_way_whatever_the_row_order():
    sets = keyboard_sets()
    frames = {name: frame for name, (frame, _) in sets.items()}
    shuffled = {name: frame.sample(frac=1.0, random_state=3) for name, frame in frames.items()}
    first = pick_typo_examples(frames, per_kind=3)
    assert first == pick_typo_examples(shuffled, per_kind=3)
    assert list(first) == list(OPS)  # every kind, in the summary's order
    for op, chosen in first.items():
        assert 1 <= len(chosen) <= 3
        pairs = [(e["original"], e["perturbed"]) for e in chosen]
        assert len(set(pairs)) == len(pairs), op  # no typo shown twice
    # benchmarks take turns: a kind both languages made shows both
    assert {e["benchmark"] for e in first["replace"]} == {"jsquad", "mmlu"}


def _write_typo_sets(paths, sets) -> None:
    for name, (frame, summary) in sets.items():
        atomic.write_parquet(paths.perturbed(name), frame)
        atomic.write_json(paths.perturbation_summary(name), summary)


def test_the_report_shows_the_typo_model_counts_and_highlighted_examples(tmp_path):
    paths = lay_out(tmp_path)
    sets = keyboard_sets()
    _write_typo_sets(paths, sets)
    code, out = run("build", "--root", str(tmp_path), "--params", str(tmp_path / "params.yaml"))
    assert code == 0, out
    page = paths.report_html.read_text(encoding="utf-8")
    ids = section_ids(page)
    assert ids.index("kinds") < ids.index("typos") < ids.index("provenance")
    body = section_body(page, "typos")
    assert "Typo model: <b>keyboard</b>" in body

    _, counts, _ = html_table(body, "typo-counts")
    assert [r["benchmark"] for r in counts] == ["jsquad", "mmlu"]  # jnli has no summary
    for row in counts:
        summary = sets[row["benchmark"]][1]
        assert row["typo model"] == "keyboard"
        for op in OPS:
            assert row[op] == str(summary["operations"][op]), (row["benchmark"], op)
            assert float(row[f"{op} p"]) == pytest.approx(summary[f"{op}_prob"])
        assert row["typos made"] == str(sum(summary["operations"].values()))
    mmlu = next(r for r in counts if r["benchmark"] == "mmlu")
    assert "conversion: not_japanese" in mmlu["drawn but not made"]
    assert "replace: qwerty" in mmlu["how the new text was chosen"]

    recorded = {}
    for name, edit in records(sets):
        recorded.setdefault((name, edit["op"], edit["original"], edit["perturbed"]), edit)
    for op in OPS:
        table_id = f"typo-examples-{op}"
        _, rows, _ = html_table(body, table_id)
        assert 1 <= len(rows) <= 4, op
        fragment = body.split(f'id="{table_id}"', 1)[1].split("</table>", 1)[0]
        marked = MARKED.findall(fragment)
        assert len(marked) == 2 * len(rows)  # original and perturbed of each row
        for row, before, after in zip(rows, marked[::2], marked[1::2], strict=True):
            if row["benchmark"] == "jnli":  # the stage fixture's hand-written edit
                continue
            edit = recorded[(row["benchmark"], op, row["original"], row["perturbed"])]
            (a0, a1), (b0, b1) = changed_spans(edit)
            assert [html.unescape(x) for x in (before[0], before[2], before[3])] == [
                edit["original"][:a0],
                edit["original"][a0:a1],
                edit["original"][a1:],
            ]
            assert html.unescape(after[2]) == edit["perturbed"][b0:b1]
            assert after[1] == ("slot" if op == "delete" else "typo")
            slip = edit["keys"] or (f"reading {edit['reading']}" if edit["reading"] else "n/a")
            assert row["key path / reading"] == slip
    _, conversions, _ = html_table(body, "typo-examples-conversion")
    readings = {r["original"]: r["key path / reading"] for r in conversions}
    assert readings.get("機会", "reading キカイ") == "reading キカイ"
    assert readings.get("意外", "reading イガイ") == "reading イガイ"
    _, replaced, _ = html_table(body, "typo-examples-replace")
    assert any("->" in r["key path / reading"] for r in replaced)  # a keyboard slip's keys


def test_without_summaries_or_typo_records_the_section_says_what_is_missing(tmp_path):
    section = typos_section(summaries={}, perturbed={})
    assert "data/perturbed/*.summary.json are missing" in section
    assert "no examples" in section
    paths = lay_out(tmp_path)
    code, out = run("build", "--root", str(tmp_path), "--params", str(tmp_path / "params.yaml"))
    assert code == 0, out
    body = section_body(paths.report_html.read_text(encoding="utf-8"), "typos")
    assert "summary.json are missing" in body
    _, rows, _ = html_table(body, "typo-examples-replace")  # the stage fixture's jnli edit
    assert [(r["original"], r["perturbed"]) for r in rows] == [("日本", "日木")]


def test_a_summary_that_is_not_an_object_stops_the_stage_naming_the_file(tmp_path):
    paths = lay_out(tmp_path)
    paths.perturbation_summary("mmlu").write_text("[1, 2]", encoding="utf-8")
    code, out = run("build", "--root", str(tmp_path), "--params", str(tmp_path / "params.yaml"))
    assert code == 2
    assert "data/perturbed/mmlu.summary.json: expected a JSON object" in out
