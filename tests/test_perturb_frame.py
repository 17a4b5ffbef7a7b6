"""perturb_frame on small benchmark frames: rows, provenance, protection, determinism, errors."""

from __future__ import annotations

import bisect
import functools
import io
import json

import pandas as pd
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalpipe import atomic
from evalpipe.benchmarks import get_spec, load_benchmark
from evalpipe.errors import InputError
from evalpipe.perturb import Probabilities, Tokenizer, frame, perturb_frame
from evalpipe.perturb.ops import Operation
from evalpipe.perturb.scripts import char_class
from evalpipe.words import word_list

PROBS = Probabilities(0.2, 0.2, 0.2)
ALWAYS = Probabilities(0.4, 0.3, 0.3)
EN_WORDS = pd.DataFrame(
    {
        "rank": [1, 2, 3, 4],
        "word": ["the", "of", "and", "a"],
        "lemma": [None] * 4,
        "pos": [None] * 4,
        "score": [4.0, 3, 2, 1],
    }
)
JA_WORDS = pd.DataFrame(
    {
        "rank": [1, 2, 3],
        "word": ["ます", "の", "です"],
        "lemma": ["ます", "の", None],
        "pos": ["助動詞", "助詞-格助詞", None],
        "score": [3.0, 2, 1],
    }
)


def bench_frame(
    name: str, language: str, examples: list[dict], *, perturbable=None, choices=None
) -> pd.DataFrame:
    """Benchmark rows with the contract's columns (docs/architecture.md)."""
    n = len(examples)
    return pd.DataFrame(
        {
            "benchmark": [name] * n,
            "example_id": [str(i) for i in range(n)],
            "subtask": [None] * n,
            "language": [language] * n,
            "task_type": ["mc"] * n,
            "fields": [json.dumps(f, ensure_ascii=False, sort_keys=True) for f in examples],
            "perturbable": perturbable or [sorted(f) for f in examples],
            "choices": choices or [None] * n,
            "answer": ["A"] * n,
            "answers": [["A"]] * n,
            "labels": [["A", "B", "C", "D"]] * n,
        }
    )


@functools.cache
def _tokenizer() -> Tokenizer:
    return Tokenizer()


def _rows(result) -> list[dict]:
    return result.table.to_pylist()


def _apply(original: str, perturbations: list[dict], field: str) -> str:
    out, cursor = [], 0
    for p in sorted((p for p in perturbations if p["field"] == field), key=lambda p: p["start"]):
        out.append(original[cursor : p["start"]] + p["perturbed"])
        cursor = p["end"]
    return "".join(out) + original[cursor:]


# The coarse script of a class (docs/perturbation.md, "Output"); no class is "other".
COARSE = {"hiragana": "hiragana", "katakana": "katakana", "halfwidth_katakana": "katakana",
          "kanji": "kanji", "latin_lower": "latin", "latin_upper": "latin",
          "fullwidth_lower": "latin", "fullwidth_upper": "latin", "digit": "digit",
          "fullwidth_digit": "digit"}  # fmt: skip


def _edited_chars(p: dict) -> int:
    """What docs/perturbation.md says one edit changes, read off its record: the original text
    it acted on (a character, a kana unit, a letter pair, a word an IME slip rewrote), or for a
    plain insertion the text inserted."""
    text = p["original_char"] if p["original_char"] is not None else p["new_char"]
    return len(text)


def _script(p: dict) -> str:
    ch = p["new_char"] if p["op"] == "insert" else p["original_char"]
    return COARSE.get(char_class(ch[0]) or "", "other")


def _kind(kinds: set[str]) -> str:
    return kinds.pop() if len(kinds) == 1 else "mixed"


def _check_typo_facts(row: dict) -> None:
    edits = row["perturbations"]
    if not edits:
        assert (row["n_typos"], row["n_edited_chars"], row["op"], row["script"]) == (
            0,
            0,
            None,
            None,
        )
        return
    assert row["n_typos"] == len(edits) == row["perturbed_occurrences"]
    assert row["n_edited_chars"] == sum(_edited_chars(p) for p in edits)
    assert row["op"] == _kind({p["op"] for p in edits})
    assert row["script"] == _kind({_script(p) for p in edits})


