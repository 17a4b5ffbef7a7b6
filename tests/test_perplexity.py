"""Perplexity under typos (scoring.perplexity): the spans of perturbable text in the rendered
prompt, the per-pair summary and its interval on hand-made frames, a real OpenAI-compatible
server on 127.0.0.1 (with and without echo), the vLLM CPU engine checked against a transformers
forward pass of the same tiny model, and the stages end to end."""

from __future__ import annotations

import gc
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from scipy import stats

from evalpipe import atomic
from evalpipe.benchmarks import build_prompts, get_spec, load_benchmark
from evalpipe.inference.engine import make_engine
from evalpipe.inference.perplexity import (
    perplexity_columns,
    perplexity_requests,
    perturbable_spans,
)
from evalpipe.inference.types import Loglikelihood, LoglikelihoodRequest
from evalpipe.scoring.mean_interval import clustered_mean_interval
from evalpipe.scoring.pairs import build_pairs
from evalpipe.scoring.perplexity import perplexity_pairs, perplexity_summary
from evalpipe.seeding import hashed_seed
from tests.conftest import TEST_PARAMS
from tests.inference_servers import CannedServer, canned_logprob, canned_tokens
from tests.test_inference_openai import _cfg

REPO = Path(__file__).resolve().parents[1]


def _rows(name: str, n: int = 4) -> tuple[pd.DataFrame, pd.DataFrame]:
    return load_benchmark(get_spec(name), source="sample", max_samples=n)


def test_spans_cover_exactly_each_perturbable_field_in_the_prompt() -> None:
    spec = get_spec("jnli")  # two perturbable fields, both in the prompt
    rows, fewshot = _rows("jnli")
    prompts = build_prompts(spec, rows, fewshot, style="few_shot", n_shots=2)
    spans = perturbable_spans(spec, rows, prompts, fewshot, style="few_shot", n_shots=2)
    for prompt, row, found in zip(prompts, rows.to_dict("records"), spans, strict=True):
        fields = json.loads(row["fields"])
        texts = [prompt[a:b] for a, b in found]
        assert texts == [fields[name] for name in spec.perturbable if fields.get(name)]
        # the evaluated example's text, after the demonstrations (not a shot's text)
        assert found[-1][1] > len(prompt) // 2


def test_a_typo_moves_the_span_with_the_text() -> None:
    spec = get_spec("gsm8k")
    rows, _ = _rows("gsm8k", 1)
    typo = rows.copy()
    question = json.loads(rows["fields"].iloc[0])["question"]
    typo["fields"] = [json.dumps({"question": "Xx" + question[1:]})]
    both = pd.concat([rows, typo], ignore_index=True)
    prompts = build_prompts(spec, both, None, style="zero_shot", n_shots=0)
    spans = perturbable_spans(spec, both, prompts, None, style="zero_shot", n_shots=0)
    (a0, b0), (a1, b1) = spans[0][0], spans[1][0]
    assert a0 == a1 and b1 - b0 == 1 and prompts[1][a1:b1].startswith("Xx")
    requests = perplexity_requests(prompts, spans)
    assert requests[1][0].context == prompts[1][:a1]
    assert requests[1][0].continuation == prompts[1][a1:b1]


def test_a_row_is_unscored_when_any_span_is() -> None:
    reqs = [[LoglikelihoodRequest("a", "b"), LoglikelihoodRequest("ab", "c")], [], [
        LoglikelihoodRequest("x", "y")
    ]]  # fmt: skip
    cols = perplexity_columns(
        reqs,
        [
            Loglikelihood(-1.0, 1, True),
            Loglikelihood(-2.0, 2, False),
            Loglikelihood(math.nan, 4, False),
        ],
    )
    assert cols["ppl_logprob"].iloc[0] == -3.0 and cols["ppl_tokens"].tolist() == [3, 0, 4]
    assert cols["ppl_logprob"].iloc[1:].isna().all()


def _pairs_frame(d: list[float], clusters: list[int]) -> pd.DataFrame:
    n = len(d)
    return pd.DataFrame(
        {
            "benchmark": "b",
            "language": "english",
            "cluster": clusters,
            "example_id": [str(c) for c in clusters],
            "variant": [f"w{i}" for i in range(n)],
            "word_rank": list(range(1, n + 1)),
            "draw": 0,
            "logprob_original": [-2.0 * 4] * n,  # ll -2 per token over 4 tokens
            "tokens_original": 4,
            "logprob_perturbed": [(-2.0 - x) * 5 for x in d],  # ll -2 - d over 5 tokens
            "tokens_perturbed": 5,
        }
    )


