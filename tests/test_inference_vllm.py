"""The vLLM CPU engine with tiny-random: one engine start for this module (`-m vllm`)."""

from __future__ import annotations

import gc
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from evalpipe.inference.cache import GenerationCache
from evalpipe.inference.engine import Engine, make_engine
from evalpipe.inference.tiny import default_model_cache
from evalpipe.inference.types import GenerationRequest
from evalpipe.inference.vllm_engine import VLLMBackend

pytestmark = [pytest.mark.vllm, pytest.mark.slow, pytest.mark.timeout(900)]

REPO = Path(__file__).resolve().parents[1]
# A small KV cache: the CPU build sizes it from this fraction of host memory.
MODEL_CFG = {
    "name": "tiny-random",
    "backend": "vllm",
    "dtype": "auto",
    "max_model_len": 512,
    "gpu_memory_utilization": 0.1,
}
LABEL_SCHEMA = {
    "type": "object",
    "properties": {"label": {"type": "string", "enum": ["positive", "negative"]}},
    "required": ["label"],
    "additionalProperties": False,
}
PROMPTS = [
    "Question: What is 2 + 3?\nAnswer:",
    "Review: great film. Sentiment:",
    "質問：日本の首都はどこですか？",
    "Sort the words: pear apple fig.",
]


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("generations")


@pytest.fixture(scope="module")
def engine(cache_dir: Path) -> Iterator[Engine]:
    """The module's one engine; it starts on the first generate call."""
    eng = make_engine(MODEL_CFG, cache_dir=cache_dir, model_cache=default_model_cache(REPO))
    yield eng
    eng.close()
    VLLMBackend.shutdown_all()
    gc.collect()


@pytest.fixture(scope="module")
def first_run(engine: Engine) -> list:
    requests = [GenerationRequest(p, max_tokens=12) for p in PROMPTS]
    requests.append(GenerationRequest(PROMPTS[1], max_tokens=40, json_schema=LABEL_SCHEMA))
    requests.append(GenerationRequest(PROMPTS[0], max_tokens=12))  # a duplicate
    return [requests, engine.generate(requests, progress=False), engine.last_stats]


def test_tiny_random_generates_one_answer_per_prompt(first_run: list) -> None:
    requests, outs, stats = first_run
    assert len(outs) == len(requests)
    for req, gen in zip(requests, outs, strict=True):
        assert isinstance(gen.output, str) and not gen.from_cache
        assert 0 < gen.output_tokens <= req.max_tokens and gen.prompt_tokens > 0
        assert gen.finish_reason in {"stop", "length"}
    assert stats.engine_started and stats.output_tokens > 0 and stats.tokens_per_s > 0


def test_identical_prompts_are_generated_once(first_run: list) -> None:
    _, outs, stats = first_run
    assert (stats.prompts, stats.unique_prompts, stats.misses) == (6, 5, 5)
    assert outs[-1] == outs[0]


def test_structured_output_follows_the_json_schema(first_run: list) -> None:
    _, outs, _ = first_run
    answer = json.loads(outs[4].output)
    assert set(answer) == {"label"} and answer["label"] in {"positive", "negative"}


def test_rerun_is_served_from_the_cache_without_constructing_an_engine(
    first_run: list, cache_dir: Path
) -> None:
    requests, outs, _ = first_run
    starts = VLLMBackend.starts
    fresh = make_engine(MODEL_CFG, cache_dir=cache_dir, model_cache=default_model_cache(REPO))
    again = fresh.generate(requests, progress=False)
    assert VLLMBackend.starts == starts and fresh.backend.started is False
    assert not fresh.last_stats.engine_started and fresh.last_stats.cache_hits == 5
    assert [g.output for g in again] == [g.output for g in outs]
    assert all(g.from_cache for g in again)
    assert len(GenerationCache(cache_dir).segments()) == 1


def test_greedy_generation_is_reproducible_across_calls(engine: Engine, first_run: list) -> None:
    # Same prompt under another budget: a cache miss, generated again by the same engine.
    _, outs, _ = first_run
    longer = engine.generate([GenerationRequest(PROMPTS[0], max_tokens=13)], progress=False)[0]
    assert longer.output.startswith(outs[0].output[: max(0, len(outs[0].output) - 4)])


def test_prompt_longer_than_the_context_is_reported_not_dropped(engine: Engine) -> None:
    long = GenerationRequest("word " * 2000, max_tokens=8)
    short = GenerationRequest("Hello", max_tokens=4)
    outs = engine.generate([long, short], progress=False)
    assert outs[0].finish_reason == "prompt_too_long" and outs[0].output == ""
    assert outs[1].output_tokens > 0