def _check_provenance(bench: pd.DataFrame, result) -> None:
    originals = {
        r["example_id"]: json.loads(r["fields"])
        for r in _rows(result)
        if r["variant"] == "original"
    }
    for row in _rows(result):
        _check_typo_facts(row)
        if row["variant"] == "original":
            assert row["perturbations"] == [] and row["word_rank"] == 0
            continue
        before, after = originals[row["example_id"]], json.loads(row["fields"])
        assert row["perturbed_occurrences"] == len(row["perturbations"]) >= 1
        assert row["occurrences"] >= row["perturbed_occurrences"]
        for p in row["perturbations"]:
            assert before[p["field"]][p["start"] : p["end"]] == p["original"]  # offsets
            assert p["original"] != p["perturbed"]
        for field in before:
            assert after[field] == _apply(before[field], row["perturbations"], field)


def test_one_original_row_per_example_and_one_row_per_perturbed_word():
    bench = bench_frame(
        "demo",
        "english",
        [
            {"question": "The cat and the dog of the house."},
            {"question": "Nothing to see here."},
        ],
    )
    result = perturb_frame(bench, EN_WORDS, probabilities=Probabilities(1, 0, 0), seed=3)
    rows = _rows(result)
    assert [(r["example_id"], r["variant"], r["word_rank"]) for r in rows] == [
        ("0", "original", 0),
        ("0", "the", 1),
        ("0", "of", 2),
        ("0", "and", 3),
        ("1", "original", 0),
    ]
    the = rows[1]
    assert the["occurrences"] == the["perturbed_occurrences"] == 3
    assert [p["occurrence"] for p in the["perturbations"]] == [0, 1, 2]
    assert [p["original"] for p in the["perturbations"]] == ["The", "the", "the"]
    assert all(p["op"] == "replace" for p in the["perturbations"])
    assert result.summary["occurrences"] == 5 and result.summary["perturbed_occurrences"] == 5
    assert result.summary["target_words_found"] == 3 and result.summary["rows"] == 5
    _check_provenance(bench, result)


def test_rows_without_any_fired_operation_are_not_written():
    bench = bench_frame("demo", "english", [{"q": "the " * 3}])
    result = perturb_frame(bench, EN_WORDS, probabilities=Probabilities(0, 0, 0), seed=1)
    assert [r["variant"] for r in _rows(result)] == ["original"]
    assert result.summary["occurrences"] == 3 and result.summary["perturbed_occurrences"] == 0


def test_choices_labels_and_unlisted_fields_are_never_perturbed():
    examples = [
        {
            "question": "Which of the following is the answer?",
            "choice0": "the first",
            "choice1": "the second",
        }
    ]
    choices = [["the first", "the second", "all of the above", "a and the"]]
    bench = bench_frame(
        "jcqa_like", "english", examples, perturbable=[["question"]], choices=choices
    )
    result = perturb_frame(bench, EN_WORDS, probabilities=ALWAYS, seed=5)
    rows = _rows(result)
    assert len(rows) > 1
    for row in rows:
        fields = json.loads(row["fields"])
        assert fields["choice0"] == "the first" and fields["choice1"] == "the second"
        assert row["choices"] == choices[0]
        assert row["labels"] == ["A", "B", "C", "D"] and row["answer"] == "A"
        assert all(p["field"] == "question" for p in row["perturbations"])


def test_carried_columns_and_schema_follow_the_contract():
    bench = bench_frame("demo", "english", [{"q": "the of"}])
    table = perturb_frame(bench, EN_WORDS, probabilities=ALWAYS, seed=1).table
    assert table.column_names == [
        "benchmark",
        "example_id",
        "variant",
        "word_rank",
        "draw",
        "condition",
        "seed",
        "fields",
        "perturbations",
        "occurrences",
        "perturbed_occurrences",
        "n_typos",
        "n_edited_chars",
        "op",
        "script",
        "subtask",
        "language",
        "task_type",
        "perturbable",
        "choices",
        "answer",
        "answers",
        "labels",
    ]
    assert str(table.schema.field("seed").type) == "int64"
    types = {name: str(table.schema.field(name).type) for name in ("n_typos", "n_edited_chars")}
    assert types == {"n_typos": "int32", "n_edited_chars": "int32"}
    assert str(table.schema.field("op").type) == str(table.schema.field("script").type) == "string"
    struct = table.schema.field("perturbations").type.value_type
    assert [f.name for f in struct] == [
        "field",
        "occurrence",
        "start",
        "end",
        "original",
        "perturbed",
        "op",
        "position",
        "original_char",
        "new_char",
        "rule",
        "keys",
        "reading",
    ]