def _guarded_by_hand(x: np.ndarray, g: np.ndarray, seed: int) -> tuple[float, float]:
    """The guarded cluster bootstrap-t interval of ``mean(x)`` (clusters ``g``, codes 0..G-1):
    resample the examples with the seed, expand each resample (a copy is a cluster of its own),
    studentise it with clustered_mean_interval's CR2 standard error; the guard keeps each
    quantile at least as far out as the CR2 t interval's."""
    groups = int(g.max()) + 1
    members = [np.flatnonzero(g == k) for k in range(groups)]

    def se(values: np.ndarray, codes: np.ndarray) -> float:
        r = clustered_mean_interval(values, codes, level=0.95)
        return (r.high - r.mean) / stats.t.ppf(0.975, r.df)

    rng = np.random.default_rng(seed)
    draws = rng.multinomial(groups, np.full(groups, 1 / groups), size=999)
    t_star = []
    for counts in draws:
        picked = [k for k in range(groups) for _ in range(counts[k])]
        values = np.concatenate([x[members[k]] for k in picked])
        codes = np.concatenate([np.full(members[k].size, j) for j, k in enumerate(picked)])
        spread = se(values, codes)
        if spread > 0:
            t_star.append((values.mean() - x.mean()) / spread)
    q_low, q_high = np.quantile(t_star, [0.025, 0.975])
    t = stats.t.ppf(0.975, clustered_mean_interval(x, g, level=0.95).df)
    q_low, q_high = min(q_low, -t), max(q_high, t)
    s = se(x, g)
    return x.mean() - q_high * s, x.mean() - q_low * s


def test_ratio_is_the_geometric_mean_of_pair_ratios_with_a_tail_augmented_interval() -> None:
    d = [0.5, 0.7, 0.1, 0.2, 0.9, 0.4, 0.3, 2.4, 0.2, 0.1]
    clusters = [0, 0, 1, 2, 2, 2, 3, 4, 5, 5]
    figures = perplexity_summary(_pairs_frame(d, clusters), level=0.95)["benchmarks"]["b"]
    assert figures["ratio"] == pytest.approx(math.exp(np.mean(d)))
    assert figures["ll_original"] == pytest.approx(-2.0)
    assert figures["ll_perturbed"] == pytest.approx(-2.0 - np.mean(d))
    assert figures["ci_method"] == "tail_augmented_cluster_bootstrap_t_log_ratio"
    # by hand: the guarded bootstrap-t of the sample, and of the sample with its example of
    # smallest (lower side) or largest (upper side) contribution sum_g - n_g mean counted twice
    x, g = np.array(d), np.array(clusters)
    seed = hashed_seed("perplexity", "benchmark", "b")
    sums = np.bincount(g, weights=x)
    z = sums - np.bincount(g) * x.mean()
    low, high = _guarded_by_hand(x, g, hashed_seed(seed, "sample"))
    for part, k in (("smallest", int(np.argmin(z))), ("largest", int(np.argmax(z)))):
        twice = np.flatnonzero(g == k)
        xa, ga = np.concatenate([x, x[twice]]), np.concatenate([g, np.full(twice.size, 6)])
        a_low, a_high = _guarded_by_hand(xa, ga, hashed_seed(seed, part))
        low, high = (min(low, a_low), high) if part == "smallest" else (low, max(high, a_high))
    assert k == 4  # the example holding the 2.4
    assert figures["ci_low"] == pytest.approx(math.exp(low), rel=1e-9)
    assert figures["ci_high"] == pytest.approx(math.exp(high), rel=1e-9)
    assert figures["n"] == 10 and figures["n_examples"] == 6
    # it holds the guarded bootstrap-t interval of the sample
    g_low, g_high = _guarded_by_hand(x, g, hashed_seed(seed, "sample"))
    assert math.log(figures["ci_low"]) <= g_low and math.log(figures["ci_high"]) > g_high
    # right-skewed log-ratios: the interval reaches further above the estimate than below
    log_low, log_high = math.log(figures["ci_low"]), math.log(figures["ci_high"])
    assert log_high - x.mean() > x.mean() - log_low
    # reproducible: the seed is the row's key
    again = perplexity_summary(_pairs_frame(d, clusters), level=0.95)["benchmarks"]["b"]
    assert again == figures


