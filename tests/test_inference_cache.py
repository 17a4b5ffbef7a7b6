"""The generation cache, the tiny-random build, the generate stage's pure helpers and bad input.
No engine starts here."""

from __future__ import annotations

import os
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest

from evalpipe.errors import InputError
from evalpipe.inference.cache import CacheEntry, GenerationCache, cache_key
from evalpipe.inference.engine import make_backend, make_engine
from evalpipe.inference.generate import (
    CARRIED_COLUMNS,
    OUTPUT_COLUMNS,
    answer_budget,
    outputs_frame,
    outputs_table,
    sampling_settings,
    validate_perturbed,
)
from evalpipe.inference.tiny import build_tiny_random, default_model_cache, describe
from evalpipe.inference.types import EngineError, Generation, GenerationRequest, ModelIdentity

REPO = Path(__file__).resolve().parents[1]
MODEL = ModelIdentity(
    "m@1",
    {
        "backend": "vllm",
        "name": "m",
        "weights_sha256": "1",
        "dtype": "auto",
        "chat_template_sha256": "t",
    },
)


def _entry(i: int, identity: ModelIdentity = MODEL) -> CacheEntry:
    req = GenerationRequest(f"p{i}", max_tokens=4)
    return CacheEntry(
        cache_key(identity, req), identity.label, req, Generation(f"out{i}", "stop", 3, 2)
    )


def test_key_changes_with_model_sampling_schema_system_and_prompt() -> None:
    base = GenerationRequest("2+2=", max_tokens=8)
    keys = {
        cache_key(MODEL, base),
        cache_key(ModelIdentity("m@2", {**MODEL.fields, "weights_sha256": "2"}), base),
        cache_key(ModelIdentity("m", {**MODEL.fields, "chat_template_sha256": "u"}), base),
        cache_key(ModelIdentity("m", {**MODEL.fields, "dtype": "float32"}), base),
        cache_key(MODEL, GenerationRequest("2+2=", max_tokens=9)),
        cache_key(MODEL, GenerationRequest("2+2=", max_tokens=8, temperature=0.5)),
        cache_key(MODEL, GenerationRequest("2+2=", max_tokens=8, json_schema={"type": "object"})),
        cache_key(MODEL, GenerationRequest("2+2=", max_tokens=8, system="be brief")),
        cache_key(MODEL, GenerationRequest("2+2= ", max_tokens=8)),
        cache_key(MODEL, GenerationRequest("2+2=", max_tokens=8, stop=("\n\nQ:",))),
        cache_key(MODEL, GenerationRequest("2+2=", max_tokens=8, stop=("\n\nQuestion:",))),
    }
    assert len(keys) == 11
    # The label is for people; only the identity fields address the cache.
    assert cache_key(ModelIdentity("other label", MODEL.fields), base) == cache_key(MODEL, base)


def test_checkpoints_are_merged_into_one_segment_at_the_end_of_a_run(tmp_path: Path) -> None:
    cache = GenerationCache(tmp_path)
    cache.add([_entry(i) for i in range(3)])
    cache.add([_entry(i) for i in range(3, 5)])
    assert len(cache.segments()) == 2
    cache.finish()
    assert len(cache.segments()) == 1
    found = GenerationCache(tmp_path).lookup([_entry(i).key for i in range(6)])
    assert sorted(g.output for g in found.values()) == [f"out{i}" for i in range(5)]
    assert all(g.from_cache for g in found.values())


def test_same_entries_give_byte_identical_segments(tmp_path: Path) -> None:
    for name, order in (("a", range(4)), ("b", reversed(range(4)))):
        cache = GenerationCache(tmp_path / name)
        cache.add([_entry(i) for i in order])
        cache.finish()
    (a,), (b,) = (
        GenerationCache(tmp_path / "a").segments(),
        GenerationCache(tmp_path / "b").segments(),
    )
    assert a.name == b.name and a.read_bytes() == b.read_bytes()


def test_many_runs_are_compacted_to_a_few_files(tmp_path: Path) -> None:
    for run in range(5):
        cache = GenerationCache(tmp_path, max_segments=3)
        cache.add([_entry(10 * run + i) for i in range(2)])
        cache.finish()
    assert len(GenerationCache(tmp_path).segments()) <= 3
    assert len(GenerationCache(tmp_path)) == 10


def test_known_keys_are_not_written_again(tmp_path: Path) -> None:
    cache = GenerationCache(tmp_path)
    cache.add([_entry(0)])
    assert cache.add([_entry(0)]) is None


