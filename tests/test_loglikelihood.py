"""Log-likelihood scoring: the vLLM CPU engine's prompt log-probabilities checked against a plain
transformers forward pass of the same tiny model, the choice rules, and the shared cache."""

from __future__ import annotations

import gc
import math
from pathlib import Path

import pytest

from evalpipe.inference.cache import GenerationCache
from evalpipe.inference.engine import make_engine
from evalpipe.inference.loglikelihood import choice_continuations
from evalpipe.inference.tiny import build_tiny_random, default_model_cache
from evalpipe.inference.types import LoglikelihoodRequest
from evalpipe.inference.vllm_engine import VLLMBackend
from evalpipe.scoring.loglikelihood import pick_choice

REPO = Path(__file__).resolve().parents[1]
MODEL_CFG = {
    "name": "tiny-random",
    "backend": "vllm",
    "dtype": "float32",  # compared with a float32 transformers forward pass
    "max_model_len": 512,
    "gpu_memory_utilization": 0.1,
}
CONTEXT = (
    "Question: Which planet is known as the red planet?\nA. Venus\nB. Mars\nC. Jupiter\nAnswer:"
)


def test_acc_takes_the_highest_total_and_acc_norm_the_highest_per_character() -> None:
    assert pick_choice([-4.0, -1.0, -3.0], [" A", " B", " C"]) == (1, 1)
    # a longer choice loses on the total but wins per character
    assert pick_choice([-2.0, -3.0], [" no", " yes, certainly"]) == (0, 1)
    assert pick_choice([-1.0, -1.0], [" x", " y"]) == (0, 0)  # ties: the first choice


def test_choice_continuations_need_labels() -> None:
    assert choice_continuations(["entailment", "neutral"]) == [" entailment", " neutral"]
    with pytest.raises(ValueError, match="label space"):
        choice_continuations([])


def test_empty_continuation_is_rejected() -> None:
    with pytest.raises(ValueError, match='field "continuation"'):
        LoglikelihoodRequest("ctx", "").validate(3)


def _reference_logprobs(model_dir: Path, requests: list[LoglikelihoodRequest]) -> list[float]:
    """Sum of continuation-token log-probabilities from transformers, same token ids."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModelForCausalLM.from_pretrained(model_dir, torch_dtype=torch.float32)
    model.eval()
    out = []
    for req in requests:
        ctx = tok.encode(req.context, add_special_tokens=True)
        cont = tok.encode(req.continuation, add_special_tokens=False)
        ids = torch.tensor([ctx + cont])
        with torch.no_grad():
            logits = model(ids).logits[0].float()
        logp = torch.log_softmax(logits, dim=-1)
        total = sum(float(logp[len(ctx) + j - 1, t]) for j, t in enumerate(cont))
        out.append(total)
    return out


@pytest.mark.vllm
@pytest.mark.slow
@pytest.mark.timeout(900)
def test_vllm_prompt_logprobs_match_a_transformers_forward_pass(tmp_path: Path) -> None:
    model_dir, _ = build_tiny_random(default_model_cache(REPO))
    labels = ["A", "B", "C"]
    conts = [*choice_continuations(labels), " B. Mars", " Mars is the red planet"]
    requests = [LoglikelihoodRequest(CONTEXT, c) for c in conts]
    engine = make_engine(MODEL_CFG, cache_dir=tmp_path / "cache", model_cache=model_dir.parent)
    try:
        scores = engine.loglikelihood(requests, progress=False)
        reference = _reference_logprobs(model_dir, requests)
        for got, want in zip(scores, reference, strict=True):
            assert got.logprob == pytest.approx(want, abs=2e-3)
            assert got.logprob < 0 and got.n_tokens >= 1 and not got.from_cache
        # the choice picked is the argmax of the returned log-probabilities
        acc, _ = pick_choice([s.logprob for s in scores[:3]], conts[:3])
        assert acc == max(range(3), key=lambda i: scores[i].logprob)
        # a second engine on the same cache answers without starting vLLM
        starts = VLLMBackend.starts
        again = make_engine(
            MODEL_CFG, cache_dir=tmp_path / "cache", model_cache=model_dir.parent
        ).loglikelihood(requests, progress=False)
        assert VLLMBackend.starts == starts
        assert all(a.from_cache for a in again)
        assert [a.logprob for a in again] == [s.logprob for s in scores]
        assert [a.greedy for a in again] == [s.greedy for s in scores]
        # the scores live in the one generation cache, apart from generations
        assert len(GenerationCache(tmp_path / "cache")) == len(requests)
        # a context longer than max_model_len is not scored (NaN: its row counts as unparsed),
        # and the requests around it keep their places and values
        long_context = "Question: " + "Mars is red. " * 400 + "\nAnswer:"
        mixed = [requests[0], LoglikelihoodRequest(long_context, " A"), requests[1]]
        out = engine.loglikelihood(mixed, progress=False)
        assert math.isnan(out[1].logprob) and not out[1].greedy
        assert [out[0].logprob, out[2].logprob] == [scores[0].logprob, scores[1].logprob]
    finally:
        engine.close()
        VLLMBackend.shutdown_all()
        gc.collect()
