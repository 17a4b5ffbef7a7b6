"""The count design (perturb.design: count): exactly k eligible words edited per example, nested
across k, never a number, URL, maths, option label or gold span; shortfall and targeting
counted in the summary."""

from __future__ import annotations

import itertools
import json
import re

import pandas as pd
import pytest

from evalpipe.arms import count_variant, is_count_variant
from evalpipe.benchmarks import get_spec, load_benchmark
from evalpipe.errors import InputError
from evalpipe.perturb.columns import Edit
from evalpipe.perturb.count import (
    edits_on_target,
    perturb_count_frame,
    validate_counts,
    validate_design,
)
from evalpipe.perturb.eligibility import ENGLISH_NUMBER_WORDS, from_params, is_number_word
from evalpipe.perturb.ops import Operation, validate_probabilities

COUNT_RULES = from_params({"design": "count"})
PROBS = validate_probabilities({"replace_prob": 0.2, "insert_prob": 0.2, "delete_prob": 0.2})
KEYBOARD = validate_probabilities(
    {"model": "keyboard", "replace_prob": 0.2, "insert_prob": 0.2, "delete_prob": 0.2,
     "transpose_prob": 0.1}
)  # fmt: skip


def _bench(rows: list[dict], language: str = "english") -> pd.DataFrame:
    base = {"benchmark": "demo", "subtask": None, "language": language, "task_type": "mc",
            "perturbable": ["question"], "choices": None, "answer": None, "answers": None,
            "labels": None}  # fmt: skip
    out = []
    for i, row in enumerate(rows):
        fields = row.pop("fields")
        out.append({**base, "example_id": str(i), "fields": json.dumps(fields), **row})
    return pd.DataFrame(out)


def _edits(table) -> pd.DataFrame:
    rows = []
    for r in table.to_pylist():
        for e in r["perturbations"]:
            rows.append({"example_id": r["example_id"], "k": r["word_rank"], "draw": r["draw"],
                         "fields": r["fields"], **e})  # fmt: skip
    return pd.DataFrame(rows)


TRAPS = _bench(
    [
        {
            "fields": {
                "question": "Visit https://example.com/answers or www.helpful.org for twenty "
                "hundred tips; compute $x + y$ when value = 3 then pick (B) Paris, not "
                "Berlin, because 42 apples, the 3rd edition, mp3 files and Kyoto matter.",
                "options": "(A) Berlin (B) Paris",
            },
            "choices": ["Berlin", "Paris"],
            "labels": ["A", "B"],
            "answer": "B",
            "answers": ["B"],
        },
        {
            "fields": {"question": "Which river flows through the ancient capital Kyoto city?"},
            "answer": "Kamo River",
            "answers": ["Kamo River", "Kyoto"],
        },
    ]
)


def test_no_number_url_maths_option_label_or_gold_span_is_ever_edited():
    result = perturb_count_frame(
        TRAPS, probabilities=PROBS, seed=7, counts=[1, 2, 4, 8, 16], draws=5,
        eligibility=COUNT_RULES,
    )  # fmt: skip
    edits = _edits(result.table)
    assert len(edits) > 0
    words = set(edits["original"])
    assert all(not re.search(r"\d", w) for w in words)
    assert not words & {"twenty", "hundred"}  # number words
    assert not words & {"https", "example", "com", "answers", "www", "helpful", "org"}  # URLs
    assert not words & {"x", "y", "value"}  # inside $...$ or next to an operator
    assert not words & {"B", "Paris"}  # the option label, the gold choice's text
    second = set(edits.loc[edits["example_id"] == "1", "original"])
    assert second and not second & {"Kyoto", "Kamo", "River"}  # reference answers
    assert "Kyoto" in set(edits.loc[edits["example_id"] == "0", "original"])  # not gold there
    assert set(edits["field"]) == {"question"}  # never the options field (not perturbable)
    assert all(len(w) >= 3 for w in words)  # min_letters 3
    assert "Berlin" in words  # a wrong option's text is an ordinary word
    excluded = result.summary["eligibility"]["excluded"]
    for rule in ("digits", "number_words", "urls", "maths", "option_labels", "gold_spans"):
        assert excluded.get(rule, 0) > 0, rule


