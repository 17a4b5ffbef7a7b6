"""Occlusion targeting (``perturb.targeting: importance``) against a planted OpenAI-compatible
server on 127.0.0.1: it answers a GSM8K example right unless one of two planted words of the
example is mistyped, and scores any continuation lower the more planted words are damaged
(the first more than the second), through ``/tokenize`` and echoed ``/completions``
log-probabilities, the way the openai backend reads them. The importance ranking, the
attribution-vs-random gap and the restoration-order rates must come out as the planted rule
gives them, inside their intervals."""

from __future__ import annotations

import difflib
import json
import os
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from evalpipe.benchmarks import build_prompts, get_spec, load_benchmark
from evalpipe.errors import InputError
from evalpipe.inference.engine import make_engine
from evalpipe.inference.plan import BenchmarkInput, Sampling, plan_benchmark, run_plans
from evalpipe.perturb import validate_probabilities
from evalpipe.perturb.count import perturb_count_frame
from evalpipe.perturb.eligibility import from_params as eligibility_from_params
from evalpipe.perturb.targeting import candidate_edits, clean_rows, validate_targeting
from evalpipe.scoring.targeting import targeting_summary, targeting_tables
from evalpipe.studies.targeting.generate import generation
from tests.test_inference_openai import _cfg

pytestmark = [pytest.mark.server]
SEED, COUNTS, SAMPLES = 7, [1, 2, 4], 20  # the bundled sample holds 20
PERTURB = {
    "design": "count", "counts": COUNTS, "targeting": "importance", "model": "uniform",
    "exclude": "auto", "min_letters": "auto", "replace_prob": 0.2, "insert_prob": 0.2,
    "delete_prob": 0.2, "transpose_prob": 0.0, "conversion_prob": 0.0, "draws": 1,
    "control": False,
}  # fmt: skip
WEIGHTS = (2.0, 1.0)  # log-probability lost per continuation token when planted word 1 / 2 breaks


class Planted:
    """Each example's clean prompt, right answer and planted word spans (in the prompt)."""

    def __init__(self, entries: list[tuple[str, str, list[tuple[int, int]]]]) -> None:
        self.entries = entries

    def damaged(self, text: str) -> list[bool]:
        """Which planted words of the example ``text`` comes from were edited."""
        best = max(
            self.entries,
            key=lambda e: difflib.SequenceMatcher(None, e[0], text[: len(e[0]) + 8]).ratio(),
        )
        clean, _, spans = best
        ops = difflib.SequenceMatcher(None, clean, text, autojunk=False).get_opcodes()
        edited = [(a1, a2) for tag, a1, a2, _, _ in ops if tag != "equal"]
        return [any(a1 <= e and s <= a2 and ((a1 < e and s < a2) or a1 == a2)
                    for a1, a2 in edited) for s, e in spans]  # fmt: skip

    def answer(self, prompt: str) -> str:
        best = max(self.entries, key=lambda e: difflib.SequenceMatcher(None, e[0], prompt).ratio())
        return best[1] if not any(self.damaged(prompt)) else "#### -1"