def test_perturbed_fields_are_the_same_json_as_json_dumps():
    examples = [{"b": 'quote " and \\ back\nslash the', "a": "the \u2028 of 漢字 😀", "n": 3}]
    bench = bench_frame("demo", "english", examples, perturbable=[["a", "b"]])
    for row in _rows(perturb_frame(bench, EN_WORDS, probabilities=ALWAYS, seed=2)):
        assert row["fields"] == json.dumps(
            json.loads(row["fields"]), ensure_ascii=False, sort_keys=True
        )


@given(
    texts=st.lists(
        st.text(st.sampled_from('ab"\\\n\u2028漢😀'), max_size=12), min_size=1, max_size=3
    ),
    cuts=st.lists(st.tuples(st.integers(0, 2), st.integers(0, 12), st.integers(0, 3)), max_size=6),
    words=st.lists(st.text(st.sampled_from('xy"\\\t'), max_size=3), min_size=6, max_size=6),
)
@settings(max_examples=200, deadline=None)
def test_a_rows_fields_json_is_the_dumps_of_its_spliced_texts(texts, cuts, words):
    # the row JSON is spliced into the example's JSON: it must be _dumps of the edited texts
    fields = {f"f{i}": text for i, text in enumerate(texts)} | {"n": 3}
    taken: dict[str, list[tuple[int, int]]] = {}
    edits = []
    for (which, start, size), word in zip(cuts, words, strict=False):
        name = f"f{which % len(texts)}"
        start = min(start, len(fields[name]))
        end = min(start + size, len(fields[name]))
        if any((s < end and start < e) or s == start for s, e in taken.get(name, [])):
            continue  # occurrences never overlap
        taken.setdefault(name, []).append((start, end))
        op = Operation("replace", 0, "a", "b", word)
        edits.append((name, 0, start, end, fields[name][start:end], op))
    expected = dict(fields)
    for name in {e[0] for e in edits}:
        mine = sorted((e for e in edits if e[0] == name), key=lambda e: e[2])
        text = fields[name]
        for _, _, start, end, _, op in reversed(mine):
            text = text[:start] + op.perturbed + text[end:]
        expected[name] = text
    # text order within a field, the fields in reverse (as a perturbable list may name them)
    in_text_order = sorted(edits, key=lambda e: (-int(e[0][1:]), e[2]))
    if edits:
        # written after what the buffer holds (the rows before it), which it leaves as it is
        out = bytearray(b"earlier rows")
        frame._FieldsJson(fields).write(out, in_text_order)
        expected_json = json.dumps(expected, ensure_ascii=False, sort_keys=True).encode()
        assert bytes(out) == b"earlier rows" + expected_json


def test_japanese_rows_perturb_token_surfaces():
    bench = bench_frame(
        "jsquad_like",
        "japanese",
        [
            {"context": "東京の本を読みました。ますます元気です。", "question": "何を読みますか。"},
        ],
    )
    result = perturb_frame(bench, JA_WORDS, probabilities=ALWAYS, seed=11, tokenizer=_tokenizer())
    rows = {r["variant"]: r for r in _rows(result)}
    assert set(rows) == {"original", "ます", "の", "です"}
    assert sorted(p["original"] for p in rows["ます"]["perturbations"]) == ["まし", "ます"]
    _check_provenance(bench, result)


def test_a_lemma_listed_with_two_parts_of_speech_gets_two_variants():
    words = pd.DataFrame(
        {
            "rank": [1, 2],
            "word": ["の", "の"],
            "lemma": ["の", "の"],
            "pos": ["助詞-格助詞", "助詞-準体助詞"],
        }
    )
    bench = bench_frame("x", "japanese", [{"q": "東京の本を読んだのは私だ。"}])
    result = perturb_frame(bench, words, probabilities=ALWAYS, seed=1, tokenizer=_tokenizer())
    assert [r["variant"] for r in _rows(result)] == [
        "original",
        "の/助詞-格助詞",
        "の/助詞-準体助詞",
    ]


PIECES = [
    "the ",
    "The ",
    "of ",
    "and ",
    "a ",
    "cat ",
    "-",
    "'",
    "’",
    "\n",
    "😀",
    "é",
    "ｔｈｅ ",
    "THE,",
    "dog.",
]
texts = st.lists(
    st.lists(st.sampled_from(PIECES), max_size=25).map("".join), min_size=1, max_size=6
)


