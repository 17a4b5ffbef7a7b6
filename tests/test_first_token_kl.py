"""First-token KL (evalpipe.scoring.first_token_kl, the readouts study): top-k log-probabilities
requested through the OpenAI-compatible backend from a planted server on 127.0.0.1, cached,
aligned, and averaged per view with the unavailable pairs counted."""

from __future__ import annotations

import json
import math
import urllib.request
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from evalpipe import atomic
from evalpipe.benchmarks import get_spec
from evalpipe.errors import InputError
from evalpipe.inference.cache import cache_key
from evalpipe.inference.engine import make_engine
from evalpipe.inference.generate import first_token_column
from evalpipe.inference.openai_engine import _completion_top
from evalpipe.inference.plan import BenchmarkInput, Sampling, answer_requests
from evalpipe.inference.types import GenerationRequest, ModelIdentity
from evalpipe.paths import ProjectPaths
from evalpipe.report.data import ReportData
from evalpipe.scoring.first_token_kl import aligned, first_token_kl, first_token_pairs
from evalpipe.scoring.study import ScoreInputs
from evalpipe.studies.readouts import paths as readouts_paths
from evalpipe.studies.readouts.report import first_token_section
from evalpipe.studies.readouts.score import scoring
from tests.test_inference_openai import _cfg
from tests.top_logprobs_server import CLEAN_TOP, TYPO_TOP, TopLogprobsServer

# CLEAN_TOP / TYPO_TOP on the union {A, B, C, D}: clean gives D its floor 0.05 (sum 1.0),
# typo'd gives C its floor 0.2 (sum 1.1); KL(clean || typo'd) by hand
P = {" A": 0.6, " B": 0.3, " C": 0.05, " D": 0.05}
Q = {" A": 0.2 / 1.1, " B": 0.5 / 1.1, " C": 0.2 / 1.1, " D": 0.2 / 1.1}
PLANTED_KL = sum(P[t] * math.log(P[t] / Q[t]) for t in P)


def test_alignment_by_hand() -> None:
    tokens, p, q = aligned(CLEAN_TOP, TYPO_TOP)
    assert tokens == sorted(P)
    assert p.tolist() == pytest.approx([P[t] for t in tokens])
    assert q.tolist() == pytest.approx([Q[t] for t in tokens])
    assert first_token_kl(CLEAN_TOP, TYPO_TOP) == pytest.approx(PLANTED_KL)
    assert first_token_kl(CLEAN_TOP, CLEAN_TOP) == pytest.approx(0.0, abs=1e-15)
    assert math.isnan(first_token_kl(CLEAN_TOP, None)) and math.isnan(first_token_kl(None, []))
    # one token's text twice on a side: merged, their probabilities added
    doubled = [(" A", math.log(0.3)), (" A", math.log(0.3)), (" B", math.log(0.3))]
    assert first_token_kl(doubled, [(" A", math.log(0.6)), (" B", math.log(0.3))]) == (
        pytest.approx(0.0, abs=1e-12)
    )


def test_top_logprobs_join_the_cache_key_only_when_set() -> None:
    identity = ModelIdentity("m", {"name": "m"})
    plain = GenerationRequest("p", 8)
    assert "top_logprobs" not in plain.sampling_key()
    assert cache_key(identity, plain) == cache_key(
        identity, GenerationRequest("p", 8, top_logprobs=0)
    )
    assert cache_key(identity, plain) != cache_key(
        identity, GenerationRequest("p", 8, top_logprobs=5)
    )
    with pytest.raises(InputError, match='"top_logprobs"'):
        GenerationRequest("p", 8, top_logprobs=-1).validate()
    # the plan asks for them from scoring.top_logprobs
    spec = get_spec("mmlu")
    bench = BenchmarkInput("mmlu", Path("x"), pd.DataFrame(), spec, None, "zero_shot", 0, "english")
    on = answer_requests(bench, ["q"], Sampling(0.0, None, None, "generate", top_logprobs=4))
    off = answer_requests(bench, ["q"], Sampling(0.0, None, None, "generate"))
    assert on[0].top_logprobs == 4 and off[0].top_logprobs == 0