def _server(planted: Planted) -> ThreadingHTTPServer:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *a: object) -> None:
            pass

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            if self.path.endswith("/tokenize"):
                ids = [1] * bool(body.get("add_special_tokens")) + [
                    2 + b for b in body["prompt"].encode("utf-8")
                ]
                out: dict = {"tokens": ids}
            elif self.path.endswith("/chat/completions"):
                text = planted.answer(body["messages"][-1]["content"])
                out = {"choices": [{"message": {"content": text}, "finish_reason": "stop"}],
                       "usage": {"prompt_tokens": 1, "completion_tokens": 1}}  # fmt: skip
            else:  # /completions with echo: the prompt's own log-probabilities
                ids = list(body["prompt"])
                text = bytes(i - 2 for i in ids if i >= 2).decode("utf-8", "replace")
                lost = sum(w for w, hit in zip(WEIGHTS, planted.damaged(text), strict=True) if hit)
                value = -0.1 - lost
                tokens = [f"token_id:{t}" for t in ids]
                out = {"choices": [{"index": 0, "text": "", "finish_reason": "length",
                    "logprobs": {"tokens": [*tokens, "token_id:5"],
                                 "token_logprobs": [None] + [value] * (len(ids) - 1) + [-1.0],
                                 "top_logprobs": None, "text_offset": [0] * (len(ids) + 1)}}],
                    "usage": {"prompt_tokens": len(ids), "completion_tokens": 1}}  # fmt: skip
            data = json.dumps(out).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    return ThreadingHTTPServer(("127.0.0.1", 0), Handler)


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict]:
    spec = get_spec("gsm8k")
    bench, _ = load_benchmark(spec, source="sample", max_samples=SAMPLES)
    probabilities = validate_probabilities(PERTURB)
    eligibility = eligibility_from_params(PERTURB)
    perturbed = perturb_count_frame(
        bench, probabilities=probabilities, seed=SEED, counts=COUNTS, eligibility=eligibility
    ).to_pandas()
    clean = clean_rows(perturbed)
    candidates = candidate_edits(
        clean, probabilities=probabilities, seed=SEED, eligibility=eligibility, source="gsm8k"
    )
    prompts = build_prompts(spec, clean, None, style="zero_shot", n_shots=0)
    entries, planted_words = [], {}
    for prompt, row in zip(prompts, clean.to_dict("records"), strict=True):
        key = (row["benchmark"], row["example_id"])
        # two words drawn apart from the count design's random order (so random-k hits them
        # with the hypergeometric chance the truths below assume)
        pick = np.random.default_rng(len(entries)).choice(len(candidates[key]), 2, replace=False)
        first, second = (candidates[key][int(i)] for i in pick)
        texts = json.loads(row["fields"])
        spans = [(prompt.index(texts[e.field]) + e.start, prompt.index(texts[e.field]) + e.end)
                 for e in (first, second)]  # fmt: skip
        assert all(
            prompt[s:e] == ed.original for (s, e), ed in zip(spans, (first, second), strict=True)
        )
        entries.append((prompt, f"#### {row['answer']}", spans))
        planted_words[key] = [(e.field, e.occurrence) for e in (first, second)]
    server = _server(Planted(entries))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    params = {"perturb": PERTURB, "seed": SEED, "scoring": {"method": "generate"}}
    part = generation(params, None, slug="planted", source="params.yaml")
    tmp = tmp_path_factory.mktemp("targeting")
    engine = make_engine(_cfg(url, name="planted"), cache_dir=tmp / "cache")
    path = tmp / "gsm8k.parquet"
    bench_in = BenchmarkInput("gsm8k", path, perturbed, spec, None, "zero_shot", 0, "english")
    sampling = Sampling(0.0, None, None, "generate")
    os.environ["EVALPIPE_TEST_KEY"] = "planted"
    try:
        plan = plan_benchmark(bench_in, sampling=sampling, studies=[part], engine=engine)
        (result,) = run_plans(engine, [plan], progress=False)
        counts = part.summary(engine)
    finally:
        server.shutdown()
        os.environ.pop("EVALPIPE_TEST_KEY", None)
    rows = plan.rows.assign(output=[g.output for g in result.generations])
    gold = rows["answer"].astype(str).map(lambda a: f"#### {a}")
    rows["correct"] = rows["output"] == gold
    yield {"rows": rows, "candidates": candidates, "planted": planted_words, "counts": counts}


def _pairs(rows: pd.DataFrame) -> pd.DataFrame:
    """The model's pairs table (:func:`evalpipe.scoring.pairs.build_pairs`) of the run's rows:
    every arm's rows paired with that arm's clean rows."""
    from evalpipe.scoring.pairs import build_pairs

    scored = rows.assign(
        prompt="", score=rows["correct"].astype(float), prediction=rows["output"],
        parse_status="strict", finish_reason="stop",
    )  # fmt: skip
    return build_pairs({"gsm8k": scored}, model="planted")