@pytest.mark.parametrize("name", ["gsm8k", "mmlu", "bbh", "jsquad", "jcommonsenseqa", "lawqa"])
def test_bundled_samples_never_edit_numbers_gold_or_protected_text(name):
    bench, _ = load_benchmark(get_spec(name), source="sample", max_samples=20)
    result = perturb_count_frame(bench, probabilities=KEYBOARD, seed=42, counts=[1, 2, 4, 8],
                                 eligibility=COUNT_RULES)  # fmt: skip
    table = result.table.to_pandas()
    by_id = bench.set_index("example_id")
    language = str(bench["language"].iloc[0])
    checked = 0
    for row in table.loc[table["variant"] != "original"].itertuples():
        source = by_id.loc[row.example_id]
        fields = json.loads(source["fields"])
        golds = [str(a) for a in (source["answers"] if source["answers"] is not None else [])]
        if source["labels"] is not None and source["choices"] is not None:
            labels = list(source["labels"])
            golds += [source["choices"][labels.index(a)] for a in golds if a in labels]
        protected = list(source["protected"]) if source["protected"] is not None else []
        for e in row.perturbations:
            text = fields[e["field"]]
            assert e["field"] in list(source["perturbable"])
            assert text[e["start"] : e["end"]] == e["original"]
            assert not re.search(r"[0-9０-９]", e["original"])
            assert not is_number_word(e["original"], language=language)
            for gold in [*golds, *protected]:
                at = text.find(gold) if gold and not (source["labels"] is not None
                                                      and gold in source["labels"]) else -1  # fmt: skip
                while at >= 0:
                    assert not (at < e["end"] and e["start"] < at + len(gold)), (gold, e)
                    at = text.find(gold, at + 1)
            checked += 1
    assert checked > 0
    assert result.summary["targeting"]["share"] == 1.0


def test_the_edits_of_k_are_the_first_k_of_every_larger_dose_with_the_same_characters():
    bench, _ = load_benchmark(get_spec("imdb"), source="sample", max_samples=10)
    result = perturb_count_frame(bench, probabilities=KEYBOARD, seed=3, counts=[1, 2, 4, 8],
                                 draws=2, eligibility=COUNT_RULES)  # fmt: skip
    edits = _edits(result.table)
    key = ["field", "start", "end", "original", "perturbed", "op", "position", "new_char"]
    nested = 0
    for (_, _), group in edits.groupby(["example_id", "draw"]):
        sets = {k: set(map(tuple, g[key].values.tolist())) for k, g in group.groupby("k")}
        ks = sorted(sets)
        for small, large in itertools.pairwise(ks):
            assert len(sets[small]) == small and sets[small] < sets[large]
            nested += 1
    assert nested > 0
    # two draws are two independent samples of words
    first = edits.loc[edits["k"] == 8].groupby("draw")["start"].apply(tuple).tolist()
    assert first[0] != first[1]


def test_rows_are_keyed_by_k_and_carry_n_typos_k():
    bench, _ = load_benchmark(get_spec("gsm8k"), source="sample", max_samples=5)
    table = perturb_count_frame(bench, probabilities=PROBS, seed=1, counts=[2, 1],
                                eligibility=COUNT_RULES).to_pandas()  # fmt: skip
    typo = table.loc[table["variant"] != "original"]
    assert set(typo["variant"]) == {"k=1", "k=2"}
    assert (typo["word_rank"] == typo["variant"].str[2:].astype(int)).all()
    assert (typo["n_typos"] == typo["word_rank"]).all()
    assert (typo["perturbed_occurrences"] == typo["word_rank"]).all()
    assert not table.duplicated(["example_id", "variant", "word_rank", "draw"]).any()
    original = table.loc[table["variant"] == "original"]
    assert (original["n_typos"] == 0).all() and (original["word_rank"] == 0).all()
    assert is_count_variant(count_variant(2)) and not is_count_variant("the")


def test_an_example_short_of_k_eligible_words_gets_no_row_and_is_counted():
    bench = _bench(
        [
            {"fields": {"question": "Alpha bravo charlie delta echo foxtrot"}},  # 6 words
            {"fields": {"question": "The cat sat on 3 mats"}},  # The, cat, sat, mats: 4
            {"fields": {"question": "Go to 12 of 40"}},  # no word of 3 letters
        ]
    )
    result = perturb_count_frame(bench, probabilities=PROBS, seed=5, counts=[1, 4, 5, 8],
                                 eligibility=COUNT_RULES)  # fmt: skip
    table = result.table.to_pandas()
    made = table.groupby("variant")["example_id"].apply(sorted).to_dict()
    assert made == {"original": ["0", "1", "2"], "k=1": ["0", "1"], "k=4": ["0", "1"],
                    "k=5": ["0"]}  # fmt: skip
    assert result.summary["shortfall"] == {"1": 1, "4": 1, "5": 2, "8": 3}
    assert result.summary["rows_by_k"] == {"1": 2, "4": 2, "5": 1, "8": 0}
    assert result.summary["eligible_words"] == 10
    assert set(table.loc[table["example_id"] == "1", "occurrences"]) == {0, 4}