def _rows(n: int) -> tuple[list[dict], list[str]]:
    """n examples, each a clean row and two typo'd rows; examples i % 5 == 0 have a typo'd
    prompt the server answers without log-probabilities."""
    rows, prompts = [], []
    for i in range(n):
        for rank, variant in enumerate(("original", "typo_1", "typo_2")):
            word = (
                "the"
                if variant == "original"
                else ("silent" if i % 5 == 0 and rank == 2 else "tpyo")
            )
            rows.append({"benchmark": "b", "example_id": f"e{i:02d}", "variant": variant,
                         "word_rank": rank, "draw": 0, "condition": "typo"})  # fmt: skip
            prompts.append(f"Question {i}: is {word} cat here?")
    return rows, prompts


def test_planted_top_logprobs_give_the_known_kl(tmp_path: Path) -> None:
    n = 20
    rows, prompts = _rows(n)
    requests = [GenerationRequest(p, 4, temperature=0.0, top_logprobs=3) for p in prompts]
    with TopLogprobsServer() as server:
        engine = make_engine(_cfg(server.url, max_concurrency=4), cache_dir=tmp_path / "cache")
        gens = engine.generate(requests, progress=False)
        sent = [b for b in server.bodies if "messages" in b]
        assert all(b["logprobs"] is True and b["top_logprobs"] == 3 for b in sent)
        assert len(sent) == len(set(prompts))
        # off: nothing asked, nothing parsed
        plain = engine.generate([GenerationRequest(prompts[0], 4)], progress=False)[0]
        assert "logprobs" not in server.bodies[-1] and plain.first_token_logprobs is None
        again = engine.generate(requests, progress=False)
        assert engine.last_stats.misses == 0
        # the completions shape (a continuation's fallback endpoint): token -> logprob
        body = json.dumps({"model": "m", "prompt": "tpyo", "max_tokens": 1, "logprobs": 2})
        reply = urllib.request.urlopen(
            urllib.request.Request(
                f"{server.url}/completions", body.encode(), {"Content-Type": "application/json"}
            )
        )
        choice = json.loads(reply.read())["choices"][0]
    assert _completion_top(choice["logprobs"]) == ((" B", math.log(0.5)), (" A", math.log(0.2)))
    by_prompt = {p: g.first_token_logprobs for p, g in zip(prompts, gens, strict=True)}
    assert by_prompt[prompts[0]] == tuple(CLEAN_TOP)
    assert by_prompt[prompts[1]] == tuple(sorted(TYPO_TOP, key=lambda tv: (-tv[1], tv[0])))
    assert by_prompt[prompts[2]] is None  # example 0's second typo: the server sent none
    # the cache gives them back bit for bit
    assert [g.first_token_logprobs for g in again] == [g.first_token_logprobs for g in gens]
    assert all(g.from_cache for g in again)

    paths = ProjectPaths(tmp_path)
    outputs = pd.DataFrame(rows).assign(first_token_logprobs=first_token_column(gens))
    atomic.write_parquet(paths.outputs("b", "m"), outputs)
    atomic.write_parquet(paths.outputs("c", "m"), pd.DataFrame(rows))  # asked without top-k
    typo = pd.DataFrame(rows).query("variant != 'original'")
    pairs = typo.assign(view="b", language="english", cluster=typo["example_id"])
    pairs = pd.concat([pairs, pairs.assign(view="c"), pairs.assign(view="b.ll")])
    part = scoring({"scoring": {"calibration": False, "top_logprobs": 3}})
    inputs = ScoreInputs("m", paths, {}, pairs.reset_index(drop=True), 0.95)
    figures = part.figures(inputs)
    assert list(figures) == ["first_token_kl"] and list(figures["first_token_kl"]) == ["b"]
    f = figures["first_token_kl"]["b"]
    unavailable = sum(1 for i in range(n) if i % 5 == 0)
    assert (f["n"], f["n_unavailable"]) == (2 * n - unavailable, unavailable)
    assert f["first_token_kl"] == pytest.approx(PLANTED_KL)
    assert f["ci_low"] == pytest.approx(PLANTED_KL) == pytest.approx(f["ci_high"])  # no spread
    part.write(inputs, figures)
    written = json.loads(readouts_paths.metrics(paths, "m").read_text())
    assert written["first_token_kl"]["b"]["n_unavailable"] == unavailable
    assert part.lines(figures) == [
        f"first-token KL (b): {PLANTED_KL:.4f} nats over {2 * n - unavailable} pairs "
        f"({unavailable} without top-k log-probabilities)"
    ]
    data = ReportData()
    assert first_token_section(data) is None
    data.metrics["metrics/m/readouts.json"] = written
    html = first_token_section(data)
    assert html is not None and "first-token-kl-table" in html and "union" in html
    # off: no block, and a stale file goes
    off = scoring({"scoring": {"calibration": False, "top_logprobs": 0}})
    assert off.figures(inputs) is None
    off.write(inputs, None)
    assert not readouts_paths.metrics(paths, "m").exists()