def test_damaged_segment_is_an_input_error_naming_the_file(tmp_path: Path) -> None:
    (tmp_path / "seg-broken.parquet").write_bytes(b"not parquet")
    with pytest.raises(InputError, match=r"seg-broken\.parquet: not a readable"):
        GenerationCache(tmp_path).lookup(["x"])


def test_tiny_random_build_is_deterministic_and_labelled(tmp_path: Path) -> None:
    _, shared_hash = build_tiny_random(default_model_cache(REPO))
    fresh_dir, fresh_hash = build_tiny_random(tmp_path)
    assert fresh_hash == shared_hash
    assert describe(fresh_dir) == {
        "num_hidden_layers": 2,
        "hidden_size": 128,
        "num_attention_heads": 2,
        "head_dim": 64,
        "vocab_size": 1024,
    }
    assert "chance" in (fresh_dir / "README.md").read_text()
    assert build_tiny_random(tmp_path) == (fresh_dir, fresh_hash)  # second call: no rebuild


def test_tiny_random_identity_carries_weights_hash_and_chat_template() -> None:
    backend = make_backend(
        {"name": "tiny-random", "backend": "vllm"}, model_cache=default_model_cache(REPO)
    )
    fields = backend.identity.fields
    assert fields["name"] == "tiny-random" and len(fields["weights_sha256"]) == 64
    assert len(fields["chat_template_sha256"]) == 64 and backend.started is False
    assert backend.identity.label.startswith("tiny-random@")


def test_unknown_backend_is_rejected() -> None:
    with pytest.raises(InputError, match=r"model\.backend: unknown backend 'tgi'"):
        make_engine({"name": "tiny-random", "backend": "tgi"}, cache_dir=None)


def test_missing_local_model_directory_explains_offline_use() -> None:
    with pytest.raises(EngineError, match="HF_HUB_OFFLINE=1") as info:
        make_engine({"name": "./models/does-not-exist", "backend": "vllm"}, cache_dir=None)
    assert "looks like a path" in str(info.value)


