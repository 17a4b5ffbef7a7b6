"""The report's typo section on real perturb output: the typo model and counts per benchmark from
the perturb summaries, and highlighted examples of every kind (keyboard and romaji slips,
transpositions, kana-kanji conversions)."""

from __future__ import annotations

import functools
import html
import re

import pandas as pd
import pytest

from evalpipe import atomic
from evalpipe.paths import ProjectPaths
from evalpipe.report import ReportData, ReportOptions, build_report
from evalpipe.report.compare import build_comparison, typo_model_rows
from evalpipe.report.typos import OPS, changed_spans, pick_typo_examples, typos_section
from tests.report_fixtures import (
    html_table,
    keyed_frame,
    pairs_frame,
    scored_view,
    section_body,
    section_ids,
    typo_sets,
    write_typo_sets,
)
from tests.test_report_stage import M, _sh, lay_out, run

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
    doubled = {name: pd.concat([frame, frame]) for name, frame in shuffled.items()}  # index twice
    assert first == pick_typo_examples(doubled, per_kind=3)
    assert list(first) == list(OPS)  # every kind, in the summary's order
    for op, chosen in first.items():
        assert 1 <= len(chosen) <= 3
        pairs = [(e["original"], e["perturbed"]) for e in chosen]
        assert len(set(pairs)) == len(pairs), op  # no typo shown twice
    # benchmarks take turns: a kind both languages made shows both
    assert {e["benchmark"] for e in first["replace"]} == {"jsquad", "mmlu"}


def test_the_report_shows_the_typo_model_counts_and_highlighted_examples(tmp_path):
    paths = lay_out(tmp_path)
    sets = keyboard_sets()
    write_typo_sets(paths, sets, M)
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
    # keyboard model: a conversion drawn on an English word becomes another kind (redrawn)
    assert mmlu["drawn but not made"] == "n/a"
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
            # a deleted character leaves a slot; a romaji key left out changes the kana shown
            assert after[1] == ("slot" if b1 == b0 else "typo")
            assert op != "delete" or b1 == b0 or edit["rule"] in ("romaji", "ime")
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
    assert "data/scored/&lt;model&gt;/perturbation.json is missing" in section
    assert "no examples" in section
    paths = lay_out(tmp_path)
    code, out = run("build", "--root", str(tmp_path), "--params", str(tmp_path / "params.yaml"))
    assert code == 0, out
    body = section_body(paths.report_html.read_text(encoding="utf-8"), "typos")
    assert "perturbation.json is missing" in body
    _, rows, _ = html_table(body, "typo-examples-replace")  # the stage fixture's jnli edit
    assert [(r["original"], r["perturbed"]) for r in rows] == [("日本", "日木")]


def test_a_summary_that_is_not_an_object_stops_the_stage_naming_the_file(tmp_path):
    paths = lay_out(tmp_path)
    (paths.scored_dir(M) / "perturbation.json").write_text('{"mmlu": [1, 2]}', encoding="utf-8")
    code, out = run("build", "--root", str(tmp_path), "--params", str(tmp_path / "params.yaml"))
    assert code == 2
    assert "data/scored/tiny-random/perturbation.json: mmlu: expected a JSON object" in out


# --- the revision comparison: a uniform vs keyboard sweep ------------------------------------

SWEEP = (
    "perturb: {model: %s, replace_prob: 0.2, insert_prob: 0.2, delete_prob: 0.2, "
    "transpose_prob: 0.2, conversion_prob: 0.2}\n"
)


def _operations(deltas: dict[str, float]):
    return keyed_frame("op", [("english", op, d) for op, d in deltas.items()]).assign(model=M)


@pytest.fixture
def sweep(tmp_path):
    """A Git + DVC repository whose HEAD perturbed with `uniform` and whose workspace, after
    `perturb.model=keyboard` and nothing else, with `keyboard`."""
    root = tmp_path / "repo"
    root.mkdir()
    paths = lay_out(root)
    params = (root / "params.yaml").read_text(encoding="utf-8")
    (root / "params.yaml").write_text(params + SWEEP % "uniform", encoding="utf-8")
    write_typo_sets(paths, uniform_sweep_sets(), M)
    atomic.write_parquet(paths.impact("operations"), _operations({"replace": -0.1, "delete": -0.2}))
    (root / "dvc.yaml").write_text(f"metrics:\n  - metrics/{M}\n", encoding="utf-8")
    for args in (
        ("git", "init", "-q"),
        ("git", "config", "user.email", "t@example.org"),
        ("git", "config", "user.name", "t"),
        ("dvc", "init", "-q"),
        ("git", "add", "-A"),
        ("git", "commit", "-qm", "uniform"),
    ):
        _sh(root, *args)
    (root / "params.yaml").write_text(params + SWEEP % "keyboard", encoding="utf-8")
    write_typo_sets(paths, keyboard_sets(), M)
    atomic.write_parquet(
        paths.impact("operations"),
        _operations({"replace": -0.3, "delete": -0.2, "transpose": -0.4}),
    )
    return root


