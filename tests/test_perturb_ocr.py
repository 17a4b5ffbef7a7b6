"""The OCR typo model (perturb.model: ocr): confusions read both ways, every drawn kind made as an
OCR error, the rows and typo facts it writes, and its place in the params schema."""

from __future__ import annotations

import functools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalpipe.errors import InputError
from evalpipe.params import load_params
from evalpipe.params_schema import default_of
from evalpipe.perturb import Probabilities, Skipped, decide, occurrence_digest, perturb_frame
from evalpipe.perturb.ops import validate_probabilities
from evalpipe.perturb.typo_models import ocr, typo_model
from evalpipe.registries import TYPO_MODELS

OCR = Probabilities(0.2, 0.2, 0.2, 0.2, 0.2, model="ocr")


def test_every_confusion_reads_both_ways():
    for a, b in ocr.PAIRS:
        assert b in ocr.CONFUSIONS[a] and a in ocr.CONFUSIONS[b]
    assert set(ocr.CONFUSIONS["rn"]) == {"m"} and "rn" in ocr.CONFUSIONS["m"]
    assert set(ocr.CONFUSIONS["カ"]) == {"力"}


@settings(max_examples=300, deadline=None)
@given(
    word=st.text(alphabet="modernclawhyz01カメラロボットはば日未", min_size=1, max_size=8),
    digest=st.binary(min_size=32, max_size=32),
)
def test_each_edit_is_one_confusion_or_a_lost_glyph(word, digest):
    op = decide(word, digest, OCR)
    if op is None:  # no kind drawn (the probabilities sum to 1: never)
        pytest.fail("an OCR operation should be drawn at total probability 1")
    if isinstance(op, Skipped):
        assert op.reason == "no_confusion" and not ocr.confusions(word)
        return
    assert op.rule == ocr.RULE
    start, end = op.position, op.position + len(op.original_char)
    assert word[start:end] == op.original_char
    if op.op == "delete":
        assert op.new_char is None and len(op.original_char) == 1
        assert op.perturbed == word[:start] + word[end:]
    else:
        assert op.op == "replace" and op.new_char in ocr.CONFUSIONS[op.original_char]
        assert op.perturbed == word[:start] + op.new_char + word[end:]
        assert op.drawn in (None, "insert", "transpose", "conversion")


def test_the_draw_is_deterministic_and_spreads_over_the_confusions():
    made = {
        decide("modern", occurrence_digest(7, "b", str(k), "modern", "q", 0), Probabilities(1, 0, 0, model="ocr")).perturbed
        for k in range(200)
    }  # fmt: skip
    assert {"rnodern", "modem", "madern", "moderh"} <= made
    again = decide("modern", occurrence_digest(7, "b", "3", "modern", "q", 0), OCR)
    assert again == decide("modern", occurrence_digest(7, "b", "3", "modern", "q", 0), OCR)


@functools.cache
def _sample(name: str):
    from evalpipe.benchmarks import get_spec, load_benchmark

    return load_benchmark(get_spec(name), source="sample")[0]


@functools.cache
def _words(language: str):
    from evalpipe.words import word_list

    min_length = 2 if language == "english" else 1
    return word_list(language, "wordfreq", raw_dir="/nonexistent", top_n=50, min_length=min_length)


@pytest.mark.parametrize("name", ["gsm8k", "jcommonsenseqa"])
def test_a_frame_under_ocr_records_confusions_and_typo_facts(name):
    bench = _sample(name).head(8)
    language = str(bench["language"].iloc[0])
    probs = validate_probabilities(
        {"replace_prob": 0.5, "insert_prob": 0.2, "delete_prob": 0.1, "model": "ocr"}
    )
    result = perturb_frame(bench, _words(language), probabilities=probs, seed=42)
    again = perturb_frame(bench, _words(language), probabilities=probs, seed=42)
    assert result.table.equals(again.table)
    records = [p for row in result.table.column("perturbations").to_pylist() for p in row]
    assert records, "the sample's frequent words offer confusions"
    assert {p["rule"] for p in records} == {ocr.RULE}
    assert {p["op"] for p in records} <= {"replace", "delete"}
    for p in records:
        assert (
            p["original"][: p["position"]]
            + (p["new_char"] or "")
            + p["original"][p["position"] + len(p["original_char"]) :]
            == p["perturbed"]
        )
    summary = result.summary
    assert summary["model"] == "ocr" and "eligibility" in summary  # the automatic exclusions
    n_typos = result.table.column("n_typos").to_pylist()
    assert sum(n_typos) == summary["perturbed_occurrences"]


def test_the_params_schema_takes_its_choices_from_the_registry(tmp_path):
    assert "ocr" in TYPO_MODELS.names and default_of("perturb.model") == TYPO_MODELS.default
    assert typo_model("ocr") is ocr.MODEL and typo_model(TYPO_MODELS.default).plain
    path = tmp_path / "params.yaml"
    base = "perturb:\n  replace_prob: 0.2\n  insert_prob: 0.2\n  delete_prob: 0.2\n"
    path.write_text(base + "  model: ocr\n", encoding="utf-8")
    assert load_params(path)["perturb"]["model"] == "ocr"
    path.write_text(base + "  model: ocrr\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"perturb\.model.*ocr"):
        load_params(path)