def test_unreachable_hub_model_explains_offline_use(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", os.devnull + "-nonexistent")
    with pytest.raises(EngineError, match="neither a local directory nor") as info:
        make_engine({"name": "Qwen/Qwen2.5-0.5B-Instruct", "backend": "vllm"}, cache_dir=None)
    assert "huggingface-cli download Qwen/Qwen2.5-0.5B-Instruct" in str(info.value)


def test_directory_without_config_is_rejected(tmp_path: Path) -> None:
    with pytest.raises(EngineError, match=r"without config\.json"):
        make_engine({"name": str(tmp_path), "backend": "vllm"}, cache_dir=None)


def test_openai_backend_needs_a_url() -> None:
    with pytest.raises(EngineError, match=r"model\.base_urls: expected at least one"):
        make_engine({"name": "m", "backend": "openai", "base_urls": []}, cache_dir=None)
    with pytest.raises(EngineError, match="not an http"):
        make_engine(
            {"name": "m", "backend": "openai", "base_urls": ["127.0.0.1:8000"]}, cache_dir=None
        )


@pytest.mark.parametrize("bad", [0, -5, "64", True])
def test_max_tokens_must_be_null_or_a_positive_integer(bad: object) -> None:
    with pytest.raises(
        InputError, match=r"sampling\.max_tokens: expected null .* or an integer > 0"
    ):
        sampling_settings({"temperature": 0.0, "max_tokens": bad})
    assert sampling_settings({"max_tokens": None})[1] is None
    assert sampling_settings({"max_tokens": 64})[1] == 64


def test_a_request_without_stop_sequences_keeps_its_old_cache_key() -> None:
    # Keys computed before stop sequences existed (the judge's cached generations) stay valid.
    req = GenerationRequest("2+2=", max_tokens=8)
    assert "stop" not in req.sampling_key()
    assert GenerationRequest("2+2=", max_tokens=8, stop=("x",)).sampling_key()["stop"] == ["x"]
    with pytest.raises(InputError, match='field "stop"'):
        GenerationRequest("a", 4, stop=("",)).validate()


def test_request_with_max_tokens_zero_is_rejected_before_any_engine_starts(tmp_path: Path) -> None:
    engine = make_engine(
        {"name": "m", "backend": "openai", "base_urls": ["http://127.0.0.1:9/v1"]},
        cache_dir=tmp_path,
    )
    with pytest.raises(InputError, match='request 1: field "max_tokens"'):
        engine.generate([GenerationRequest("a", 4), GenerationRequest("b", 0)])
    assert engine.backend.started is False


def test_budget_is_the_specs_unless_sampling_max_tokens_overrides_it() -> None:
    from evalpipe.benchmarks import get_spec

    gsm8k = get_spec("gsm8k")
    # a silent cap of 64 would cut GSM8K solutions and CoT answers before their answer line
    assert answer_budget(gsm8k.max_tokens("few_shot")) == 256
    assert answer_budget(gsm8k.max_tokens("cot")) == 512
    assert answer_budget(get_spec("jcommonsenseqa").max_tokens("zero_shot")) == 1
    assert answer_budget(gsm8k.max_tokens("cot"), override=64) == 64


def test_perturbed_frame_without_fields_names_file_and_columns() -> None:
    df = pd.DataFrame({"benchmark": ["x"], "example_id": ["1"], "variant": ["original"]})
    with pytest.raises(
        InputError,
        match=r"x.parquet: missing columns \['word_rank', 'draw', 'condition', 'language', .*'fields'\]",
    ):
        validate_perturbed(df, source="x.parquet")


def _perturbed_set(tmp_path: Path) -> Path:
    """A real perturbed set (perturb_frame) of two English examples, as the perturb stage
    writes it; the second example has no target word, so its row has no edit."""
    from evalpipe import atomic
    from evalpipe.perturb import Probabilities, perturb_frame

    bench = pd.DataFrame(
        {
            "benchmark": "b",
            "example_id": ["1", "2"],
            "subtask": None,
            "language": "english",
            "task_type": "mc",
            "fields": ['{"q": "The cat and the dog"}', '{"q": "No word here"}'],
            "perturbable": [["q"], ["q"]],
            "choices": None,
            "answer": ["A", "B"],
            "answers": [["A"], ["B"]],
            "labels": [["A", "B"], ["A", "B"]],
        }
    )
    words = pd.DataFrame({"rank": [1, 2], "word": ["the", "and"]})
    table = perturb_frame(bench, words, probabilities=Probabilities(0.5, 0.5, 0), seed=3).table
    path = tmp_path / "b.parquet"
    atomic.write_parquet(path, table)
    return path


def test_outputs_carry_keys_generation_gold_and_what_perturb_stated(tmp_path: Path) -> None:
    path = _perturbed_set(tmp_path)
    rows = pd.read_parquet(path)  # as the stage reads it
    assert len(rows) == 4  # two originals, "the" and "and" of the first example
    gens = [Generation(str(i), "stop", 5, 1, i == 0) for i in range(len(rows))]
    out = outputs_frame(rows, [f"p{i}" for i in range(len(rows))], gens, model="m@1")
    assert tuple(out.columns) == OUTPUT_COLUMNS
    assert out["output"].tolist() == ["0", "1", "2", "3"] and out["from_cache"].tolist()[:2] == [
        True,
        False,
    ]
    assert out["answer"].tolist() == ["A", "A", "A", "B"] and out["subtask"].isna().all()
    assert out["prompt_hash"].str.len().tolist() == [16] * 4
    table = outputs_table(out, pq.read_schema(path))
    perturbed = pq.read_table(path)
    for name in ("draw", *CARRIED_COLUMNS):  # the perturbed set's values and types, unchanged
        assert table.schema.field(name).type == perturbed.schema.field(name).type, name
        assert table.column(name).to_pylist() == perturbed.column(name).to_pylist(), name
    assert table.column("n_typos").to_pylist()[1] >= 2 and table.column("op").to_pylist()[0] is None
    assert table.column("draw").to_pylist() == [0] * 4


def test_outputs_of_a_set_without_any_edit_keep_the_edit_types(tmp_path: Path) -> None:
    # no row with an edit: Arrow would otherwise type perturbations list<null>, op null
    path = _perturbed_set(tmp_path)
    rows = pd.read_parquet(path).iloc[[0, 3]]
    gens = [Generation("x", "stop", 1, 1)] * 2
    table = outputs_table(outputs_frame(rows, ["a", "b"], gens, model="m"), pq.read_schema(path))
    perturbed = pq.read_schema(path)
    assert table.schema.field("perturbations").type == perturbed.field("perturbations").type
    assert str(table.schema.field("op").type) == "string"
    assert table.schema.metadata is None


def test_temporary_files_of_a_killed_writer_are_removed_at_the_end_of_a_run(
    tmp_path: Path,
) -> None:
    (tmp_path / ".seg-abc.parquet.x1y2.tmp").write_bytes(b"half a segment")
    cache = GenerationCache(tmp_path)
    cache.add([_entry(1)])
    cache.finish()
    assert [p.name.startswith("seg-") for p in tmp_path.iterdir()] == [True]