@given(questions=texts, seed=st.integers(0, 2**31), perm=st.randoms(use_true_random=False))
@settings(max_examples=60, deadline=None)
def test_properties_offsets_determinism_and_order_independence(questions, seed, perm):
    examples = [{"question": q, "context": q[::-1]} for q in questions]
    bench = bench_frame("prop", "english", examples)
    result = perturb_frame(bench, EN_WORDS, probabilities=ALWAYS, seed=seed)
    _check_provenance(bench, result)
    again = perturb_frame(bench, EN_WORDS, probabilities=ALWAYS, seed=seed)
    assert again.table.equals(result.table)
    # Shuffled examples, shuffled word list and reversed perturbable lists: the same rows.
    order = list(range(len(bench)))
    perm.shuffle(order)
    shuffled = bench.iloc[order].reset_index(drop=True)
    shuffled["perturbable"] = [list(reversed(p)) for p in shuffled["perturbable"]]
    words = EN_WORDS.sample(frac=1, random_state=perm.randint(0, 999))
    other = perturb_frame(shuffled, words, probabilities=ALWAYS, seed=seed)

    def key(rows):  # perturbable is carried over as given, so leave it out
        rows = [{k: v for k, v in r.items() if k != "perturbable"} for r in rows]
        return sorted(rows, key=lambda r: (r["example_id"], r["word_rank"]))

    assert key(_rows(other)) == key(_rows(result))


def test_parquet_bytes_are_identical_across_runs(tmp_path):
    bench = bench_frame(
        "demo",
        "english",
        [{"q": "the cat of the hat and a bat"}] * 1 + [{"q": "and the rest of it"}],
    )
    paths = []
    for i in range(2):
        result = perturb_frame(bench, EN_WORDS, probabilities=PROBS, seed=9)
        paths.append(tmp_path / f"{i}.parquet")
        atomic.write_parquet(paths[-1], result.table)
    assert paths[0].read_bytes() == paths[1].read_bytes()
    back = pq.read_table(io.BytesIO(paths[0].read_bytes()))
    assert back.equals(result.table)


def test_an_empty_word_list_is_an_input_error():
    bench = bench_frame("demo", "english", [{"q": "the"}])
    with pytest.raises(InputError, match=r"data/words/english\.parquet: the word list is empty"):
        perturb_frame(
            bench,
            EN_WORDS.head(0),
            probabilities=PROBS,
            seed=1,
            words_source="data/words/english.parquet",
        )


def test_a_word_list_in_the_wrong_language_is_an_input_error():
    bench = bench_frame("jnli", "japanese", [{"q": "東京の本"}])
    with pytest.raises(
        InputError, match=r"not japanese.*python -m stages\.words --language japanese"
    ):
        perturb_frame(bench, EN_WORDS, probabilities=PROBS, seed=1, tokenizer=_tokenizer())
    bench = bench_frame("gsm8k", "english", [{"q": "the"}])
    with pytest.raises(InputError, match="not english"):
        perturb_frame(bench, JA_WORDS, probabilities=PROBS, seed=1)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda b: b.drop(columns=["answers"]), r"missing column\(s\) \['answers'\]"),
        (lambda b: b.assign(fields=["{not json"]), "row 1, column 'fields': expected a JSON"),
        (lambda b: b.assign(fields=['["a list"]']), "row 1, column 'fields'"),
        (lambda b: b.assign(perturbable=[["nope"]]), "row 1, column 'perturbable': field 'nope'"),
        (lambda b: b.assign(language=["klingon"]), "column 'language'"),
        (lambda b: pd.concat([b, b]), "duplicate id '0'"),
    ],
)
def test_bad_benchmark_rows_name_the_file_row_and_column(change, message):
    bench = change(bench_frame("demo", "english", [{"q": "the"}]))
    with pytest.raises(InputError, match=message) as err:
        perturb_frame(
            bench, EN_WORDS, probabilities=PROBS, seed=1, source="data/benchmarks/demo.parquet"
        )
    assert "data/benchmarks/demo.parquet" in str(err.value)