def test_unscored_pairs_are_counted_not_used() -> None:
    frame = _pairs_frame([0.5, 0.7, 0.1], [0, 1, 2])
    frame.loc[1, "logprob_perturbed"] = np.nan
    figures = perplexity_summary(frame, level=0.95)["benchmarks"]["b"]
    assert figures["n"] == 2 and figures["n_unscored"] == 1
    assert figures["ratio"] == pytest.approx(math.exp(0.3))


def _scored_view() -> pd.DataFrame:
    """A scored view of two examples, each with one typo row, carrying ppl columns."""
    return pd.DataFrame(
        {
            "benchmark": "b",
            "example_id": ["1", "1", "2", "2"],
            "variant": ["original", "the", "original", "the"],
            "word_rank": [0, 1, 0, 1],
            "draw": 0,
            "condition": "typo",  # the arm (main's pairs read it)
            "subtask": None,
            "language": "english",
            "n_typos": [0, 1, 0, 1],
            "n_edited_chars": [0, 1, 0, 1],
            "op": [None, "replace", None, "delete"],
            "script": [None, "latin", None, "latin"],
            "occurrences": [0, 1, 0, 1],
            "perturbed_occurrences": [0, 1, 0, 1],
            "prompt": "Q?",
            "correct": True,
            "score": 1.0,
            "prediction": "A",
            "parse_status": "strict",
            "finish_reason": "stop",
            "ppl_logprob": [-4.0, -9.0, -3.0, -3.5],
            "ppl_tokens": [2, 3, 3, 3],
        }
    )


def test_each_pair_looks_both_rows_up_by_key() -> None:
    view = _scored_view()
    pairs = build_pairs({"b": view}, model="m")
    table = perplexity_pairs(pairs, {"b": view})
    assert table[["example_id", "logprob_original", "logprob_perturbed"]].values.tolist() == [
        ["1", -4.0, -9.0],
        ["2", -3.0, -3.5],
    ]
    figures = perplexity_summary(table, level=0.95)
    pooled = figures["pooled"]["english"]
    # pair 1: ll -2 vs -3; pair 2: -1 vs -7/6
    assert pooled["ratio"] == pytest.approx(math.exp(((-2 + 3) + (-1 + 7 / 6)) / 2))
    with pytest.raises(ValueError, match="ppl_logprob"):
        perplexity_pairs(pairs, {"b": view.drop(columns=["ppl_logprob"])})


# --- a real OpenAI-compatible server ---------------------------------------------------------


def _gsm8k_requests() -> list[LoglikelihoodRequest]:
    spec = get_spec("gsm8k")
    rows, _ = _rows("gsm8k", 3)
    prompts = build_prompts(spec, rows, None, style="zero_shot", n_shots=0)
    spans = perturbable_spans(spec, rows, prompts, None, style="zero_shot", n_shots=0)
    return [r for row in perplexity_requests(prompts, spans) for r in row]


@pytest.mark.server
def test_server_with_echo_scores_the_perturbable_text_and_a_rerun_is_free(tmp_path: Path) -> None:
    requests = _gsm8k_requests()
    with CannedServer(tmp_path / "log.jsonl") as server:
        engine = make_engine(_cfg(server.url), cache_dir=tmp_path / "cache")
        scores = engine.loglikelihood(requests, progress=False, unsupported_ok=True)
        sent = len(server.requests())
        again = make_engine(_cfg(server.url), cache_dir=tmp_path / "cache").loglikelihood(
            requests, progress=False, unsupported_ok=True
        )
        assert len(server.requests()) == sent == len(requests)  # the re-run sent nothing
    for req, score in zip(requests, scores, strict=True):
        ctx, cont = canned_tokens(req.context, True), canned_tokens(req.continuation, False)
        ids = ctx + cont
        expected = sum(canned_logprob(i, ids[i]) for i in range(len(ctx), len(ids)))
        assert score.logprob == pytest.approx(expected) and score.n_tokens == len(cont)
    assert [a.logprob for a in again] == [s.logprob for s in scores]
    assert all(a.from_cache for a in again)