def test_targeting_counts_only_edits_inside_their_word():
    op = Operation("replace", 0, "c", "b", "bat")
    good = Edit("q", 1, 4, 7, "cat", op)
    assert edits_on_target("the cat sat", "the bat sat", [good]) == 1
    # the same change made to another word is off target, and so is a row with an extra change
    assert edits_on_target("the cat sat", "the cat bat", [good]) == 0
    assert edits_on_target("the cat sat", "thx bat sat", [good]) == 0
    # an edit naming text that is not at its span (a string search gone wrong) is off target
    assert edits_on_target("the cat sat", "the bat sat", [Edit("q", 1, 0, 3, "cat", op)]) == 0


def test_summary_states_targeting_for_every_edit_on_the_bundled_samples():
    for name in ("imdb", "jnli", "niilc"):
        bench, _ = load_benchmark(get_spec(name), source="sample", max_samples=20)
        s = perturb_count_frame(bench, probabilities=KEYBOARD, seed=42,
                                eligibility=from_params({"design": "count", "model": "keyboard"})
                                ).summary  # fmt: skip
        rows = sum(s["rows_by_k"][str(k)] * k for k in s["counts"])
        assert s["targeting"] == {"edits": rows, "inside_target": rows, "share": 1.0}, name
        assert s["design"] == "count" and s["perturbed_rows"] == sum(s["rows_by_k"].values())


def test_japanese_count_design_edits_content_morphemes_only():
    bench, _ = load_benchmark(get_spec("jnli"), source="sample", max_samples=10)
    from evalpipe.perturb.ime import JapaneseContext

    reader = JapaneseContext()
    result = perturb_count_frame(bench, probabilities=PROBS, seed=2, counts=[1, 2, 4],
                                 eligibility=COUNT_RULES)  # fmt: skip
    edits = _edits(result.table)
    fields = {r["example_id"]: json.loads(r["fields"]) for r in bench.to_dict("records")}
    for e in edits.itertuples():
        pos = reader.pos(fields[e.example_id][e.field], e.start, e.end)
        assert pos.split("-")[0] in ("名詞", "代名詞", "動詞", "形容詞", "形状詞", "副詞",
                                     "連体詞", "感動詞"), (e.original, pos)  # fmt: skip
    assert result.summary["eligibility"]["excluded"]["function_words"] > 0


def test_bad_design_or_counts_are_named():
    with pytest.raises(InputError, match=r"perturb\.design"):
        validate_design("dose")
    with pytest.raises(InputError, match=r"perturb\.counts"):
        validate_counts([])
    with pytest.raises(InputError, match=r"perturb\.counts"):
        validate_counts([1, 0])
    with pytest.raises(InputError, match="positive probability"):
        perturb_count_frame(TRAPS, probabilities=validate_probabilities(
            {"replace_prob": 0, "insert_prob": 0, "delete_prob": 0}), seed=1)  # fmt: skip


def test_number_word_list_covers_what_the_traps_use():
    assert {"twenty", "hundred"} <= ENGLISH_NUMBER_WORDS


def _perturb_stage(root, params: dict) -> tuple[bytes, bytes]:
    import os
    import subprocess
    import sys

    import yaml

    from evalpipe import atomic
    from evalpipe.words import word_list
    from tests.conftest import REPO

    bench, _ = load_benchmark(get_spec("mmlu"), source="sample", max_samples=20)
    atomic.write_parquet(root / "data" / "benchmarks" / "mmlu.parquet", bench)
    words = word_list("english", "wordfreq", raw_dir=root / "none", top_n=10, min_length=2)
    atomic.write_parquet(root / "data" / "words" / "english.parquet", words)
    (root / "params.yaml").write_text(yaml.safe_dump(params), encoding="utf-8")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO), str(REPO / "src")]))
    proc = subprocess.run([sys.executable, "-m", "stages.perturb", "--name", "mmlu"], cwd=root,
                          env=env, capture_output=True, text=True, timeout=300)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    out = root / "data" / "perturbed"
    return (out / "mmlu.parquet").read_bytes(), (out / "mmlu.summary.json").read_bytes()


def test_design_words_is_the_default_and_writes_what_a_params_file_without_design_writes(tmp_path):
    import yaml

    from tests.conftest import TEST_PARAMS

    params = yaml.safe_load(TEST_PARAMS.read_text(encoding="utf-8"))
    params["benchmarks"]["suites"] = {"mmlu": "english"}
    assert params["perturb"]["design"] == "words"
    explicit = _perturb_stage(tmp_path / "explicit", params)
    del params["perturb"]["design"], params["perturb"]["counts"]
    assert _perturb_stage(tmp_path / "absent", params) == explicit
    summary = json.loads(explicit[1])
    assert "design" not in summary and "shortfall" not in summary  # the words design's keys only
    params["perturb"]["design"] = "count"
    table, counted = _perturb_stage(tmp_path / "count", params)
    assert json.loads(counted)["design"] == "count" and table != explicit[0]