@functools.cache
def uniform_sweep_sets():
    return typo_sets("uniform")  # the same probabilities as keyboard_sets: only the model differs


def test_compare_shows_a_uniform_vs_keyboard_sweep_side_by_side(sweep):
    root = sweep
    code, out = run(
        "compare", "--a", "HEAD", "--b", "workspace", "--root", str(root),
        "--params", str(root / "params.yaml"),
    )  # fmt: skip
    assert code == 0, out
    page = ProjectPaths(root).report_compare_html.read_text(encoding="utf-8")
    assert "typo model: uniform vs keyboard" in page  # the subtitle
    body = section_body(page, "typos")
    _, settings, _ = html_table(body, "compare-typo-model")
    by_setting = {r["setting"]: r for r in settings}
    assert by_setting["perturb.model"] == {
        "setting": "perturb.model", "HEAD": "uniform", "workspace": "keyboard",
        "changed": "changed",
    }  # fmt: skip
    for op in OPS:  # the probabilities of each side, unchanged by the sweep
        row = by_setting[f"perturb.{op}_prob"]
        assert (row["HEAD"], row["workspace"], row["changed"]) == ("0.200", "0.200", "")

    _, counts, _ = html_table(body, "compare-typo-counts")
    assert [(r["benchmark"], r["revision"]) for r in counts] == [
        ("jsquad", "HEAD"), ("jsquad", "workspace"), ("mmlu", "HEAD"), ("mmlu", "workspace"),
    ]  # fmt: skip
    sides = {"HEAD": uniform_sweep_sets(), "workspace": keyboard_sets()}
    for row in counts:
        summary = sides[row["revision"]][row["benchmark"]][1]
        assert row["typo model"] == {"HEAD": "uniform", "workspace": "keyboard"}[row["revision"]]
        assert [row[op] for op in OPS] == [str(summary["operations"][op]) for op in OPS]
    assert "qwerty" in counts[3]["how the new text was chosen"]
    assert "qwerty" not in counts[2]["how the new text was chosen"]  # uniform: no key slips

    _, kinds, _ = html_table(body, "compare-typo-kinds")
    by_op = {r["op"]: r for r in kinds}
    assert by_op["replace"]["change"] == "-0.200"  # -0.1 -> -0.3
    assert by_op["transpose"]["accuracy change HEAD"] == "n/a"  # uniform made none


def test_the_typo_settings_of_a_revision_without_them_say_not_set():
    a = ReportData(provenance={"params": {"perturb": {"replace_prob": 0.2}}})
    b = ReportData(provenance={"params": {"perturb": {"replace_prob": 0.2, "model": "keyboard"}}})
    rows = {r["setting"]: r for r in typo_model_rows(a, b)}
    assert rows["perturb.model"] == {
        "setting": "perturb.model", "a": "not set", "b": "keyboard", "changed": "changed"
    }  # fmt: skip
    assert rows["perturb.replace_prob"]["changed"] == ""
    page = build_comparison(a, b, label_a="old", label_b="new", metrics_diff={}, diff_source="test")
    assert "typo model: n/a vs keyboard" in page
    assert "data/scored/&lt;model&gt;/perturbation.json is missing in both old and new" in page


def test_the_wrong_answer_examples_name_each_edits_key_path_or_reading():
    frame, _ = keyboard_sets()["jsquad"]
    original = frame["variant"] == "original"
    scored = scored_view(frame, model=M)  # every typo'd answer wrong: each is an example
    page = build_report(
        ReportData(scored={"jsquad": scored}, pairs=pairs_frame(scored)),
        ReportOptions(examples_per_benchmark=1000),
    )
    body = html.unescape(section_body(page, "examples"))
    shown = 0
    for edits in frame.loc[~original, "perturbations"]:
        for e in edits:
            slip = ", ".join(
                [e["op"]]
                + ([e["keys"]] if e["keys"] else [])
                + ([f"reading {e['reading']}"] if e["reading"] else [])
            )
            assert f"{e['original']}→{e['perturbed']} ({slip})" in body
            shown += bool(e["keys"] or e["reading"])
    assert shown >= 3  # romaji slips and a conversion among them
