"""Input correctors: protected spans and whitespace never change, restoration and overcorrection
count what the edits did (hand-made cases), the defended rows keep the perturbed set's schema."""

from __future__ import annotations

import json
import re

import pandas as pd
import pyarrow as pa
import pytest

from evalpipe.defences.correct import (
    Correction,
    SpellingCorrector,
    aligned_corrections,
    allowed,
    apply,
)
from evalpipe.defences.frame import (
    correction_counts,
    defended_rows,
    defended_table,
    field_texts,
    kept_corrections,
    restored,
    typo_spans,
)
from evalpipe.errors import InputError
from evalpipe.params import load_params
from evalpipe.perturb.eligibility import RowContext


@pytest.fixture(scope="module")
def speller() -> SpellingCorrector:
    return SpellingCorrector()


def _record(field, start, original, perturbed):
    return {
        "field": field,
        "start": start,
        "end": start + len(original),
        "original": original,
        "perturbed": perturbed,
    }


def test_spelling_restores_a_misspelt_word_and_keeps_its_capital(speller):
    edits = speller.edits("Teh quesiton is hard", language="english")
    assert [(e.original, e.corrected) for e in edits] == [("Teh", "The"), ("quesiton", "question")]


def test_spelling_leaves_japanese_unchanged(speller):
    assert speller.edits("東京は日本の主都です", language="japanese") == []


def test_whitespace_and_punctuation_between_words_never_change(speller):
    text = "Teh  quesiton,\tabout\n\nteh   answr!"
    edits = allowed(
        text, speller.edits(text, language="english"), row=RowContext(), language="english"
    )
    out = apply(text, edits)
    assert re.findall(r"\W+", out) == re.findall(r"\W+", text)
    assert out == "The  question,\tabout\n\nthe   answer!"


def test_protected_strings_gold_numbers_urls_and_labels_are_never_corrected(speller):
    text = "Teh answr (B) is 12 twelv at www.exampel.com, says Jonh"
    row = RowContext(labels=("A", "B"), golds=("answr",))
    edits = speller.edits(text, language="english")
    kept = allowed(text, edits, row=row, protected=["Jonh"], language="english")
    out = apply(text, kept)
    assert out.startswith("The answr (B) is 12 ")
    assert "www.exampel.com" in out and out.endswith("says Jonh")
    assert {e.original for e in kept} == {"Teh", "twelv"}


def test_a_corrector_never_introduces_a_number_or_joins_words():
    text = "the sevn cats"
    edits = [Correction(4, 8, "sevn", "7"), Correction(3, 4, " ", "")]
    assert allowed(text, edits, row=RowContext(), language="english") == []


def test_llm_answer_aligned_word_by_word_keeps_the_input_separators():
    edits = aligned_corrections(
        "Teh  cat\nsat on teh mat.", "The cat sat on the mat.", language="english"
    )
    assert apply("Teh  cat\nsat on teh mat.", edits) == "The  cat\nsat on the mat."


def test_llm_answer_that_rewrites_the_text_proposes_nothing():
    assert aligned_corrections("Teh cat sat", "The answer is 42.", language="english") == []
    assert (
        aligned_corrections("東京は日本の首都", "答えは大阪です。わかりません", language="japanese")
        == []
    )


def test_llm_japanese_edits_skip_whitespace():
    edits = aligned_corrections("日本の主都 です", "日本の首都です", language="japanese")
    assert [(e.original, e.corrected) for e in edits] == [("主", "首"), (" ", "")]
    assert apply("日本の主都 です", allowed("日本の主都 です", edits, row=RowContext(),
                                          language="japanese")) == "日本の首都 です"  # fmt: skip


def test_typo_spans_follow_the_length_changes_of_earlier_edits():
    spans = typo_spans([_record("q", 0, "the", "th"), _record("q", 8, "cat", "caat")])
    assert spans == {"q": [(0, 2, "the"), (7, 11, "cat")]}


