"""The benchmark registry: sample sets, schema mapping, selection, few-shot pools, local files,
the hub loading path (against a local directory laid out like the Hub) and bad input."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pandas as pd
import pytest
import yaml

from evalpipe.benchmarks import (
    BBH_SUBTASKS,
    EXAMPLE_COLUMNS,
    MMLU_SUBJECTS,
    REGISTRY,
    build_prompts,
    get_spec,
    list_specs,
    load_benchmark,
    sample_files,
    select_examples,
    to_arrow,
    validate_suites,
)
from evalpipe.errors import InputError

BUILTIN = list(REGISTRY)
# samples bundled as JSONL in the Hub schema (lawqa's sample is the publisher's own file)
JSONL_SAMPLES = [n for n in BUILTIN if REGISTRY[n].sample and REGISTRY[n].sample.test]
WITH_HUB = [n for n in BUILTIN if REGISTRY[n].hub is not None]


def _jsonl(path: Path) -> list[dict]:
    return [
        json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()
    ]


def _write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text(
        "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8"
    )
    return path


@pytest.fixture(scope="module")
def loaded() -> dict[str, tuple[pd.DataFrame, pd.DataFrame]]:
    return {
        name: load_benchmark(get_spec(name), source="sample", max_samples=None, seed=42)
        for name in BUILTIN
    }


def test_registry_has_the_built_in_benchmarks_with_their_parsers() -> None:
    assert sorted(BUILTIN) == sorted(
        [
            "gsm8k",
            "bbh",
            "mmlu",
            "imdb",
            "jamp",
            "jnli",
            "niilc",
            "jsquad",
            "jcommonsenseqa",
            "lawqa",
            "lawqa_orders",
            "ja_sentiment",
        ]
    )
    lawqa = get_spec("lawqa")
    assert (lawqa.parser, lawqa.parser_options()["labels"]) == ("mc_letter", ["a", "b", "c", "d"])
    # lawqa's publisher numbers the choices 1-4 for a-d
    assert lawqa.parser_options()["digit_map"] == {"1": "a", "2": "b", "3": "c", "4": "d"}
    assert get_spec("ja_sentiment").labels == ["positive", "neutral", "negative"]
    assert len(BBH_SUBTASKS) == 27 and len(MMLU_SUBJECTS) == 57
    parsers = {s.name: (s.parser, s.parser_options()) for s in list_specs()}
    assert parsers["mmlu"] == ("mc_letter", {"labels": ["A", "B", "C", "D"], "digit_map": None})
    assert parsers["jcommonsenseqa"] == ("mc_index", {"labels": ["0", "1", "2", "3", "4"]})
    assert parsers["imdb"][0] == "json_label" and parsers["imdb"][1]["labels"] == [
        "positive",
        "negative",
    ]
    assert parsers["gsm8k"][0] == "numeric" and parsers["bbh"][0] == "bbh"
    assert get_spec("bbh").parser_options("navigate") == {
        "format": "binary",
        "words": ["Yes", "No"],
    }
    assert get_spec("jcommonsenseqa").max_tokens("zero_shot") == 1
    assert get_spec("jsquad").max_tokens("cot") > get_spec("jsquad").max_tokens("zero_shot") == 25
    schema = get_spec("imdb").json_schema
    assert schema["properties"]["label"]["enum"] == ["positive", "negative"]
    assert schema["properties"]["confidence"]["type"] == "number"
    assert schema["properties"]["reason"]["type"] == "string"


@pytest.mark.parametrize("name", JSONL_SAMPLES)
def test_every_sample_set_loads_and_maps_to_the_schema(name, loaded) -> None:
    spec = get_spec(name)
    examples, fewshot = loaded[name]
    test_file, fewshot_file = sample_files(name)
    assert 15 <= len(_jsonl(test_file)) <= 30
    assert len(_jsonl(fewshot_file)) >= 2
    assert len(examples) == len(_jsonl(test_file))
    for frame in (examples, fewshot):
        assert list(frame.columns) == EXAMPLE_COLUMNS
    assert examples["example_id"].is_unique
    assert examples["example_id"].str.startswith(f"{name}/test/").all()
    assert set(examples["benchmark"]) == {name}
    assert set(examples["language"]) == {spec.language}
    assert set(examples["task_type"]) == {spec.task_type}
    for rec in examples.to_dict("records"):
        fields = json.loads(rec["fields"])
        assert fields and all(isinstance(v, str) and v for v in fields.values())
        assert rec["perturbable"] and set(rec["perturbable"]) <= set(fields)
        assert rec["answer"] in rec["answers"]
        if spec.labels is not None:
            assert rec["labels"] == spec.labels
            assert rec["answer"] in spec.labels
        if rec["choices"] is not None and spec.labels is not None:
            assert len(rec["choices"]) == len(spec.labels)
    # Arrow conversion keeps the fixed schema even where a column is null in every row.
    table = to_arrow(examples)
    assert table.schema.field("choices").type.value_type.equals(
        table.schema.field("answers").type.value_type
    )


@pytest.mark.parametrize("name", BUILTIN)
def test_perturbable_fields_never_hold_answer_choices(name, loaded) -> None:
    examples, _ = loaded[name]
    for rec in examples.to_dict("records"):
        fields = json.loads(rec["fields"])
        text = "\n".join(fields.values())
        assert "Options:" not in text and "選択肢：" not in text
        if rec["choices"] is not None:
            for choice in rec["choices"]:
                # a field may mention a word that is also an option, but never the options block
                assert "\n".join(rec["choices"]) not in text or len(rec["choices"]) == 1, choice


def test_bbh_options_block_moves_to_choices_and_round_trips(loaded) -> None:
    examples, _ = loaded["bbh"]
    raw = {(r["subtask"], i): r for i, r in enumerate(_jsonl(sample_files("bbh")[0]))}
    by_input = {r["input"]: r for r in raw.values()}
    with_options = 0
    for rec in examples.to_dict("records"):
        question = json.loads(rec["fields"])["question"]
        if rec["choices"] is None:
            assert question in by_input
            continue
        with_options += 1
        rebuilt = question + "\nOptions:\n" + "\n".join(rec["choices"])
        assert rebuilt in by_input
        assert rec["answer"] == by_input[rebuilt]["target"]
    assert with_options >= 10
    assert examples["subtask"].isin(BBH_SUBTASKS).all()
    assert examples["example_id"].str.fullmatch(r"bbh/test/[a-z_]+/\d+").all()


def test_mmlu_gold_is_a_letter_and_subject_is_the_subtask(loaded) -> None:
    examples, fewshot = loaded["mmlu"]
    first = examples.iloc[0]
    assert first["example_id"] == "mmlu/test/elementary_mathematics/0"
    assert first["answer"] == "B" and list(first["choices"]) == ["4/12", "7/8", "1/2", "5/8"]
    assert examples["subtask"].isin(MMLU_SUBJECTS).all()
    assert fewshot["example_id"].str.startswith("mmlu/dev/").all()


def test_japanese_inputs_are_split_at_their_llm_jp_eval_labels(loaded) -> None:
    jnli = loaded["jnli"][0].iloc[0]
    assert json.loads(jnli["fields"]) == {
        "premise": "男性がスケートボードに乗って坂道を下っている。",
        "hypothesis": "人がスケートボードに乗っている。",
    }
    jcqa = loaded["jcommonsenseqa"][0].iloc[0]
    assert json.loads(jcqa["fields"]) == {"question": "雨が降っているときに差すものは？"}
    assert list(jcqa["choices"]) == ["傘", "帽子", "手袋", "靴", "眼鏡"] and jcqa["answer"] == "0"
    niilc = loaded["niilc"][0]
    colours = niilc[niilc["answer"] == "赤"].iloc[0]
    assert list(colours["answers"]) == ["赤", "緑", "青"]
    jsquad = loaded["jsquad"][0].iloc[0]
    fields = json.loads(jsquad["fields"])
    assert (
        fields["context"].startswith("富士山 [SEP] ")
        and fields["question"] == "富士山の標高は何メートルか。"
    )
    assert list(jsquad["protected"]) == ["3776メートル"]
    gsm8k = loaded["gsm8k"][0]
    assert gsm8k.loc[gsm8k["example_id"] == "gsm8k/test/7", "answer"].item() == "2520"


@pytest.mark.parametrize("name", BUILTIN)
def test_fewshot_pool_never_shares_items_with_the_evaluated_set(name, loaded) -> None:
    examples, fewshot = loaded[name]
    assert not fewshot.empty
    assert not set(examples["example_id"]) & set(fewshot["example_id"])
    assert not set(examples["fields"]) & set(fewshot["fields"])
    assert not fewshot["example_id"].str.contains("/test/").any()


def test_build_prompts_never_takes_a_demonstration_from_the_evaluated_rows(loaded) -> None:
    spec = get_spec("jnli")
    examples, fewshot = loaded["jnli"]
    leaky_pool = pd.concat([examples.iloc[:5], fewshot], ignore_index=True)
    prompts = build_prompts(spec, examples.iloc[:5], leaky_pool, style="few_shot", n_shots=3)
    for i, prompt in enumerate(prompts):
        for j in range(5):
            premise = json.loads(examples.iloc[j]["fields"])["premise"]
            assert prompt.count(premise) == (1 if i == j else 0)
        assert prompt.count("### 入力:") == 4  # three shots + the question


def test_selection_is_deterministic_and_independent_of_row_order() -> None:
    df = pd.DataFrame({"example_id": [f"x/test/{i}" for i in range(100)], "v": range(100)})
    first = select_examples(df, 10, seed=42)
    again = select_examples(df.sample(frac=1.0, random_state=3), 10, seed=42)
    assert sorted(first["example_id"]) == sorted(again["example_id"])
    assert list(first["v"]) == sorted(first["v"])  # original order kept
    assert set(select_examples(df, 10, seed=7)["example_id"]) != set(first["example_id"])
    assert len(select_examples(df, None, seed=42)) == 100


def test_max_samples_picks_the_same_examples_on_every_load() -> None:
    spec = get_spec("bbh")
    a, _ = load_benchmark(spec, source="sample", max_samples=7, seed=42)
    b, _ = load_benchmark(spec, source="sample", max_samples=7, seed=42)
    assert len(a) == 7 and a.equals(b)
    assert to_arrow(a).equals(to_arrow(b))


@pytest.mark.parametrize("bad", [0, -3, 2.5, "ten", True])
def test_bad_max_samples_is_rejected(bad) -> None:
    with pytest.raises(InputError, match="max_samples"):
        load_benchmark(get_spec("gsm8k"), source="sample", max_samples=bad, seed=42)


def test_unknown_source_is_rejected() -> None:
    with pytest.raises(InputError, match=r"benchmarks\.source.*sample, hub, files"):
        load_benchmark(get_spec("gsm8k"), source="s3", seed=42)


def test_unknown_benchmark_name_lists_the_known_ones(tmp_path) -> None:
    _write_spec(tmp_path, "law_local", _law_spec())
    with pytest.raises(InputError) as info:
        get_spec("gsm9k", tmp_path)
    message = str(info.value)
    assert "'gsm9k'" in message
    for name in [*BUILTIN, "law_local"]:
        assert name in message


# --- local datasets ------------------------------------------------------------------------

LAW_ROWS = [
    {
        "id": "q1",
        "question": "衆議院議員の任期は何年か。",
        "choices": ["2年", "4年", "6年", "3年"],
        "answer": "b",
    },
    {
        "id": "q2",
        "question": "参議院議員の任期は何年か。",
        "choices": ["3年", "4年", "5年", "6年"],
        "answer": "4",
    },
    {
        "id": "q3",
        "question": "内閣総理大臣を指名するのは？",
        "choices": ["天皇", "国会", "最高裁判所", "内閣"],
        "answer": "Ｂ",
    },
]


def _law_spec(**extra) -> dict:
    spec = {
        "include": ["japanese", "local"],
        "task_type": "mc",
        "labels": ["a", "b", "c", "d"],
        "sources": {"files": {"reader": "json", "test": ["law.jsonl"]}},
        "mapping": {
            "id": "id",
            "fields": {"問題": "question"},
            "choices": "choices",
            "answer": "answer",
        },
        "answer": {"type": "choice_letter", "digit_map": "one_based"},
    }
    spec.update(extra)
    return spec


def _write_spec(root: Path, name: str, spec: dict) -> Path:
    """A local benchmark folder ``root/name/`` with its spec.yaml; returns ``root``."""
    folder = root / name
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "spec.yaml").write_text(yaml.safe_dump(spec, allow_unicode=True), encoding="utf-8")
    return root


def _law(tmp_path: Path, rows: list[dict] | None = None, **extra):
    """The law-QA local benchmark in ``tmp_path/law_local/`` with ``rows`` as law.jsonl."""
    _write_spec(tmp_path, "law_local", _law_spec(**extra))
    if rows is not None:
        _write_jsonl(tmp_path / "law_local" / "law.jsonl", rows)
    return get_spec("law_local", tmp_path)


def test_local_jsonl_maps_fields_choices_and_normalises_answers(tmp_path) -> None:
    spec = _law(tmp_path, LAW_ROWS)
    assert spec.kind == "local" and spec.parser == "mc_letter"
    assert spec.parser_options() == {
        "labels": ["a", "b", "c", "d"],
        "digit_map": {"1": "a", "2": "b", "3": "c", "4": "d"},
    }
    examples, fewshot = load_benchmark(spec, source="hub", max_samples=None, seed=42)
    assert list(examples["example_id"]) == ["law_local/q1", "law_local/q2", "law_local/q3"]
    assert list(examples["answer"]) == ["b", "d", "b"]  # "4" -> d, full-width "Ｂ" -> b
    assert json.loads(examples.iloc[0]["fields"]) == {"問題": "衆議院議員の任期は何年か。"}
    assert list(examples.iloc[0]["perturbable"]) == ["問題"]
    assert list(examples.iloc[0]["choices"]) == ["2年", "4年", "6年", "3年"]
    assert fewshot.empty and list(fewshot.columns) == EXAMPLE_COLUMNS
    prompt = build_prompts(spec, examples.iloc[:1], fewshot, style="zero_shot", n_shots=3)[0]
    assert "問題：衆議院議員の任期は何年か。\n選択肢：\na. 2年\nb. 4年\nc. 6年\nd. 3年" in prompt


def test_local_json_file_with_choices_in_separate_keys_and_a_fewshot_file(tmp_path) -> None:
    rows = [
        {
            "text": r["question"],
            "A": r["choices"][0],
            "B": r["choices"][1],
            "C": r["choices"][2],
            "D": r["choices"][3],
            "gold": r["answer"].upper() if r["answer"] == "b" else "D",
        }
        for r in LAW_ROWS[:2]
    ]
    _write_spec(
        tmp_path,
        "mylaw",
        {
            "include": ["english", "local"],
            "task_type": "mc",
            "labels": ["A", "B", "C", "D"],
            "sources": {
                "files": {
                    "reader": "json",
                    "test": ["law.json"],
                    "fewshot": ["shots.jsonl"],
                    "json_field": "samples",
                }
            },
            "mapping": {"fields": {"Question": "text"}, "choices": list("ABCD"), "answer": "gold"},
            "answer": {"type": "choice_letter", "digit_map": "one_based"},
        },
    )
    (tmp_path / "mylaw" / "law.json").write_text(
        json.dumps({"version": 1, "samples": rows}, ensure_ascii=False), encoding="utf-8"
    )
    _write_jsonl(tmp_path / "mylaw" / "shots.jsonl", [dict(rows[0], text="日本の首都は？")])
    spec = get_spec("mylaw", tmp_path)
    examples, fewshot = load_benchmark(spec, max_samples=None, seed=1)
    assert list(examples["answer"]) == ["B", "D"]
    assert list(examples["example_id"]) == ["mylaw/test/0", "mylaw/test/1"]
    assert list(fewshot["example_id"]) == ["mylaw/fewshot/0"]
    prompt = build_prompts(spec, examples.iloc[:1], fewshot, style="few_shot", n_shots=2)[0]
    assert prompt.count("Question: ") == 2 and "Answer: B\n\nQuestion: 衆議院" in prompt


def test_local_prompt_shows_fields_in_the_configured_order(tmp_path) -> None:
    _write_spec(
        tmp_path,
        "ordered",
        {
            "include": ["english", "local"],
            "task_type": "classification",
            "labels": ["yes", "no"],
            "sources": {"files": {"reader": "json", "test": ["c.jsonl"]}},
            "mapping": {"fields": {"Passage": "ctx", "Question": "q"}, "answer": "y"},
            "answer": {"type": "label"},
        },
    )
    _write_jsonl(
        tmp_path / "ordered" / "c.jsonl", [{"q": "Which one?", "ctx": "Some context.", "y": "yes"}]
    )
    spec = get_spec("ordered", tmp_path)
    examples, _ = load_benchmark(spec, seed=42)
    prompt = build_prompts(spec, examples, None, style="zero_shot", n_shots=0)[0]
    assert "Passage: Some context.\nQuestion: Which one?\nAnswer:" in prompt
    assert prompt.startswith("Classify the following input as one of: yes, no.")


def test_local_classification_dataset_uses_its_label_space(tmp_path) -> None:
    _write_spec(
        tmp_path,
        "reviews",
        {
            "include": ["japanese", "local"],
            "task_type": "classification",
            "labels": ["pos", "neg"],
            "sources": {"files": {"reader": "json", "test": ["c.jsonl"]}},
            "mapping": {"fields": {"文章": "t"}, "answer": "y"},
            "answer": {"type": "label"},
        },
    )
    _write_jsonl(
        tmp_path / "reviews" / "c.jsonl",
        [{"t": "最高の映画だった", "y": "pos"}, {"t": "二度と見ない", "y": "neg"}],
    )
    spec = get_spec("reviews", tmp_path)
    examples, _ = load_benchmark(spec, seed=42)
    assert list(examples["answer"]) == ["pos", "neg"] and examples["choices"].isna().all()
    assert spec.parser == "nli" and spec.parser_options() == {"labels": ["pos", "neg"]}


def test_local_file_missing_a_mapped_field_names_the_file_and_field(tmp_path) -> None:
    spec = _law(tmp_path, [{k: v for k, v in r.items() if k != "question"} for r in LAW_ROWS])
    with pytest.raises(InputError, match=r"law\.jsonl: mapped field\(s\) \['question'\] not found"):
        load_benchmark(spec, seed=42)


def test_local_row_missing_a_mapped_field_names_the_row(tmp_path) -> None:
    rows = [dict(r) for r in LAW_ROWS]
    del rows[2]["question"]
    with pytest.raises(InputError, match=r'law\.jsonl, row 3: field "question" is missing'):
        load_benchmark(_law(tmp_path, rows), seed=42)


def test_local_answer_outside_the_choices_names_the_row(tmp_path) -> None:
    rows = [dict(r) for r in LAW_ROWS]
    rows[1]["answer"] = "e"
    with pytest.raises(
        InputError, match=r"law\.jsonl, row 2: field \"answer\": answer 'e' is not one of"
    ):
        load_benchmark(_law(tmp_path, rows), seed=42)


def test_local_row_with_the_wrong_number_of_choices_names_the_row(tmp_path) -> None:
    rows = [dict(r) for r in LAW_ROWS]
    rows[0]["choices"] = ["2年", "4年", "6年"]
    with pytest.raises(InputError, match=r"row 1: .*expected 4 choices"):
        load_benchmark(_law(tmp_path, rows), seed=42)


def test_local_empty_file_is_an_empty_selection_error(tmp_path) -> None:
    spec = _law(tmp_path, [])
    (tmp_path / "law_local" / "law.jsonl").write_text("\n", encoding="utf-8")
    with pytest.raises(InputError, match="law_local: no examples selected"):
        load_benchmark(spec, seed=42)


def test_local_broken_json_line_is_named(tmp_path) -> None:
    spec = _law(tmp_path, [])
    (tmp_path / "law_local" / "law.jsonl").write_text(
        json.dumps(LAW_ROWS[0], ensure_ascii=False) + '\n{"id": "q2", \n', encoding="utf-8"
    )
    with pytest.raises(InputError, match=r"law\.jsonl:2: not valid JSON"):
        load_benchmark(spec, seed=42)


def test_local_duplicate_ids_are_rejected(tmp_path) -> None:
    with pytest.raises(InputError, match="row 2: duplicate example id 'law_local/q1'"):
        load_benchmark(_law(tmp_path, [LAW_ROWS[0], LAW_ROWS[0]]), seed=42)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"sources": {}}, "sources.files: a local benchmark reads its own files"),
        ({"language": "french"}, "language: expected one of english, japanese"),
        ({"task_type": "regression"}, "task_type one of mc, classification"),
        ({"mapping": {"fields": {"問題": "question"}, "answer": "answer"}}, "missing key 'choices'"),
        ({"perturbable": ["answer"]}, r"perturbable: \['answer'\] are not among mapping.fields"),
        ({"answer": {"type": "choice_letter", "strict": True}}, r"\['strict'\] are not options"),
        ({"answer": {"type": "letters"}}, "unknown answer type 'letters'"),
        ({"metric": "bleu"}, "metric: expected one of"),
        ({"include": ["japanese", "locale"]}, "include: 'locale' not found"),
        ({"prompt": {"body": "{{ question "}}, r"prompt.body: not a valid template"),
        ({"generation": {"max_tokens": {"zero_shot": 0}}}, r"max_tokens.zero_shot: expected an integer >= 1"),
        ({"colour": "red"}, r"unknown key\(s\) \['colour'\]"),
    ],
)  # fmt: skip
def test_local_spec_errors_name_the_spec_file_and_key(tmp_path, change, message) -> None:
    with pytest.raises(InputError, match=message) as info:
        _law(tmp_path, LAW_ROWS, **change)
    assert str(tmp_path / "law_local" / "spec.yaml") in str(info.value)


def test_local_spec_named_like_a_builtin_is_rejected(tmp_path) -> None:
    _write_spec(tmp_path, "gsm8k", _law_spec())
    with pytest.raises(InputError, match="clashes with the built-in"):
        get_spec("gsm8k", tmp_path)


def test_include_cycle_is_reported(tmp_path) -> None:
    (tmp_path / "a.yaml").write_text("include: b\n", encoding="utf-8")
    (tmp_path / "b.yaml").write_text("include: a\n", encoding="utf-8")
    _write_spec(tmp_path, "loop", {**_law_spec(), "include": ["../a"]})
    with pytest.raises(
        InputError, match=r"include cycle \(spec.yaml -> a.yaml -> b.yaml -> a.yaml\)"
    ):
        get_spec("loop", tmp_path)


# --- hub path --------------------------------------------------------------------------------


def _hub_repo(root: Path, dataset: str, splits: dict[str | None, dict[str, list[dict]]]) -> None:
    """Write ``<root>/<dataset>/`` like a Hub dataset repository: README.md with ``configs:``
    metadata and one Parquet file per config and split."""
    repo = root / dataset
    lines = ["---", "configs:"]
    for config, by_split in splits.items():
        name = config or "default"
        lines += [f"- config_name: {name}", "  data_files:"]
        for split, rows in by_split.items():
            folder = repo / name
            folder.mkdir(parents=True, exist_ok=True)
            pd.DataFrame(rows).to_parquet(folder / f"{split}-00000-of-00001.parquet", index=False)
            lines += [f"  - split: {split}", f"    path: {name}/{split}-*"]
    (repo / "README.md").parent.mkdir(parents=True, exist_ok=True)
    (repo / "README.md").write_text(
        "\n".join([*lines, "---", f"# {dataset}", ""]), encoding="utf-8"
    )


@pytest.fixture(scope="module")
def hub_dir(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("hub")
    test, shots = (_jsonl(p) for p in sample_files("gsm8k"))
    _hub_repo(root, "openai/gsm8k", {"main": {"test": test, "train": shots}})
    bbh_rows = _jsonl(sample_files("bbh")[0]) + _jsonl(sample_files("bbh")[1])
    configs = {}
    for subtask in BBH_SUBTASKS:
        rows = [
            {"input": r["input"], "target": r["target"]}
            for r in bbh_rows
            if r["subtask"] == subtask
        ]
        # each config needs more rows than the 3 held out for few-shot: pad with distinct items
        pad = [
            {
                "input": f"{subtask} {k}: True and " + "not " * k + "False is",
                "target": str(k % 2 == 1),
            }
            for k in range(5 - len(rows))
        ]
        configs[subtask] = {"test": rows + pad}
    _hub_repo(root, "SaylorTwift/bbh", configs)
    test, dev = (_jsonl(p) for p in sample_files("mmlu"))
    _hub_repo(root, "cais/mmlu", {"all": {"test": test, "dev": dev}})
    test, train = (_jsonl(p) for p in sample_files("imdb"))
    _hub_repo(root, "stanfordnlp/imdb", {"plain_text": {"test": test, "train": train}})
    ja = {}
    for name in ("jamp", "jnli", "niilc", "jsquad", "jcommonsenseqa"):
        test, train = (_jsonl(p) for p in sample_files(name))
        ja[name] = {"test": test, "train": train, "validation": train[:1]}
    _hub_repo(root, "zenless-lab/llm-jp-eval", ja)
    return root


@pytest.mark.parametrize("name", WITH_HUB)
def test_hub_loader_reads_a_directory_laid_out_like_the_hub(name, hub_dir) -> None:
    spec = get_spec(name)
    examples, fewshot = load_benchmark(
        spec, source="hub", max_samples=None, seed=42, hub_dir=hub_dir
    )
    sample, sample_shots = load_benchmark(spec, source="sample", max_samples=None, seed=42)
    assert list(examples.columns) == EXAMPLE_COLUMNS
    assert not set(examples["example_id"]) & set(fewshot["example_id"])
    if name == "bbh":
        # no train split on the Hub: three items per subtask are held out as the few-shot pool
        assert examples["subtask"].nunique() == 27 and fewshot["subtask"].nunique() == 27
        assert (fewshot.groupby("subtask").size() <= 3).all()
        assert fewshot["example_id"].str.startswith("bbh/test/").all()
    else:
        # the same raw rows give the same examples whichever way they were loaded
        pd.testing.assert_frame_equal(examples, sample)
        assert sorted(fewshot["fields"]) == sorted(sample_shots["fields"])


def test_hub_loader_honours_max_samples_and_the_env_override(hub_dir, monkeypatch) -> None:
    monkeypatch.setenv("EVALPIPE_HUB_DIR", str(hub_dir))
    examples, _ = load_benchmark(get_spec("mmlu"), source="hub", max_samples=5, seed=42)
    again, _ = load_benchmark(get_spec("mmlu"), source="hub", max_samples=5, seed=42)
    assert len(examples) == 5 and examples.equals(again)


def test_hub_loader_failure_names_the_dataset(tmp_path) -> None:
    with pytest.raises(
        InputError, match=r"openai/gsm8k \(config main, split test\): could not load"
    ):
        load_benchmark(get_spec("gsm8k"), source="hub", seed=42, hub_dir=tmp_path)


# --- spec files: inheritance, the files source, the suites declaration, answer types ---------


def test_includes_merge_the_jglue_family_and_the_nli_base() -> None:
    jnli, jamp = get_spec("jnli"), get_spec("jamp")
    # jglue gives the version, jnli.yaml the reader; nli_ja gives labels and the mapper
    assert jnli.files.reader == "jnli" and jamp.files.reader == "jamp"
    assert jnli.version == "JGLUE v1.1" and jamp.version.startswith("Jamp")
    for spec in (jnli, jamp):
        assert spec.labels == ["entailment", "contradiction", "neutral"]
        assert spec.mapper_name == "llm_jp_nli" and spec.perturbable == ("premise", "hypothesis")
        assert spec.hub.dataset == "zenless-lab/llm-jp-eval" and spec.hub.configs == (spec.name,)
    assert get_spec("bbh").hub.configs == BBH_SUBTASKS  # the one list, in bbh.yaml


def test_the_worked_example_of_the_docs_renders_the_documented_prompt(tmp_path) -> None:
    e2e = importlib.util.spec_from_file_location(
        "_e2e", Path(__file__).with_name("test_benchmarks_e2e.py")
    )
    module = importlib.util.module_from_spec(e2e)
    e2e.loader.exec_module(module)
    (tmp_path / "mini").mkdir()
    (tmp_path / "mini" / "spec.yaml").write_text(module.MINI_SPEC, encoding="utf-8")
    _write_jsonl(tmp_path / "mini" / "test.jsonl", [{"q": "Is ice hot?", "a": "no"}])
    spec = get_spec("mini", tmp_path)
    examples, _ = load_benchmark(spec, seed=42)
    assert build_prompts(spec, examples, None, style="zero_shot", n_shots=0) == [
        "Classify the following input as one of: yes, no. Answer with the label only.\n\n"
        "Question: Is ice hot?\nAnswer:"
    ]
    assert spec.parser == "nli" and spec.answer.classification


def test_a_spec_can_include_a_builtin_and_read_listed_files_with_the_json_reader(tmp_path) -> None:
    """The generic reader: the spec lists the files (publisher readers know their own)."""
    from evalpipe.benchmarks import load_spec

    spec_file = tmp_path / "gsm8k_copy.yaml"
    spec_file.write_text(
        "include: gsm8k\n"
        "sources:\n"
        "  files: {reader: json, test: [test.jsonl], fewshot: [train.jsonl], version: copy v1}\n",
        encoding="utf-8",
    )
    spec = load_spec(spec_file, name="gsm8k", kind="builtin")
    assert spec.prompt["vars"]["answer_prefix"] == "Answer:" and spec.budgets["cot"] == 512
    test, train = (_jsonl(p) for p in sample_files("gsm8k"))
    (tmp_path / "gsm8k").mkdir()
    _write_jsonl(tmp_path / "gsm8k" / "test.jsonl", test)
    _write_jsonl(tmp_path / "gsm8k" / "train.jsonl", train)
    files, files_shots = load_benchmark(spec, source="files", files_dir=tmp_path, seed=42)
    sample, sample_shots = load_benchmark(spec, source="sample", seed=42)
    pd.testing.assert_frame_equal(files, sample)
    assert sorted(files_shots["fields"]) == sorted(sample_shots["fields"])
    assert files.attrs["evalpipe"]["dataset_version"] == "copy v1"
    # no train file: the benchmark still runs, with an empty pool, and says what is missing
    (tmp_path / "gsm8k" / "train.jsonl").unlink()
    examples, no_shots = load_benchmark(spec, source="files", files_dir=tmp_path, seed=42)
    assert no_shots.empty
    assert examples.attrs["evalpipe"]["fewshot_missing"] == [
        str(tmp_path / "gsm8k" / "train.jsonl")
    ]
    (tmp_path / "gsm8k" / "test.jsonl").unlink()
    with pytest.raises(InputError, match=r"gsm8k: no file matches \['test.jsonl'\]"):
        load_benchmark(spec, source="files", files_dir=tmp_path, seed=42)


def test_a_reader_that_is_not_registered_is_named(tmp_path) -> None:
    _write_spec(
        tmp_path,
        "odd",
        {**_law_spec(), "sources": {"files": {"reader": "nosuch", "test": ["law.jsonl"]}}},
    )
    _write_jsonl(tmp_path / "odd" / "law.jsonl", LAW_ROWS)
    with pytest.raises(InputError, match=r"unknown reader 'nosuch'; known readers: .*json"):
        load_benchmark(get_spec("odd", tmp_path), seed=42)


def test_suites_declaration_is_checked_against_the_specs(tmp_path) -> None:
    _write_spec(tmp_path, "law_local", _law_spec())
    ok = validate_suites({"gsm8k": "english", "law_local": "japanese"}, local=tmp_path)
    assert ok == {"gsm8k": "english", "law_local": "japanese"}
    with pytest.raises(InputError, match=r"benchmarks.suites.gsm8k: japanese, but its spec"):
        validate_suites({"gsm8k": "japanese"}, local=tmp_path)
    with pytest.raises(InputError, match="unknown benchmark 'nope'"):
        validate_suites({"nope": "english"}, local=tmp_path)
    with pytest.raises(InputError, match=r"benchmarks.suites: expected a mapping"):
        validate_suites(["gsm8k"], local=tmp_path)


def test_answer_types_decide_parsers_options_and_classification() -> None:
    from evalpipe.answers.types import ANSWER_TYPES

    classification = {n for n, s in REGISTRY.items() if s.answer.classification}
    assert classification == {
        "mmlu",
        "imdb",
        "jamp",
        "jnli",
        "jcommonsenseqa",
        "lawqa",
        "lawqa_orders",
        "ja_sentiment",
    }
    bbh = get_spec("bbh")
    assert bbh.parser_options("navigate") == {
        "format": "binary",
        "words": ["Yes", "No"],
    }
    assert bbh.parser_options("not_a_subtask") == {}
    imdb = get_spec("imdb")
    assert imdb.parser_options(scoring={"sentiment_strict": False})["strict"] is False
    assert imdb.answer.has_invalid_class(imdb.parser_options(scoring={"sentiment_strict": False}))
    assert not imdb.answer.has_invalid_class(imdb.parser_options())
    assert ANSWER_TYPES["number"].normalise_gold("1,234") == "1234"
    assert ANSWER_TYPES["number"].parse("#### 1,234").prediction == "1234"


def test_every_bbh_subtask_declares_its_answer_format_in_the_spec() -> None:
    # bbh.yaml is the one list of subtasks; each entry carries its answer format
    from collections import Counter

    bbh = get_spec("bbh")
    assert set(bbh.subtask_answers) == set(BBH_SUBTASKS)
    formats = {s: bbh.parser_options(s)["format"] for s in BBH_SUBTASKS}
    assert Counter(formats.values()) == {
        "choice": 17,
        "binary": 6,
        "integer": 2,
        "brackets": 1,
        "text": 1,
    }
    assert bbh.parser_options("sports_understanding")["words"] == ["yes", "no"]
    assert bbh.parser_options("boolean_expressions")["words"] == ["True", "False"]
    assert bbh.parser_options("formal_fallacies")["words"] == ["valid", "invalid"]


def test_a_bbh_subtask_without_an_answer_format_is_refused(tmp_path: Path) -> None:
    import copy

    from evalpipe.benchmarks.spec_build import build_spec, load_spec
    from evalpipe.benchmarks.spec_files import resolve, specs_root

    path = specs_root() / "bbh.yaml"
    data = resolve(path)
    assert build_spec(data, name="bbh", path=path, kind="builtin").subtask_answers["snarks"]
    cases = [
        ("Determine which of two sentences is sarcastic.", "subtasks.snarks.answer: missing ['format']"),
        ({"description": "d"}, "subtasks.snarks.answer: missing ['format']"),
        ({"description": "d", "answer": {}}, "subtasks.snarks.answer: missing ['format']"),
        ({"answer": {"format": "mc"}}, "subtasks.snarks.answer: bbh: format: expected one of choice"),
        ({"answer": {"format": "binary"}}, "needs `words`"),
        ({"answer": {"format": "binary", "words": [True, False]}}, "needs `words`"),
        ({"answer": {"format": "choice", "labels": ["A"]}}, "not per-subtask options"),
        ({"answers": {"format": "choice"}}, "subtasks.snarks: unknown key(s) ['answers']"),
    ]  # fmt: skip
    for entry, needle in cases:
        broken = copy.deepcopy(data)
        broken["subtasks"]["snarks"] = entry
        with pytest.raises(InputError) as err:
            build_spec(broken, name="bbh", path=path, kind="builtin")
        assert needle in str(err.value) and "bbh.yaml" in str(err.value)
    # a local spec inheriting BBH may add a subtask, and must give it a format too
    folder = tmp_path / "bbh_plus"
    folder.mkdir()
    local = {"include": "bbh", "sources": {"files": {"reader": "json", "test": ["t.jsonl"]}}}
    local["subtasks"] = {"my_task": "A subtask of my own."}
    (folder / "spec.yaml").write_text(yaml.safe_dump(local), encoding="utf-8")
    with pytest.raises(InputError, match=r"subtasks\.my_task\.answer: missing \['format'\]"):
        load_spec(folder / "spec.yaml")
    local["subtasks"] = {"my_task": {"description": "d", "answer": {"format": "integer"}}}
    (folder / "spec.yaml").write_text(yaml.safe_dump(local), encoding="utf-8")
    assert load_spec(folder / "spec.yaml").parser_options("my_task") == {"format": "integer"}


def _bundled_jsonl() -> list[Path]:
    from evalpipe.benchmarks.loading import samples_root

    return sorted(samples_root().rglob("*.jsonl"))


@pytest.mark.parametrize("path", _bundled_jsonl(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_bundled_reader_gives_what_datasets_gives(path: Path) -> None:
    """The sample source reads its files with pyarrow directly (no `datasets` import per
    benchmarks stage); rows, values, types and key order must be datasets' own."""
    from evalpipe.benchmarks.readers.base import read_bundled_jsonl, read_json_rows

    fast, reference = read_bundled_jsonl(path), read_json_rows(path)
    assert fast and repr(fast) == repr(reference)


def test_bundled_reader_matches_datasets_on_ragged_rows_and_falls_back_on_bad_ones(
    tmp_path,
) -> None:
    from evalpipe.benchmarks.readers.base import read_bundled_jsonl, read_json_rows

    ragged = tmp_path / "ragged.jsonl"
    rows = [
        {"q": "a", "n": 1, "tags": ["x"]},
        {"n": 2.5, "q": "b", "extra": {"k": None}},
        {"q": "c", "tags": [], "n": None},
    ]
    ragged.write_text("\n".join(json.dumps(r) for r in rows) + "\n\n", encoding="utf-8")
    assert repr(read_bundled_jsonl(ragged)) == repr(read_json_rows(ragged))
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n", encoding="utf-8")
    assert read_bundled_jsonl(empty) == read_json_rows(empty) == []
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"q": "a"}\n{"q": \n', encoding="utf-8")
    with pytest.raises(InputError, match=r"bad\.jsonl:2"):
        read_bundled_jsonl(bad)
