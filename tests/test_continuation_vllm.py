"""Continuation cells through vLLM's CPU build with tiny-random: the prompt is rendered with
the assistant's prefix left open (the chat template's continue_final_message, or the raw
prompt followed by the prefix), every cell is generated and its answer read, and the prefix is
part of the generation cache's identity (a second run is all cache hits; a new prefix is not).
The same engine returns the first answer token's top-k log-probabilities (the first-token KL's
input) and caches them."""

from __future__ import annotations

import gc
from pathlib import Path

import pandas as pd
import pytest

from evalpipe.answers import continuation_cells as cd
from evalpipe.answers.types import get_answer_type
from evalpipe.inference.engine import make_engine
from evalpipe.inference.tiny import default_model_cache
from evalpipe.inference.types import GenerationRequest
from evalpipe.inference.vllm_engine import VLLMBackend
from evalpipe.scoring.restoration import restoration_table
from evalpipe.studies.continuation.generate import cell_requests

pytestmark = [pytest.mark.vllm, pytest.mark.slow, pytest.mark.timeout(600)]

REPO = Path(__file__).resolve().parents[1]
MODEL_CFG = {
    "name": "tiny-random",
    "backend": "vllm",
    "dtype": "auto",
    "max_model_len": 512,
    "gpu_memory_utilization": 0.1,
}


def _pairs() -> pd.DataFrame:
    """Two examples' clean and typo'd chain-of-thought answers, as a model might give them."""
    rows = []
    for i, (a, b) in enumerate(((3, 4), (10, 5))):
        for typo in ("plsu", "pluss"):
            rows.append(
                {
                    "example_id": i,
                    "clean_prompt": f"What is {a} plus {b}? Think step by step.",
                    "typo_prompt": f"What is {a} {typo} {b}? Think step by step.",
                    "clean_output": f"We add {a} and {b}.\nThe sum is {a + b}.\nThe answer is {a + b}.",
                    "typo_output": f"We add {a} and {b}.\nThe sum is {a + b + 1}.\nThe answer is {a + b + 1}.",
                    "clean_answer": str(a + b),
                    "typo_answer": str(a + b + 1),
                    "clean_correct": True,
                }
            )
    return pd.DataFrame(rows)


def test_cells_continue_their_prefix_on_the_cpu_build(tmp_path: Path) -> None:
    pairs = _pairs()
    cells, unsplit = cd.cells(pairs, answer_type="number", designs=cd.DESIGNS, budgets=[0, 4, 1.0])
    assert len(cells) == 4 * (4 + 1 + 3) and not unsplit.any()
    requests = cell_requests(cells, answer_tokens=8, free_tokens=16)
    engine = make_engine(MODEL_CFG, cache_dir=tmp_path, model_cache=default_model_cache(REPO))
    try:
        generations = engine.generate(requests)
        assert engine.last_stats.misses == len({r for r in requests})
        backend = engine.backend
        for request in requests[:5]:
            rendered = backend._render(request)
            assert rendered.endswith(request.prefix), rendered[-80:]
            assert rendered.startswith(backend._render(GenerationRequest(request.prompt, 8))[:20])
        assert all(g.finish_reason in ("length", "stop") for g in generations)
        parse = get_answer_type("number").parse
        answers = cd.cell_answers(cells, generations, lambda t: parse(t).prediction)
        table = restoration_table(pairs, cells, answers, unsplit, level=0.95)
        assert table["n"].eq(4).all() and len(table) == 4 + 1 + 3
        assert (table["restored"] + table["unextractable"] <= table["n"]).all()
        assert (table["ci_low"] <= table["rate"]).all() and (
            table["rate"] <= table["ci_high"]
        ).all()

        again = engine.generate(requests)
        assert engine.last_stats.misses == 0
        assert [g.output for g in again] == [g.output for g in generations]
        moved = [
            GenerationRequest(r.prompt, r.max_tokens, 0.0, prefix=r.prefix + " So")
            for r in requests[:2]
        ]
        engine.generate(moved)
        assert engine.last_stats.misses == 2

        # the first answer token's top-k log-probabilities (scoring.top_logprobs): k entries,
        # most probable first, the answer unchanged; the count is part of the cache key and the
        # cache gives them back exactly
        asked = [GenerationRequest(r.prompt, 4, 0.0, top_logprobs=3) for r in requests[:2]]
        top = engine.generate(asked)
        assert engine.last_stats.misses == 2
        for g in top:
            values = [v for _, v in g.first_token_logprobs]
            assert len(values) == 3 and values == sorted(values, reverse=True)
            assert all(v <= 0 for v in values)
        plain = engine.generate([GenerationRequest(r.prompt, 4, 0.0) for r in requests[:2]])
        assert all(g.first_token_logprobs is None for g in plain)
        assert [g.output for g in plain] == [g.output for g in top]
        cached = make_engine(MODEL_CFG, cache_dir=tmp_path, model_cache=default_model_cache(REPO))
        again_top = cached.generate(asked)
        assert cached.last_stats.misses == 0
        assert [g.first_token_logprobs for g in again_top] == [g.first_token_logprobs for g in top]
    finally:
        engine.close()
        VLLMBackend.shutdown_all()
        gc.collect()