def test_a_backend_without_top_logprobs_is_counted_unavailable_never_zero() -> None:
    rows, _ = _rows(4)
    frame = pd.DataFrame(rows).assign(first_token_logprobs=None)
    typo = frame.query("variant != 'original'")
    pairs = typo.assign(view="b", language="english", cluster=typo["example_id"])
    table = first_token_pairs(pairs, {"b": frame})
    assert len(table) == 8 and np.isnan(table["first_token_kl"]).all()
    from evalpipe.scoring.first_token_kl import first_token_summary

    s = first_token_summary(table, level=0.95)["b"]
    assert (s["n"], s["n_unavailable"], s["first_token_kl"]) == (0, 8, None)


def test_interval_covers_a_planted_truth() -> None:
    """A small coverage check (perf/first_token_kl_coverage.py prints the full table)."""
    from evalpipe.scoring.simulate_first_token import first_token_study, truth
    from evalpipe.scoring.skewed_mean import bootstrap_t_mean_interval

    t = truth(5, examples=4000)
    rng = np.random.default_rng(11)
    hits, reps = 0, 60
    for r in range(reps):
        s = first_token_study(rng, examples=60, draws=3, k=5)
        m = bootstrap_t_mean_interval(s.kl, s.clusters, level=0.95, seed=r, samples=199)
        hits += m.low <= t <= m.high
    # 95% nominal; 60 replications: a binomial 99.9% lower bound is about 0.84
    assert hits / reps >= 0.84


def test_the_generate_stage_writes_the_column_only_when_asked(tmp_path: Path) -> None:
    """stages.generate over the planted server: with scoring.top_logprobs every output row
    carries its first token's top k; with the default no request asks and no column exists."""
    import yaml

    from tests.test_inference_openai import _run_stage, _stage_project

    with TopLogprobsServer() as server:
        root = _stage_project(tmp_path, server.url)
        params = yaml.safe_load((root / "params.yaml").read_text())
        params["scoring"]["top_logprobs"] = 2
        (root / "params.yaml").write_text(yaml.safe_dump(params))
        proc = _run_stage(root)
        _, err = proc.communicate(timeout=600)
        assert proc.returncode == 0, err[-2000:]
        outputs = pd.read_parquet(root / "data" / "outputs" / "canned" / "gsm8k.parquet")
        expected = json.dumps([list(tv) for tv in CLEAN_TOP[:2]])
        assert outputs["first_token_logprobs"].tolist() == [expected] * len(outputs)
        assert all(b.get("top_logprobs") == 2 for b in server.bodies)
        params["scoring"]["top_logprobs"] = 0
        (root / "params.yaml").write_text(yaml.safe_dump(params))
        sent = len(server.bodies)
        proc = _run_stage(root)
        _, err = proc.communicate(timeout=600)
        assert proc.returncode == 0, err[-2000:]
        assert len(server.bodies) > sent  # new keys: the answers are asked again
        assert all("logprobs" not in b for b in server.bodies[sent:])
    outputs = pd.read_parquet(root / "data" / "outputs" / "canned" / "gsm8k.parquet")
    assert "first_token_logprobs" not in outputs.columns and len(outputs) == 10
