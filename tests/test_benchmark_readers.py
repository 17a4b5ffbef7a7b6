"""Publisher-file readers (``benchmarks.source: files``) and the raw-schema Hub copies of JGLUE
(``hub_raw``): real excerpts of the publishers' files (tests/fixtures/publisher/, see its
README), the same examples as the Hub path for the same questions, bad layouts named by file
and line, and the dataset version recorded in the artifact."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest
import yaml

from evalpipe import atomic
from evalpipe.benchmarks import EXAMPLE_COLUMNS, get_spec, load_benchmark, to_arrow
from evalpipe.benchmarks.loading import dataset_metadata, recorded_metadata, resolve_source
from evalpipe.benchmarks.readers import READERS, Reader
from evalpipe.errors import InputError
from evalpipe.params_schema import validate_params
from tests.conftest import TEST_PARAMS
from tests.test_benchmarks import _hub_repo

FIXTURES = Path(__file__).parent / "fixtures" / "publisher"
ALL = ("gsm8k", "bbh", "mmlu", "imdb", "jamp", "jnli", "niilc", "jsquad", "jcommonsenseqa")


def _files(name: str, files_dir: Path = FIXTURES) -> tuple[pd.DataFrame, pd.DataFrame]:
    return load_benchmark(
        get_spec(name), source="files", max_samples=None, seed=42, files_dir=files_dir
    )


def _copy(tmp_path: Path, name: str) -> Path:
    """A writable copy of one fixture folder under ``tmp_path/<name>``."""
    shutil.copytree(FIXTURES / name, tmp_path / name)
    return tmp_path / name


def test_every_builtin_benchmark_has_a_reader() -> None:
    # lawqa_orders and wrime read the seeds' own data (tests/test_benchmark_readers_seeds.py)
    assert set(ALL) <= set(READERS)
    publishers = [r for r in READERS.values() if isinstance(r, Reader)]
    assert all(r.layout and r.origin for r in publishers)
    # one registry: the generic reader of the files a spec lists sits next to the publishers'
    assert {n for n, r in READERS.items() if not isinstance(r, Reader)} == {"json"}


@pytest.mark.parametrize("name", ALL)
def test_publisher_files_load_into_the_common_schema(name) -> None:
    examples, fewshot = _files(name)
    assert list(examples.columns) == EXAMPLE_COLUMNS
    assert examples["example_id"].is_unique and len(examples) >= 3
    assert not set(examples["example_id"]) & set(fewshot["example_id"])
    for rec in examples.to_dict("records"):
        fields = json.loads(rec["fields"])
        assert set(rec["perturbable"]) <= set(fields)
        # answer options never sit in a perturbable field
        for choice in rec["choices"] or []:
            assert all(choice not in fields[f] for f in rec["perturbable"] if len(choice) > 3)
        assert rec["answer"] in rec["answers"]
    info = examples.attrs["evalpipe"]
    assert info["source"] == "files" and info["dataset_version"]


def test_gsm8k_files_match_the_hub_rows_and_ids() -> None:
    examples, fewshot = _files("gsm8k")
    first = json.loads(examples.loc[0, "fields"])
    assert first["question"].startswith("Janet\u2019s ducks lay 16 eggs")
    assert examples.loc[0, "answer"] == "18" and examples.loc[0, "example_id"] == "gsm8k/test/0"
    assert fewshot["example_id"].str.startswith("gsm8k/train/").all()


BBH_FIXTURE = {"boolean_expressions", "date_understanding", "hyperbaton", "web_of_lies"}


def test_bbh_options_go_to_choices_and_three_per_subtask_are_held_out() -> None:
    examples, fewshot = _files("bbh")
    assert set(examples["subtask"]) == BBH_FIXTURE
    # hyperbaton asks every question with the same text; only the options differ, so the
    # held-out items are not duplicates of evaluated ones and stay in the pool
    assert (fewshot.groupby("subtask").size() == 3).all() and set(fewshot["subtask"]) == BBH_FIXTURE
    assert len(examples) + len(fewshot) == 20
    date = examples[examples["subtask"] == "date_understanding"].iloc[0]
    assert date["choices"][0].startswith("(A) ") and "Options:" not in date["fields"]
    assert date["answer"].startswith("(")


def test_bbh_cot_prompts_are_the_pool_and_every_example_is_evaluated(tmp_path) -> None:
    folder = _copy(tmp_path, "bbh")
    shutil.copytree(FIXTURES / "bbh-cot-prompts", folder / "cot-prompts")
    examples, fewshot = _files("bbh", tmp_path)
    assert len(examples) == 20  # nothing held out
    assert fewshot["example_id"].str.startswith("bbh/cot/").all()
    assert fewshot.groupby("subtask").size().to_dict() == {
        "boolean_expressions": 3,
        "date_understanding": 3,
        "web_of_lies": 3,
    }
    date = fewshot[fewshot["subtask"] == "date_understanding"].iloc[0]
    assert json.loads(date["fields"])["question"].startswith("Today is Christmas Eve of 1937.")
    assert list(date["choices"])[3] == "(D) 12/14/1937" and date["answer"] == "(D)"
    missing = examples.attrs["evalpipe"]["fewshot_missing"]
    assert missing[-1] == "cot-prompts/hyperbaton.txt" and len(missing) == 27 - 4 + 1
    bad = folder / "cot-prompts" / "web_of_lies.txt"
    _write(bad, bad.read_text(encoding="utf-8").replace("So the answer is", "Hence", 1))
    with pytest.raises(InputError, match=r"web_of_lies\.txt:5: exemplar without"):
        _files("bbh", tmp_path)
    _write(bad, "Q: x\nA: y. So the answer is Yes.")
    with pytest.raises(InputError, match=r'web_of_lies\.txt: no "-----" line'):
        _files("bbh", tmp_path)


def test_mmlu_csv_rows_give_letters_subjects_and_dev_shots() -> None:
    examples, fewshot = _files("mmlu")
    assert list(examples["example_id"][:2]) == [
        "mmlu/test/abstract_algebra/0",
        "mmlu/test/abstract_algebra/1",
    ]
    assert list(examples["answer"][:4]) == ["B", "C", "D", "B"]
    # quoted fields with commas stay one option
    assert list(examples.loc[2, "choices"]) == ["0", "1", "0,1", "0,4"]
    assert examples["subtask"].tolist().count("anatomy") == 3
    assert set(fewshot["subtask"]) == {"abstract_algebra", "college_mathematics"}


def test_mmlu_quoted_fields_span_lines_as_in_the_archive() -> None:
    # real rows of the archive: a question over three lines with commas in its options, and a
    # dev question typed with CRLF line ends inside its quotes
    data = READERS["mmlu"].load(FIXTURES / "mmlu", subtasks=get_spec("mmlu").subtasks)
    rows = [
        (r, where)
        for r, where in zip(data.evaluated.rows, data.evaluated.locations, strict=True)
        if r["subject"] == "computer_security"
    ]
    assert [where.rsplit(":", 1)[1] for _, where in rows] == ["1", "2", "5"]
    tls = rows[1][0]
    assert tls["question"].endswith(
        "\n1. An attacker replaying bytes that a client sent earlier.\n"
        "2. An attacker impersonating the server."
    )
    assert tls["choices"] == ["True, True", "False, False", "True, False", "False, True"]
    assert tls["answer"] == "A" and rows[2][0]["question"].startswith("MIT’s Kerberos")
    dev = [r for r in data.fewshot.rows if r["subject"] == "college_mathematics"]
    assert len(dev) == 3 and dev[2]["answer"] == "B"
    # kept as distributed: the Hub's loading script (datasets' hendrycks_test.py) also read the
    # archive's byte lines with csv, which keeps a CR inside quotes
    assert "nonnegative.\r\nII. The determinant" in dev[2]["question"]
    examples, _ = _files("mmlu")
    ids = examples["example_id"].tolist()
    # subjects in alphabetical order, as the Hub's "all" config has them
    assert ids[-3:] == [f"mmlu/test/computer_security/{i}" for i in range(3)]


def _nest(tmp_path: Path, name: str, top: str) -> None:
    """The fixture of ``name`` under ``tmp_path/<name>/<top>/``: the archive unpacked as is."""
    shutil.copytree(FIXTURES / name, tmp_path / name / top)


@pytest.mark.parametrize(
    ("name", "top"),
    [("imdb", "aclImdb"), ("mmlu", "data"), ("jnli", "jnli-v1.1"), ("jsquad", "jsquad-v1.1"),
     ("jcommonsenseqa", "jcommonsenseqa-v1.1")],
)  # fmt: skip
def test_an_archive_unpacked_with_its_top_folder_reads_the_same(name, top, tmp_path) -> None:
    # `tar xzf aclImdb_v1.tar.gz -C imdb/` gives imdb/aclImdb/test/pos/...; `tar xf data.tar -C
    # mmlu/` gives mmlu/data/test/...; a copy of JGLUE's folder gives jnli/jnli-v1.1/...
    _nest(tmp_path, name, top)
    nested, nested_shots = _files(name, tmp_path)
    flat, flat_shots = _files(name)
    pd.testing.assert_frame_equal(nested, flat)
    pd.testing.assert_frame_equal(nested_shots, flat_shots)
    assert nested.attrs["evalpipe"]["dataset_version"] == flat.attrs["evalpipe"]["dataset_version"]


def test_two_unpacked_versions_side_by_side_are_refused(tmp_path) -> None:
    _nest(tmp_path, "jnli", "jnli-v1.1")
    shutil.copytree(FIXTURES / "jnli", tmp_path / "jnli" / "jnli-v1.3")
    for path in (tmp_path / "jnli" / "jnli-v1.3").glob("*-v1.1.json"):
        path.rename(path.with_name(path.name.replace("v1.1", "v1.3")))
    with pytest.raises(
        InputError, match=r"several folders hold valid-v\*\.json \(jnli-v1\.1, jnli-v1\.3\)"
    ):
        _files("jnli", tmp_path)


def test_imdb_reviews_take_their_label_from_the_folder_and_their_id_from_the_name() -> None:
    examples, fewshot = _files("imdb")
    assert sorted(examples["example_id"]) == [
        "imdb/test/neg/0",
        "imdb/test/neg/1",
        "imdb/test/pos/0",
        "imdb/test/pos/1",
    ]
    labels = dict(zip(examples["example_id"], examples["answer"], strict=True))
    assert labels["imdb/test/pos/0"] == "positive" and labels["imdb/test/neg/1"] == "negative"
    assert len(fewshot) == 2


def test_jsquad_context_is_title_sep_text_and_the_answer_is_protected() -> None:
    examples, _ = _files("jsquad")
    fields = json.loads(examples.loc[0, "fields"])
    assert fields["context"].startswith("梅雨 [SEP] 梅雨（つゆ、ばいう）は")
    assert examples.loc[0, "answer"] == "小笠原諸島"
    assert list(examples.loc[0, "protected"]) == ["小笠原諸島"]
    assert len(examples) == 5


def test_niilc_keeps_every_listed_answer() -> None:
    examples, fewshot = _files("niilc")
    row = examples[examples["answers"].map(len) > 1].iloc[0]
    assert list(row["answers"])[:3] == ["TACS", "HiCAP", "PDC"]
    assert row["target"].startswith("TACS,HiCAP,PDC")
    assert examples.loc[0, "answer"] == "東芝"
    assert fewshot["example_id"].str.startswith("niilc/dev/").all()


# --- the same questions give the same examples as the Hub path --------------------------------


def _llm_jp_rows(name: str, raw: list[dict]) -> list[dict]:
    """The rows llm-jp-eval's processors make from the publisher's rows (its prompt layout)."""
    out = []
    for row in raw:
        if name == "jcommonsenseqa":
            options = ",".join(f"{i}.{row[f'choice{i}']}" for i in range(5))
            out.append(
                {
                    "input": f"質問：{row['question']}\n選択肢：{options}",
                    "output": str(row["label"]),
                }
            )
        elif name == "jnli":
            text = f"前提：{row['sentence1']}\n仮説：{row['sentence2']}"
            out.append({"input": text, "output": row["label"]})
        elif name == "jamp":
            text = f"前提：{row['premise']}\n仮説：{row['hypothesis']}"
            out.append({"input": text, "output": row["gold_label"]})
        elif name == "jsquad":
            text = f"文章：{row['context']}\n質問：{row['question']}"
            out.append({"input": text, "output": row["answers"][0]["text"]})
        elif name == "niilc":
            out.append({"input": f"質問：{row['text']}", "output": ",".join(row["answers"])})
    return out


@pytest.mark.parametrize("name", ["jamp", "jnli", "niilc", "jsquad", "jcommonsenseqa"])
def test_japanese_files_give_the_examples_the_llm_jp_eval_hub_path_gives(name, tmp_path) -> None:
    data = READERS[name].load(FIXTURES / name)
    _hub_repo(
        tmp_path,
        "zenless-lab/llm-jp-eval",
        {name: {"test": _llm_jp_rows(name, data.evaluated.rows), "train": [{"input": "質問：x"}]}},
    )
    spec = get_spec(name)
    files, _ = load_benchmark(spec, source="files", seed=42, files_dir=FIXTURES)
    rows, _ = _hub_rows_only(spec, tmp_path)
    pd.testing.assert_frame_equal(files, rows)


def _hub_rows_only(spec, hub_dir: Path) -> tuple[pd.DataFrame, None]:
    # the hub fixture's train split is a placeholder: map only the evaluated split
    from evalpipe.benchmarks.loading import _frame, _hub_rows
    from evalpipe.benchmarks.readers import get_mapper
    from evalpipe.benchmarks.rows import map_rows

    hub = spec.hub
    rows, what = _hub_rows(hub.dataset, hub.configs[0], hub.split, hub_dir)
    mapper = get_mapper(hub.mapper or spec.mapper_name)
    mapped = map_rows(spec, rows, split=hub.split, config=hub.configs[0], where=what, mapper=mapper)
    return _frame(mapped), None


def test_english_files_give_the_examples_the_hub_path_gives(tmp_path) -> None:
    gsm = READERS["gsm8k"].read(FIXTURES / "gsm8k")
    _hub_repo(
        tmp_path, "openai/gsm8k", {"main": {"test": gsm.evaluated.rows, "train": gsm.fewshot.rows}}
    )
    mmlu = READERS["mmlu"].load(FIXTURES / "mmlu", subtasks=get_spec("mmlu").subtasks)

    def hub_mmlu(rows: list[dict]) -> list[dict]:
        return [{**r, "answer": "ABCD".index(r["answer"])} for r in rows]

    _hub_repo(
        tmp_path,
        "cais/mmlu",
        {"all": {"test": hub_mmlu(mmlu.evaluated.rows), "dev": hub_mmlu(mmlu.fewshot.rows)}},
    )
    bbh = READERS["bbh"].load(FIXTURES / "bbh", subtasks=get_spec("bbh").subtasks)
    configs = {}
    for row in bbh.evaluated.rows:
        configs.setdefault(row["subtask"], {"test": []})["test"].append(
            {"input": row["input"], "target": row["target"]}
        )
    _hub_repo(tmp_path, "SaylorTwift/bbh", configs)
    for name in ("gsm8k", "mmlu", "bbh"):
        spec = get_spec(name)
        if name == "bbh":
            # only three subtasks are in the fixture: load those configs
            from dataclasses import replace

            spec = replace(spec, hub=replace(spec.hub, configs=tuple(configs)))
        files = load_benchmark(spec, source="files", seed=42, files_dir=FIXTURES)
        hub = load_benchmark(spec, source="hub", seed=42, hub_dir=tmp_path)
        pd.testing.assert_frame_equal(files[0], hub[0])
        pd.testing.assert_frame_equal(files[1], hub[1])


# --- the raw-schema Hub copies ----------------------------------------------------------------


@pytest.fixture(scope="module")
def raw_hub(tmp_path_factory) -> Path:
    """Local mirrors of sbintuitions/JCommonsenseQA, sbintuitions/JSQuAD and zenless-lab/jnli in
    the schemas their dataset cards give (see docs/benchmarks.md, "The hub, checked")."""
    root = tmp_path_factory.mktemp("rawhub")
    jcqa = READERS["jcommonsenseqa"].read(FIXTURES / "jcommonsenseqa")
    _hub_repo(
        root,
        "sbintuitions/JCommonsenseQA",
        {None: {"validation": jcqa.evaluated.rows, "train": jcqa.fewshot.rows}},
    )
    squad = READERS["jsquad"].read(FIXTURES / "jsquad")

    def flat(row: dict) -> dict:
        # the copy: answers as a struct of lists; context as JGLUE has it
        answers = {
            "answer_start": [a["answer_start"] for a in row["answers"]],
            "text": [a["text"] for a in row["answers"]],
        }
        return {**row, "answers": answers}

    rows = [flat(r) for r in squad.evaluated.rows]
    _hub_repo(root, "sbintuitions/JSQuAD", {None: {"validation": rows, "train": rows[:1]}})
    jnli_rows = READERS["jnli"].read(FIXTURES / "jnli").evaluated.rows
    names = get_spec("jnli").hub_raw.options["label_names"]  # the copy's ClassLabel order
    zen = [
        {"premise": r["sentence1"], "hypothesis": r["sentence2"], "label": names.index(r["label"])}
        for r in jnli_rows
    ]
    _hub_repo(root, "zenless-lab/jnli", {"v1.1": {"test": zen, "train": zen[:1]}})
    return root


@pytest.mark.parametrize("name", ["jcommonsenseqa", "jsquad", "jnli"])
def test_raw_hub_copies_give_the_same_examples_as_the_publisher_files(name, raw_hub) -> None:
    spec = get_spec(name)
    files, _ = load_benchmark(spec, source="files", seed=42, files_dir=FIXTURES)
    hub, _ = load_benchmark(spec, source="hub_raw", seed=42, hub_dir=raw_hub)
    pd.testing.assert_frame_equal(files, hub)
    assert hub.attrs["evalpipe"]["dataset_version"] == spec.hub_raw.hub.version


def test_raw_hub_is_only_for_the_benchmarks_that_declare_it(raw_hub) -> None:
    assert {n for n in ALL if get_spec(n).hub_raw} == {"jcommonsenseqa", "jsquad", "jnli"}
    with pytest.raises(InputError, match=r"sources\.hub_raw: benchmark 'jamp' declares no hub_raw"):
        load_benchmark(get_spec("jamp"), source="hub_raw", seed=42, hub_dir=raw_hub)


def test_a_raw_hub_copy_is_declared_in_the_spec_file() -> None:
    from evalpipe.benchmarks.spec_build import _source

    raw = get_spec("jnli").hub_raw
    assert raw.reader == "jnli" and raw.hub.dataset == "zenless-lab/jnli"
    assert raw.hub.configs == ("v1.1",) and raw.hub.split == "test" and raw.hub.size == 2434
    assert get_spec("jsquad").hub_raw.hub.configs == (None,)
    with pytest.raises(InputError, match=r"sources\.hub_raw: expected `reader`"):
        _source("hub_raw", {"dataset": "x/y", "split": "test"}, "s: sources.hub_raw", {}, "y")
    with pytest.raises(InputError, match=r"sources\.hub_raw\.label_names: expected a list"):
        _source(
            "hub_raw",
            {"dataset": "x/y", "split": "test", "reader": "jnli", "label_names": "a,b"},
            "s: sources.hub_raw",
            {},
            "y",
        )


def test_source_may_be_chosen_per_benchmark() -> None:
    chosen = {"default": "hub", "jnli": "hub_raw"}
    assert resolve_source(chosen, "jnli") == "hub_raw"
    assert resolve_source(chosen, "gsm8k") == "hub"
    assert resolve_source("files", "gsm8k") == "files"
    with pytest.raises(InputError, match="no entry for 'gsm8k' and no 'default'"):
        resolve_source({"jnli": "files"}, "gsm8k")


@pytest.mark.parametrize(
    "value", ["files", "hub_raw", {"default": "hub", "jnli": "hub_raw", "gsm8k": "files"}]
)
def test_params_accept_the_new_sources(value) -> None:
    validate_params({"benchmarks": {"source": value}})


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("hubb", r"benchmarks\.source: expected one of sample, hub, files, hub_raw or a mapping"),
        ({"default": "hub", "jnli": "raw"}, r"benchmarks\.source\.jnli: expected one of sample"),
        (3, r"benchmarks\.source: expected one of .*got 3"),
    ],
)
def test_params_reject_an_unknown_source_naming_the_key(value, message) -> None:
    with pytest.raises(InputError, match=message):
        validate_params({"benchmarks": {"source": value}})


def test_mmlu_hub_load_never_builds_the_auxiliary_train_split(tmp_path) -> None:
    mmlu = READERS["mmlu"].load(FIXTURES / "mmlu", subtasks=get_spec("mmlu").subtasks)
    rows = [{**r, "answer": "ABCD".index(r["answer"])} for r in mmlu.evaluated.rows]
    dev = [{**r, "answer": "ABCD".index(r["answer"])} for r in mmlu.fewshot.rows]
    _hub_repo(tmp_path, "cais/mmlu", {"all": {"test": rows, "dev": dev}})
    readme = tmp_path / "cais" / "mmlu" / "README.md"
    text = readme.read_text(encoding="utf-8").replace(
        "---\n# cais",
        "  - split: auxiliary_train\n    path: all/auxiliary_train-*\n---\n# cais",
    )
    readme.write_text(text, encoding="utf-8")
    # not Parquet at all: building this split would fail the load
    (tmp_path / "cais" / "mmlu" / "all" / "auxiliary_train-00000-of-00001.parquet").write_bytes(
        b"not parquet"
    )
    examples, fewshot = load_benchmark(get_spec("mmlu"), source="hub", seed=42, hub_dir=tmp_path)
    assert len(examples) == len(rows) and len(fewshot) == len(dev)


# --- absent optional files, versions ----------------------------------------------------------


def test_a_missing_train_file_still_runs_and_is_reported(tmp_path) -> None:
    folder = _copy(tmp_path, "gsm8k")
    (folder / "train.jsonl").unlink()
    examples, fewshot = _files("gsm8k", tmp_path)
    assert len(examples) == 4 and fewshot.empty
    assert examples.attrs["evalpipe"]["fewshot_missing"] == ["train.jsonl"]


def test_jglue_version_comes_from_the_file_names_and_mixed_versions_stop(tmp_path) -> None:
    folder = _copy(tmp_path, "jnli")
    examples, _ = _files("jnli", tmp_path)
    assert examples.attrs["evalpipe"]["dataset_version"].startswith("JGLUE v1.1 (")
    assert examples.attrs["evalpipe"]["fewshot_missing"] == ["train-v1.1.json"]
    shutil.copy(folder / "valid-v1.1.json", folder / "valid-v1.3.json")
    with pytest.raises(InputError, match=r"several JGLUE versions \(valid-v1.1.json, valid-v1.3"):
        _files("jnli", tmp_path)
    (folder / "valid-v1.1.json").unlink()
    examples, _ = _files("jnli", tmp_path)
    assert examples.attrs["evalpipe"]["dataset_version"].startswith("JGLUE v1.3 (")


def test_the_version_is_written_into_the_parquet_metadata(tmp_path) -> None:
    examples, _ = _files("jcommonsenseqa")
    out = tmp_path / "b.parquet"
    atomic.write_parquet(out, to_arrow(examples), metadata=dataset_metadata(examples))
    meta = pq.read_schema(out).metadata
    assert meta[b"evalpipe.source"] == b"files"
    assert meta[b"evalpipe.dataset_version"].startswith(b"JGLUE v1.1 (")
    again = tmp_path / "c.parquet"
    atomic.write_parquet(again, to_arrow(examples), metadata=dataset_metadata(examples))
    assert out.read_bytes() == again.read_bytes()


# --- wrong layouts stop with the file, the line and what was expected -------------------------


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_missing_folder_names_the_expected_files(tmp_path) -> None:
    with pytest.raises(InputError, match=r"gsm8k: folder not found.*test\.jsonl.*grade-school"):
        _files("gsm8k", tmp_path)


def test_gsm8k_bad_line_and_bad_gold_name_the_line(tmp_path) -> None:
    folder = _copy(tmp_path, "gsm8k")
    lines = (folder / "test.jsonl").read_text(encoding="utf-8").splitlines()
    _write(folder / "test.jsonl", "\n".join([lines[0], "{not json", *lines[1:]]) + "\n")
    with pytest.raises(InputError, match=r"test\.jsonl:2: not valid JSON"):
        _files("gsm8k", tmp_path)
    bad = json.loads(lines[1])
    bad["answer"] = bad["answer"].replace("####", "##")
    _write(folder / "test.jsonl", "\n".join([lines[0], json.dumps(bad)]) + "\n")
    with pytest.raises(InputError, match=r'test\.jsonl:2: field "answer" has no "#### <number>"'):
        _files("gsm8k", tmp_path)


def test_bbh_wrong_layout_and_unknown_subtask_file(tmp_path) -> None:
    folder = _copy(tmp_path, "bbh")
    _write(folder / "navigate.json", json.dumps([{"input": "x", "target": "y"}]))
    with pytest.raises(InputError, match=r'navigate\.json: expected one JSON object with an "ex'):
        _files("bbh", tmp_path)
    (folder / "navigate.json").unlink()
    _write(folder / "navigation.json", "{}")
    with pytest.raises(InputError, match=r"navigation\.json: not a BIG-Bench Hard subtask file"):
        _files("bbh", tmp_path)
    (folder / "navigation.json").unlink()
    obj = {"canary": "c", "examples": [{"input": "x"}]}
    _write(folder / "navigate.json", json.dumps(obj))
    with pytest.raises(InputError, match=r"navigate\.json: examples\[0\]: expected an object"):
        _files("bbh", tmp_path)


def test_mmlu_header_row_wrong_columns_and_bad_letter_name_the_line(tmp_path) -> None:
    folder = _copy(tmp_path, "mmlu")
    path = folder / "test" / "anatomy_test.csv"
    original = path.read_text(encoding="utf-8")
    _write(path, "question,A,B,C,D,answer\n" + original)
    with pytest.raises(InputError, match=r"anatomy_test\.csv:1: this file has a header row"):
        _files("mmlu", tmp_path)
    # the second record starts on line 2 (the first spans one line)
    lines = original.splitlines()
    _write(path, lines[0] + "\nq,a,b,c\n")
    with pytest.raises(InputError, match=r"anatomy_test\.csv:2: expected 6 columns"):
        _files("mmlu", tmp_path)
    _write(path, lines[0] + "\nq,a,b,c,d,E\n")
    with pytest.raises(InputError, match=r"anatomy_test\.csv:2: column 6 \(answer\).*got 'E'"):
        _files("mmlu", tmp_path)
    _write(folder / "test" / "astrology_test.csv", original)
    with pytest.raises(InputError, match=r"astrology_test\.csv: not an MMLU subject file"):
        _files("mmlu", tmp_path)


def test_imdb_bad_file_name_and_rating_in_the_wrong_folder(tmp_path) -> None:
    folder = _copy(tmp_path, "imdb")
    _write(folder / "test" / "pos" / "review.txt", "Great.")
    with pytest.raises(InputError, match=r"review\.txt: expected a review file named <id>_<rat"):
        _files("imdb", tmp_path)
    (folder / "test" / "pos" / "review.txt").unlink()
    _write(folder / "test" / "pos" / "7_3.txt", "Awful.")
    with pytest.raises(InputError, match=r"7_3\.txt: rating 3 does not belong in pos/"):
        _files("imdb", tmp_path)


def test_jglue_jsonl_line_missing_a_field_names_the_line(tmp_path) -> None:
    folder = _copy(tmp_path, "jcommonsenseqa")
    lines = (folder / "valid-v1.1.json").read_text(encoding="utf-8").splitlines()
    bad = json.loads(lines[2])
    del bad["choice4"]
    _write(folder / "valid-v1.1.json", "\n".join([*lines[:2], json.dumps(bad)]) + "\n")
    with pytest.raises(InputError, match=r'valid-v1\.1\.json:3: field "choice4" is missing'):
        _files("jcommonsenseqa", tmp_path)
    bad = json.loads(lines[2])
    bad["label"] = 7
    _write(folder / "valid-v1.1.json", "\n".join([*lines[:2], json.dumps(bad)]) + "\n")
    with pytest.raises(InputError, match=r'valid-v1\.1\.json:3: field "label": expected 0-4'):
        _files("jcommonsenseqa", tmp_path)
    jnli = _copy(tmp_path, "jnli")
    rows = (jnli / "valid-v1.1.json").read_text(encoding="utf-8").splitlines()
    bad = json.loads(rows[1])
    bad["label"] = "contradictory"
    _write(jnli / "valid-v1.1.json", "\n".join([rows[0], json.dumps(bad)]) + "\n")
    with pytest.raises(InputError, match=r'valid-v1\.1\.json:2: field "label": expected one of'):
        _files("jnli", tmp_path)


def test_jsquad_in_json_lines_or_without_answers_is_named(tmp_path) -> None:
    folder = _copy(tmp_path, "jsquad")
    obj = json.loads((folder / "valid-v1.1.json").read_text(encoding="utf-8"))
    _write(folder / "valid-v1.1.json", json.dumps(obj) + "\n" + json.dumps(obj) + "\n")
    with pytest.raises(InputError, match=r"valid-v1\.1\.json:2: not valid JSON.*looks like JSON"):
        _files("jsquad", tmp_path)
    obj["data"][1]["paragraphs"][0]["qas"][1]["answers"] = []
    _write(folder / "valid-v1.1.json", json.dumps(obj))
    with pytest.raises(
        InputError, match=r'data\[1\]\.paragraphs\[0\]\.qas\[1\]: field "answers": expected'
    ):
        _files("jsquad", tmp_path)
    _write(folder / "valid-v1.1.json", json.dumps(obj["data"]))
    with pytest.raises(InputError, match=r'expected one JSON object with a "data" list'):
        _files("jsquad", tmp_path)


def test_jamp_missing_column_and_short_row_name_the_line(tmp_path) -> None:
    folder = _copy(tmp_path, "jamp")
    lines = (folder / "test_2.tsv").read_text(encoding="utf-8").splitlines()
    _write(folder / "test_2.tsv", lines[0].replace("gold_label", "label") + "\n")
    with pytest.raises(InputError, match=r"test_2\.tsv:1: header .* lacks \['gold_label'\]"):
        _files("jamp", tmp_path)
    _write(folder / "test_2.tsv", "\n".join([*lines[:3], "4\tonly premise"]) + "\n")
    with pytest.raises(InputError, match=r"test_2\.tsv:4: expected 8 tab-separated columns"):
        _files("jamp", tmp_path)
    _write(folder / "test_2.tsv", ",".join(lines[0].split("\t")) + "\n")
    with pytest.raises(InputError, match=r"test_2\.tsv:1: header"):
        _files("jamp", tmp_path)


def test_niilc_broken_xml_and_question_without_answers_name_the_line(tmp_path) -> None:
    folder = _copy(tmp_path, "niilc")
    path = folder / "NIILC-ECQA2015_test.xml"
    text = path.read_text(encoding="utf-8")
    _write(path, text.replace("</text>", "", 1))
    with pytest.raises(InputError, match=r"NIILC-ECQA2015_test\.xml:\d+: not well-formed XML"):
        _files("niilc", tmp_path)
    _write(path, text.replace("<answer>東芝</answer>", "<answer></answer>", 1))
    with pytest.raises(
        InputError, match=r"test\.xml:3: question NIILC-ECQA2015-00005-01: no non-empty <answer>"
    ):
        _files("niilc", tmp_path)


# --- the stage ------------------------------------------------------------------------------


def test_stage_reads_publisher_files_and_records_the_version(project) -> None:
    raw = project.root / "data" / "raw" / "benchmarks"
    for name in ("jnli", "jamp"):
        shutil.copytree(FIXTURES / name, raw / name)
    params = yaml.safe_load((project.root / "params.yaml").read_text(encoding="utf-8"))
    params["benchmarks"]["source"] = "files"
    params["benchmarks"]["max_samples"] = None
    (project.root / "params.yaml").write_text(yaml.safe_dump(params), encoding="utf-8")
    proc = project.run("python", "-m", "stages.benchmarks", "--name", "jnli")
    assert "6 examples + 0 few-shot" in proc.stdout and "from files" in proc.stdout
    assert "few-shot source missing (train-v1.1.json)" in proc.stderr
    meta = pq.read_schema(project.root / "data" / "benchmarks" / "jnli.parquet").metadata
    assert meta[b"evalpipe.dataset_version"].startswith(b"JGLUE v1.1 (")
    # the generate stage reads this back to say why few_shot prompts have no demonstrations
    pool = recorded_metadata(project.root / "data" / "benchmarks" / "jnli.fewshot.parquet")
    assert pool == {
        "source": "files",
        "dataset_version": meta[b"evalpipe.dataset_version"].decode(),
        "fewshot_missing": ["train-v1.1.json"],
    }
    proc = project.run("python", "-m", "stages.benchmarks", "--name", "jamp")
    assert "5 examples + 3 few-shot" in proc.stdout and not proc.stderr.strip()
    shutil.rmtree(raw / "jnli")
    proc = project.run("python", "-m", "stages.benchmarks", "--name", "jnli", check=False)
    assert proc.returncode == 2 and "jnli: folder not found" in proc.stderr


def test_generate_says_why_few_shot_prompts_have_no_demonstrations(tmp_path) -> None:
    import os
    import subprocess
    import sys

    from tests.inference_servers import CannedServer
    from tests.perturbed_sets import write_unperturbed
    from tests.test_inference_openai import _cfg

    repo = Path(__file__).resolve().parents[1]
    examples, fewshot = _files("jnli")  # valid only: train-v1.1.json is not in the fixture
    root = tmp_path / "proj"
    meta = dataset_metadata(examples)
    write_unperturbed(root, "jnli", examples)
    atomic.write_parquet(
        root / "data" / "benchmarks" / "jnli.fewshot.parquet", to_arrow(fewshot), metadata=meta
    )
    with CannedServer(tmp_path / "log.jsonl") as server:
        params = yaml.safe_load(TEST_PARAMS.read_text(encoding="utf-8"))
        params["models"] = {"canned": _cfg(server.url, name="canned", max_concurrency=1)}
        params["prompt"].update({"style": "few_shot", "n_shots": 3})
        params["benchmarks"]["suites"] = {"jnli": "japanese"}  # generate reads the declared sets
        (root / "params.yaml").write_text(yaml.safe_dump(params), encoding="utf-8")
        proc = subprocess.run(
            [sys.executable, "-m", "stages.generate", "--no-progress"],
            cwd=root,
            env=dict(os.environ, PYTHONPATH=f"{repo / 'src'}{os.pathsep}{repo}"),
            capture_output=True,
            text=True,
            timeout=300,
        )
    assert proc.returncode == 0, proc.stderr
    assert (
        "generate: jnli: the few-shot pool is empty (missing: train-v1.1.json); "
        "few_shot prompts have no demonstrations"
    ) in proc.stderr