def _truths(n_words: list[int]) -> dict:
    """The planted rule's expectations over the random order (two planted words among n)."""
    rng = np.random.default_rng(0)
    sims = {("accuracy", k): [] for k in COUNTS}
    restore = {(how, r): [] for how in ("most", "random", "least") for r in (1, 2, 3)}
    for n in n_words:
        for _ in range(2000):
            order = rng.permutation(n)  # words 0 and 1 are the planted ones
            top = list(order[:4])
            for k in COUNTS:
                sims[("accuracy", k)].append(not ({0, 1} & set(order[:k])))
            if {0, 1} & set(top):
                m = len({0, 1} & set(top))
                for r in (1, 2, 3):
                    restore[("most", r)].append(m <= r)
                    restore[("random", r)].append(not ({0, 1} & set(top[: 4 - r])))
                    restore[("least", r)].append(False)
    return {**{k: float(np.mean(v)) for k, v in sims.items()},
            **{k: float(np.mean(v)) for k, v in restore.items()}}  # fmt: skip


def test_the_importance_ranking_puts_the_planted_words_first(run: dict) -> None:
    rows = run["rows"]
    most = rows.loc[(rows["condition"] == "targeted:most") & (rows["variant"] == "k=2")]
    assert len(most) == SAMPLES
    for _, row in most.iterrows():
        edited = {(e["field"], e["occurrence"]) for e in row["perturbations"]}
        assert edited == set(run["planted"][(row["benchmark"], row["example_id"])])
    k1 = rows.loc[(rows["condition"] == "targeted:most") & (rows["variant"] == "k=1")]
    for _, row in k1.iterrows():  # the word with the larger planted weight
        (e,) = row["perturbations"]
        planted = run["planted"][(row["benchmark"], row["example_id"])]
        assert (e["field"], e["occurrence"]) == planted[0]
    assert run["counts"]["targeting"]["gsm8k"]["ranked"] == SAMPLES


def test_gap_and_restoration_rates_are_recovered_within_their_intervals(run: dict) -> None:
    rows = run["rows"]
    tables = targeting_tables(_pairs(rows), level=0.95)
    n_words = [len(run["candidates"][k]) for k in sorted(run["candidates"])]
    truth = _truths(n_words)
    attribution = tables["attribution"].set_index(["order", "k"])
    for k in COUNTS:
        most = attribution.loc[("most", k)]
        assert most["accuracy_targeted"] == 0.0  # every targeted row breaks a planted word
        gap = 0.0 - truth[("accuracy", k)]
        assert most["ci_low"] <= gap <= most["ci_high"], (k, gap, most.to_dict())
        least = attribution.loc[("least", k)]
        assert least["accuracy_targeted"] == 1.0  # the planted words are ranked last
        if most["discordant"]:
            assert most["fidelity"] == 1.0  # the targeted row is never the cheaper one
    restoration = tables["restoration"].set_index(["order", "r"])
    for (how, r), row in restoration.iterrows():
        assert row["k"] == 4 and row["n"] > 0
        assert row["ci_low"] - 1e-9 <= truth[(how, r)] <= row["ci_high"] + 1e-9, (how, r, row)
    assert restoration.loc[("least", 3), "rate"] == 0.0
    assert restoration.loc[("most", 2), "rate"] == 1.0
    summary = targeting_summary(_pairs(rows), level=0.95)
    assert json.loads(json.dumps(summary)) == summary


def test_the_report_section_shows_each_models_targeting_file(run: dict) -> None:
    from evalpipe.report.data import ReportData
    from evalpipe.scoring.summaries import rounded
    from evalpipe.studies.targeting.report import targeting_section

    assert targeting_section(ReportData()) is None
    summary = rounded(targeting_summary(_pairs(run["rows"]), level=0.95))
    html = targeting_section(ReportData(metrics={"metrics/planted/targeting.json": summary}))
    assert html is not None and "targeting-table" in html and "restoration-table" in html
    assert html.count("<tr") >= 1 + len(summary["attribution"]) + len(summary["restoration"])
    assert "planted" in html