def test_protected_spans_such_as_the_answer_are_left_intact():
    bench = bench_frame(
        "jsquad_like",
        "english",
        [
            {
                "context": "The answer is the red house of the king.",
                "question": "Where is the king?",
            },
        ],
    )
    bench["protected"] = [["the red house"]]
    result = perturb_frame(bench, EN_WORDS, probabilities=ALWAYS, seed=4)
    context = json.loads(bench["fields"][0])["context"]
    shielded = range(context.index("the red house"), context.index("the red house") + 13)
    the = next(r for r in _rows(result) if r["variant"] == "the")
    assert the["occurrences"] == 3  # "The", "the king" twice; not the one in the answer
    for p in the["perturbations"]:
        if p["field"] == "context":
            assert p["start"] not in shielded
        assert json.loads(the["fields"])["context"].count("the red house") == 1
    assert result.summary["protected_occurrences"] == 1
    assert the["protected"] == ["the red house"]  # carried over for downstream stages


JA_PIECES = ["ます", "まし", "た", "です", "の", "東京", "本", "を", "読み", "ｱｲｳ", "ＡＢＣ", "😀",
             "e\u0301", " ", "\u3000", "\n", "。", "ますます", "𠮷"]  # fmt: skip
ja_texts = st.lists(
    st.lists(st.sampled_from(JA_PIECES), max_size=20).map("".join), min_size=1, max_size=4
)


@given(contexts=ja_texts, seed=st.integers(0, 2**31))
@settings(max_examples=40, deadline=None)
def test_japanese_offsets_index_the_stored_text_whatever_the_unicode(contexts, seed):
    bench = bench_frame(
        "ja_prop", "japanese", [{"context": c, "question": c[:5]} for c in contexts]
    )
    result = perturb_frame(bench, JA_WORDS, probabilities=ALWAYS, seed=seed, tokenizer=_tokenizer())
    _check_provenance(bench, result)
    for row in _rows(result):
        for p in row["perturbations"]:
            assert "ます" not in p["original"] or p["original"] == "ます"
    again = perturb_frame(bench, JA_WORDS, probabilities=ALWAYS, seed=seed, tokenizer=_tokenizer())
    assert again.table.equals(result.table)


def test_rows_flushed_to_arrow_in_chunks_equal_rows_built_at_once(monkeypatch):
    import evalpipe.perturb.columns as columns_module

    examples = [{"q": f"the cat {i} and the dog of a man"} for i in range(12)]
    bench = bench_frame("demo", "english", examples)
    whole = perturb_frame(bench, EN_WORDS, probabilities=ALWAYS, seed=8)
    monkeypatch.setattr(columns_module, "FLUSH_ROWS", 3)
    chunked = perturb_frame(bench, EN_WORDS, probabilities=ALWAYS, seed=8)
    assert chunked.table.column("fields").num_chunks > 3
    assert chunked.table.to_pylist() == whole.table.to_pylist()
    _check_provenance(bench, chunked)


@pytest.mark.parametrize(
    ("language", "words", "text"),
    [
        ("english", EN_WORDS, "The cat of the house and a dog of the farm, and the rest. "),
        ("japanese", JA_WORDS, "東京の駅に行きます。猫の家です。学校の先生になりました。"),
    ],
)
def test_a_delete_prob_sweep_keeps_every_replacement_and_insertion(language, words, text):
    # common random numbers: delete_prob 0.2 -> 0.4 only adds deletions
    bench = bench_frame(language, language, [{"q": text * (1 + i % 3)} for i in range(60)])

    def ops(delete: float) -> dict[tuple, dict]:
        result = perturb_frame(bench, words, probabilities=Probabilities(0.2, 0.2, delete), seed=11)
        return {
            (r["example_id"], r["variant"], p["field"], p["occurrence"]): p
            for r in _rows(result)
            for p in r["perturbations"]
        }

    low, high = ops(0.2), ops(0.4)
    kept = [k for k, p in low.items() if p["op"] in ("replace", "insert")]
    assert len(kept) > 50
    assert all(high.get(k) == low[k] for k in kept)
    assert all(high[k] == p for k, p in low.items())  # deletions stay too
    added = [p["op"] for k, p in high.items() if k not in low]
    assert added and set(added) == {"delete"}


def test_summary_counts_and_names_target_words_that_never_occur():
    bench = bench_frame("demo", "english", [{"q": "The cat and the dog."}])
    summary = perturb_frame(bench, EN_WORDS, probabilities=PROBS, seed=1).summary
    assert summary["target_words_found"] == 2
    assert summary["targets_not_found"] == 2
    assert summary["targets_not_found_top"] == ["of", "a"]  # by rank