@pytest.mark.server
def test_server_without_echo_is_counted_unsupported_not_a_crash(tmp_path: Path) -> None:
    requests = _gsm8k_requests()
    with CannedServer(tmp_path / "log.jsonl", no_echo=True) as server:
        engine = make_engine(_cfg(server.url), cache_dir=tmp_path / "cache")
        scores = engine.loglikelihood(requests, progress=False, unsupported_ok=True)
        assert all(math.isnan(s.logprob) for s in scores)
        assert engine.unsupported == len(requests)
        # choice scoring still needs the log-probabilities: a clear error there
        with pytest.raises(ValueError, match="did not return prompt log-probabilities"):
            engine.loglikelihood([LoglikelihoodRequest("Q:", " A")], progress=False)
    # nothing unscored was cached: a server with echo later scores them
    with CannedServer(tmp_path / "log2.jsonl") as server:
        engine = make_engine(_cfg(server.url), cache_dir=tmp_path / "cache")
        rescored = engine.loglikelihood(requests, progress=False, unsupported_ok=True)
        assert not any(math.isnan(s.logprob) for s in rescored)


def _run(root: Path, *args: str) -> str:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO), str(REPO / "src")]))
    proc = subprocess.run([sys.executable, "-m", *args], cwd=root, env=env,
                          capture_output=True, text=True, timeout=300)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


@pytest.mark.server
@pytest.mark.slow
@pytest.mark.timeout(600)
def test_stages_carry_ppl_columns_and_write_perplexity_metrics(tmp_path: Path) -> None:
    from evalpipe.words import word_list

    examples, fewshot = load_benchmark(get_spec("gsm8k"), source="sample", max_samples=8)
    atomic.write_parquet(tmp_path / "data" / "benchmarks" / "gsm8k.parquet", examples)
    atomic.write_parquet(tmp_path / "data" / "benchmarks" / "gsm8k.fewshot.parquet", fewshot)
    words = word_list("english", "wordfreq", raw_dir=tmp_path / "none", top_n=10, min_length=2)
    atomic.write_parquet(tmp_path / "data" / "words" / "english.parquet", words)
    with (
        CannedServer(tmp_path / "log.jsonl") as server,
        CannedServer(tmp_path / "log2.jsonl", no_echo=True) as flat,
    ):
        params = yaml.safe_load(TEST_PARAMS.read_text())
        params["benchmarks"]["suites"] = {"gsm8k": "english"}
        params["models"] = {
            "canned": _cfg(server.url, family="canned", size="1B"),
            "flat": _cfg(flat.url, name="flat", family="canned", size="1B", quantisation="int4"),
        }
        params["scoring"]["perplexity"] = True
        (tmp_path / "params.yaml").write_text(yaml.safe_dump(params))
        _run(tmp_path, "stages.perturb", "--name", "gsm8k")
        _run(tmp_path, "stages.generate", "--no-progress")
    out = _run(tmp_path, "stages.score")
    _run(tmp_path, "stages.impact")
    assert "perplexity (english)" in out
    outputs = pd.read_parquet(tmp_path / "data" / "outputs" / "canned" / "gsm8k.parquet")
    assert outputs["ppl_logprob"].notna().all() and (outputs["ppl_tokens"] > 0).all()
    scored = pd.read_parquet(tmp_path / "data" / "scored" / "canned" / "gsm8k.parquet")
    assert scored["ppl_logprob"].tolist() == outputs["ppl_logprob"].tolist()
    figures = json.loads((tmp_path / "metrics" / "canned" / "perplexity.json").read_text())
    gsm8k = figures["benchmarks"]["gsm8k"]
    assert gsm8k["n"] > 0 and gsm8k["ratio"] > 0 and gsm8k["ci_low"] <= gsm8k["ratio"]
    assert figures["pooled"]["english"]["n"] == gsm8k["n"]
    summary = json.loads((tmp_path / "data" / "outputs" / "flat" / "generation.json").read_text())
    assert summary["perplexity_unsupported"] > 0
    assert summary["benchmarks"]["gsm8k"]["perplexity"]["rows_scored"] == 0
    flat_figures = json.loads((tmp_path / "metrics" / "flat" / "perplexity.json").read_text())
    assert flat_figures["benchmarks"]["gsm8k"]["n"] == 0
    assert flat_figures["benchmarks"]["gsm8k"]["n_unscored"] == gsm8k["n"]
    # the ladder: two labelled models -> data/impact/ladder.parquet, flat compared with canned
    ladder = pd.read_parquet(tmp_path / "data" / "impact" / "ladder.parquet")
    flat_row = ladder.loc[(ladder["model"] == "flat") & (ladder["scope"] == "pooled")].iloc[0]
    assert flat_row["reference"] == "canned" and flat_row["loss_rank"] == 1
    # off again: the metrics file goes, the outputs lose the columns
    params["scoring"]["perplexity"] = False
    params["models"] = {"canned": params["models"]["canned"]}
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params))
    with CannedServer(tmp_path / "log3.jsonl") as server:
        params["models"]["canned"]["base_urls"] = [server.url]
        (tmp_path / "params.yaml").write_text(yaml.safe_dump(params))
        _run(tmp_path, "stages.generate", "--no-progress")
    _run(tmp_path, "stages.score")
    _run(tmp_path, "stages.impact")
    assert not (tmp_path / "metrics" / "canned" / "perplexity.json").exists()
    assert not (tmp_path / "data" / "impact" / "ladder.parquet").exists()
    outputs = pd.read_parquet(tmp_path / "data" / "outputs" / "canned" / "gsm8k.parquet")
    assert "ppl_logprob" not in outputs.columns