def test_restored_needs_the_exact_original_word():
    text = "th cat"  # typo'd "the cat"
    assert restored(text, (0, 2, "the"), [Correction(0, 2, "th", "the")])
    assert not restored(text, (0, 2, "the"), [Correction(0, 2, "th", "thy")])
    assert not restored(text, (0, 2, "the"), [Correction(3, 6, "cat", "cot")])


def _rows():
    clean = "The cat sat on the mat"
    typod = "Teh cat sat on the mta"
    return pd.DataFrame(
        {
            "variant": ["original", "the"],
            "language": "english",
            "fields": [json.dumps({"q": clean}), json.dumps({"q": typod})],
            "perturbable": [["q"], ["q"]],
            "perturbations": [
                [],
                [_record("q", 0, "The", "Teh"), _record("q", 19, "mat", "mta")],
            ],
            "answer": ["A", "A"],
            "answers": [["A"], ["A"]],
            "labels": [None, None],
            "choices": [None, None],
        }
    )


def test_restoration_and_overcorrection_on_a_hand_made_case():
    rows = _rows()
    texts = field_texts(rows)
    proposed = [
        [Correction(4, 7, "cat", "cut")],  # the clean prompt: one word wrongly changed
        [Correction(0, 3, "Teh", "The"), Correction(19, 22, "mta", "man")],  # one of two restored
    ]
    kept = kept_corrections(rows, texts, proposed)
    counts = correction_counts(rows, texts, kept, supported=lambda language: True)
    assert counts["edited_words"] == 2 and counts["restored_words"] == 1
    assert counts["clean_words_changed"] == 1 and counts["clean_prompts"] == 1
    assert counts["false_changes"] == 0 and counts["typo_words_changed"] == 2


def test_defended_rows_keep_the_perturbed_schema_and_record_each_edit():
    rows = _rows()
    texts = field_texts(rows)
    kept = [[], [Correction(0, 3, "Teh", "The")]]
    out = defended_rows(rows, texts, kept, condition="corrected:spelling")
    assert json.loads(out["fields"][1])["q"] == "The cat sat on the mta"
    assert out["corrections"][1] == [
        {"field": "q", "start": 0, "end": 3, "original": "Teh", "corrected": "The"}
    ]
    schema = pa.schema([("variant", pa.string()), ("fields", pa.string())])
    table = defended_table(out, schema)
    assert table.schema.names == ["variant", "fields", "condition", "corrections"]
    assert table.column("condition").to_pylist() == ["corrected:spelling"] * 2


def test_spelling_on_a_perturbed_gsm8k_row_restores_and_keeps_numbers(speller):
    text = "Natalia sold clips to 48 of her freinds in Apirl"
    rows = pd.DataFrame(
        {
            "variant": ["friends"],
            "language": "english",
            "fields": [json.dumps({"question": text})],
            "perturbable": [["question"]],
            "perturbations": [[_record("question", 32, "friends", "freinds")]],
            "answer": ["72"],
            "answers": [["72"]],
            "labels": [None],
            "choices": [None],
        }
    )
    texts = field_texts(rows)
    kept = kept_corrections(
        rows, texts, [speller.edits(t.text, language=t.language) for t in texts]
    )
    counts = correction_counts(rows, texts, kept, supported=lambda language: True)
    assert counts["restored_words"] == 1
    assert "48" in apply(text, kept[0])


def test_unknown_corrector_is_refused_with_the_key(tmp_path):
    path = tmp_path / "params.yaml"
    path.write_text("defences:\n  correctors: [spellcheck]\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"defences.correctors\[0\].*one of spelling, llm"):
        load_params(str(path))


def test_the_corrector_registry_names_each_kind_and_what_it_needs():
    from evalpipe.defences.correctors import corrector, split_name
    from evalpipe.registries import CORRECTORS

    assert split_name("llm:qwen2-7b") == ("llm", "qwen2-7b")
    for kind in CORRECTORS.names:  # each registered name has its module, one way of proposing
        c = corrector(kind)
        assert (c.local is None) == c.uses_model
    assert not corrector("spelling").supports("japanese") and corrector("llm").uses_model