def test_random_targeting_leaves_the_count_design_unchanged(run: dict) -> None:
    rows = run["rows"]
    plain = rows.loc[rows["condition"] == "typo"]
    clean = clean_rows(plain)
    found: dict = {}
    spec = dict(
        probabilities=validate_probabilities(PERTURB), seed=SEED, counts=COUNTS,
        eligibility=eligibility_from_params(PERTURB),
    )  # fmt: skip
    a = perturb_count_frame(clean, **spec).table
    b = perturb_count_frame(clean, **spec, all_edits=found).table
    assert a.equals(b)
    # the candidates' first k words are the random k-row's words, in the same random order
    k4 = plain.loc[plain["variant"] == "k=4"]
    for _, row in k4.iterrows():
        edits = found[(row["benchmark"], row["example_id"], 0)][:4]
        assert {(e["field"], e["occurrence"]) for e in row["perturbations"]} == {
            (e.field, e.occurrence) for e in edits
        }


def test_targeting_choices_and_design_are_checked() -> None:
    with pytest.raises(InputError, match=r"perturb\.targeting must be one of random, importance"):
        validate_targeting("best")
    params = {"perturb": {**PERTURB, "design": "words"}, "seed": 1,
              "scoring": {"method": "generate"}}  # fmt: skip
    with pytest.raises(InputError, match=r"expected perturb\.design: count"):
        generation(params, None, slug="m", source="params.yaml")
    assert not generation({**params, "perturb": {**PERTURB, "targeting": "random"}}, None,
                          slug="m", source="params.yaml").enabled  # fmt: skip


@pytest.mark.vllm
@pytest.mark.slow
@pytest.mark.timeout(600)
def test_targeting_runs_on_the_vllm_cpu_build_and_replays_from_the_cache(tmp_path: Path) -> None:
    import gc

    from evalpipe.inference.tiny import build_tiny_random, default_model_cache
    from evalpipe.inference.vllm_engine import VLLMBackend

    repo = Path(__file__).resolve().parents[1]
    model_dir, _ = build_tiny_random(default_model_cache(repo))
    spec = get_spec("gsm8k")
    bench, _ = load_benchmark(spec, source="sample", max_samples=2)
    settings = {**PERTURB, "counts": [1, 2]}
    perturbed = perturb_count_frame(
        bench, probabilities=validate_probabilities(settings), seed=SEED, counts=[1, 2],
        eligibility=eligibility_from_params(settings),
    ).to_pandas()  # fmt: skip
    params = {"perturb": settings, "seed": SEED, "scoring": {"method": "generate"}}
    bench_in = BenchmarkInput("gsm8k", tmp_path / "g.parquet", perturbed, spec, None,
                              "zero_shot", 0, "english")  # fmt: skip
    sampling = Sampling(0.0, 8, None, "generate")
    cfg = {"name": "tiny-random", "backend": "vllm", "dtype": "float32", "max_model_len": 1024,
           "gpu_memory_utilization": 0.1}  # fmt: skip
    runs = []
    try:
        for _ in range(2):
            part = generation(params, None, slug="tiny", source="params.yaml")
            engine = make_engine(cfg, cache_dir=tmp_path / "cache", model_cache=model_dir.parent)
            starts = VLLMBackend.starts
            plan = plan_benchmark(bench_in, sampling=sampling, studies=[part], engine=engine)
            (result,) = run_plans(engine, [plan], progress=False)
            runs.append((plan.rows, [g.output for g in result.generations],
                         part.summary(engine)["targeting"]["gsm8k"], VLLMBackend.starts - starts))  # fmt: skip
            engine.close()
    finally:
        VLLMBackend.shutdown_all()
        gc.collect()
    (rows, outputs, counts, _), (rows2, outputs2, counts2, started2) = runs
    assert counts["ranked"] >= 1 and counts["loglikelihood_requests"] > counts["ranked"]
    conditions = set(rows["condition"])
    assert {"typo", "targeted:most", "targeted:least"} <= conditions
    assert {"restored:most:1", "restored:random:1", "restored:least:1"} <= conditions
    # the second run: every answer and score from the cache, the same arms and outputs
    assert started2 == 0 and counts2 == counts and outputs2 == outputs
    assert rows2["fields"].tolist() == rows["fields"].tolist()