# --- the vLLM CPU engine against transformers --------------------------------------------------


def _reference(model_dir: Path, requests: list[LoglikelihoodRequest]) -> list[float]:
    """Sum of continuation-token log-probabilities from a transformers forward pass."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModelForCausalLM.from_pretrained(model_dir, torch_dtype=torch.float32).eval()
    out = []
    for req in requests:
        ctx = tok.encode(req.context, add_special_tokens=True)
        cont = tok.encode(req.continuation, add_special_tokens=False)
        with torch.no_grad():
            logits = model(torch.tensor([ctx + cont])).logits[0].float()
        logp = torch.log_softmax(logits, dim=-1)
        out.append(sum(float(logp[len(ctx) + j - 1, t]) for j, t in enumerate(cont)))
    return out


@pytest.mark.vllm
@pytest.mark.slow
@pytest.mark.timeout(900)
def test_vllm_perplexity_matches_a_transformers_forward_pass(tmp_path: Path, capsys) -> None:
    from evalpipe.inference.tiny import build_tiny_random, default_model_cache
    from evalpipe.inference.vllm_engine import VLLMBackend

    model_dir, _ = build_tiny_random(default_model_cache(REPO))
    requests = _gsm8k_requests()
    ja_spec = get_spec("jnli")
    ja_rows, _ = _rows("jnli", 2)
    ja_prompts = build_prompts(ja_spec, ja_rows, None, style="zero_shot", n_shots=0)
    ja_spans = perturbable_spans(ja_spec, ja_rows, ja_prompts, None, style="zero_shot", n_shots=0)
    requests += [r for row in perplexity_requests(ja_prompts, ja_spans) for r in row]
    cfg = {"name": "tiny-random", "backend": "vllm", "dtype": "float32", "max_model_len": 1024,
           "gpu_memory_utilization": 0.1}  # fmt: skip
    engine = make_engine(cfg, cache_dir=tmp_path / "cache", model_cache=model_dir.parent)
    try:
        scores = engine.loglikelihood(requests, progress=False, unsupported_ok=True)
        reference = _reference(model_dir, requests)
        gaps = [abs(s.logprob - r) for s, r in zip(scores, reference, strict=True)]
        per_token = [g / s.n_tokens for g, s in zip(gaps, scores, strict=True)]
        with capsys.disabled():
            print(f"\nvLLM vs transformers: max |diff| {max(gaps):.2e} total, "
                  f"{max(per_token):.2e} per token over {len(requests)} spans")  # fmt: skip
        for score, want in zip(scores, reference, strict=True):
            assert score.logprob == pytest.approx(want, abs=2e-3 * max(1, score.n_tokens / 10))
            assert score.n_tokens > 3 and not score.from_cache
        starts = VLLMBackend.starts
        again = make_engine(cfg, cache_dir=tmp_path / "cache", model_cache=model_dir.parent)
        cached = again.loglikelihood(requests, progress=False, unsupported_ok=True)
        assert VLLMBackend.starts == starts and [c.logprob for c in cached] == [
            s.logprob for s in scores
        ]
    finally:
        engine.close()
        VLLMBackend.shutdown_all()
        gc.collect()