def test_each_row_states_its_typo_count_edited_characters_kind_and_script():
    bench = bench_frame("demo", "english", [{"q": "The cat and the dog of the house, 1 of 2."}])
    rows = _rows(perturb_frame(bench, EN_WORDS, probabilities=Probabilities(1, 0, 0), seed=3))
    original, *words = rows
    assert (original["n_typos"], original["n_edited_chars"], original["op"], original["script"]) == (
        0, 0, None, None,
    )  # fmt: skip
    the = next(r for r in words if r["variant"] == "the")
    assert (the["n_typos"], the["n_edited_chars"], the["op"], the["script"]) == (
        3,
        3,
        "replace",
        "latin",
    )
    deleted = _rows(perturb_frame(bench, EN_WORDS, probabilities=Probabilities(0, 0, 1), seed=3))
    assert {(r["op"], r["script"]) for r in deleted[1:]} == {("delete", "latin")}
    mixed = _rows(perturb_frame(bench, EN_WORDS, probabilities=ALWAYS, seed=5))
    assert {r["op"] for r in mixed[1:]} >= {"mixed"}  # "the" x3 with two or three kinds
    for row in (*rows, *deleted, *mixed):
        _check_typo_facts(row)


@pytest.mark.parametrize("draws", [1, 2])
def test_typo_facts_follow_every_kind_and_script_on_a_japanese_sample(draws):
    bench = load_benchmark(get_spec("lawqa"), source="sample")[0]  # kanji words with homophones
    probs = Probabilities(0.15, 0.1, 0.15, 0.15, 0.15, model="keyboard")
    words = word_list("japanese", "wordfreq", raw_dir="/nonexistent", top_n=200, min_length=1)
    result = perturb_frame(
        bench, words, probabilities=probs, seed=7, draws=draws, tokenizer=_tokenizer()
    )
    rows = _rows(result)
    for row in rows:
        _check_typo_facts(row)
    single = {r["op"] for r in rows if r["n_typos"] == 1}
    assert single == {"replace", "insert", "delete", "transpose", "conversion"}
    assert {r["script"] for r in rows} >= {None, "hiragana", "kanji"}
    assert "mixed" in {r["op"] for r in rows}
    assert sum(r["n_typos"] for r in rows) == result.summary["perturbed_occurrences"]
    assert {r["draw"] for r in rows} == set(range(draws))


@settings(max_examples=300, deadline=None)
@given(
    st.binary(min_size=32, max_size=32),
    st.lists(st.integers(0, 2**64), min_size=1, max_size=6),
    st.integers(0, 2**64 - 1),
)
def test_draw_bounds_as_bytes_order_digests_as_their_draws(
    digest: bytes, bounds: list[int], near: int
):
    """The one-draw loop compares digests with ``_bound``s instead of unpacking u."""
    u = int.from_bytes(digest[:8], "big")
    for v in [*bounds, u, u + 1, near, 2**64]:
        assert (digest >= frame._bound(v)) == (u >= v)
    sorted_bounds = sorted(bounds)
    as_bytes = [frame._bound(v) for v in sorted_bounds]
    assert bisect.bisect_right(as_bytes, digest) == bisect.bisect_right(sorted_bounds, u)


def test_the_one_draw_loop_makes_the_rows_of_the_general_loop():
    """The default case (one draw, nothing set aside) runs a specialised copy of the occurrence
    loop: a rule that excludes no occurrence sends the same input through the general loop,
    which must make the same rows, byte for byte."""
    from evalpipe.perturb.eligibility import Eligibility

    texts = [
        {"q": "The cat and the dog of a farm, and a bird.", "c": "Ünïcode: the café of a town"},
        {"q": 'A "quoted" line of the text\nand a tab\tof the end'},
        {"q": "Nothing to see here"},
        {"q": "the the the and and of of a a a the", "z": "and 😀 the emoji of a smile"},
    ]
    bench = bench_frame("demo", "english", texts * 5)
    for seed in range(4):
        plain = perturb_frame(bench, EN_WORDS, probabilities=ALWAYS, seed=seed)
        general = perturb_frame(
            bench, EN_WORDS, probabilities=ALWAYS, seed=seed, eligibility=Eligibility(min_letters=1)
        )
        assert plain.table.num_rows > len(bench)  # typos were made
        assert general.table.equals(plain.table)
        assert general.summary["occurrences"] == plain.summary["occurrences"]
