"""Continuation arms: the prefix in requests and cache keys, the split rule, the designs' cells
and restoration rates, recovered from a planted OpenAI-compatible server on 127.0.0.1."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from evalpipe.answers import continuation_cells as cd
from evalpipe.answers.cot_split import prefix_of, split_answer, without_last_line
from evalpipe.answers.types import get_answer_type
from evalpipe.benchmarks import get_spec
from evalpipe.errors import InputError
from evalpipe.inference.cache import cache_key
from evalpipe.inference.openai_engine import OpenAIBackend
from evalpipe.inference.plan import BenchmarkInput, BenchmarkPlan, BenchmarkResult
from evalpipe.inference.types import EngineError, GenerationRequest, ModelIdentity
from evalpipe.paths import ProjectPaths
from evalpipe.report.data import ReportData
from evalpipe.scoring.intervals import wilson_interval
from evalpipe.scoring.restoration import restoration_interval, restoration_table
from evalpipe.scoring.simulate_arms import HEAVY
from evalpipe.scoring.simulate_restoration import restoration_study
from evalpipe.scoring.study import ImpactInputs, ScoreInputs
from evalpipe.seeding import hashed_seed
from evalpipe.studies.continuation import generate as continuation_generate
from evalpipe.studies.continuation import impact as continuation_impact
from evalpipe.studies.continuation import paths as files
from evalpipe.studies.continuation import score as continuation_score
from evalpipe.studies.continuation.generate import cell_requests
from evalpipe.studies.continuation.report import continuation_section
from tests.continuation_server import RESTORE, UNEXTRACTABLE, PlantedServer, question, uniform

IDENTITY = ModelIdentity("planted", {"backend": "openai", "name": "planted"})
NUMBER = get_answer_type("number")


def _parse(text: str) -> str | None:
    return NUMBER.parse(text).prediction


def test_prefix_joins_the_cache_key_only_when_set() -> None:
    plain = GenerationRequest("q", max_tokens=8)
    assert cache_key(IDENTITY, plain) == cache_key(IDENTITY, GenerationRequest("q", 8, prefix=""))
    assert "prefix" not in plain.sampling_key()
    keyed = {cache_key(IDENTITY, GenerationRequest("q", 8, prefix=p)) for p in ("a", "b", "")}
    assert len(keyed) == 3
    with pytest.raises(InputError, match='field "prefix"'):
        GenerationRequest("q", 8, prefix=None).validate(3)  # type: ignore[arg-type]


def test_split_rule_per_answer_type() -> None:
    assert split_answer("x = 3\ny = 4\n#### 7", "number").reasoning == "x = 3\ny = 4"
    # the last marker counts: reasoning may mention an answer on the way
    text = "The answer is not 5.\nSo, Answer: B"
    assert split_answer(text, "choice_letter").answer == "Answer: B"
    assert split_answer("まず足す。\n答えは7です。", "number").reasoning == "まず足す。"
    assert split_answer("7", "number") is None  # no marker
    assert split_answer("The answer is 7", "number") is None  # no reasoning before it
    assert split_answer(None, "number") is None
    assert without_last_line("a\n\nb\nc\n") == "a\n\nb"
    assert prefix_of("one two  three\nfour", 3) == "one two  three"
    assert prefix_of("one two three four", 0.25) == "one"
    assert prefix_of("one two", 0) == ""


def test_design_settings_are_checked() -> None:
    cd.check_designs(["cot_swap", "prefix_scan"], [0, 8, 0.5, 1.0], source="params.yaml")
    with pytest.raises(InputError, match=r"continuation\.designs: .*'swap'"):
        cd.check_designs(["swap"], [], source="params.yaml")
    with pytest.raises(InputError, match=r"prefix_budgets: .*1\.5"):
        cd.check_designs([], [1.5], source="params.yaml")
    with pytest.raises(InputError, match=r"prefix_budgets: .*-1"):
        cd.check_designs([], [-1], source="params.yaml")


def _tiny_pairs() -> pd.DataFrame:
    """Three pairs of two examples: eligible, not eligible (typo harmless), eligible but the
    typo'd output has no marker (unsplit for the swap, still scanned)."""
    return pd.DataFrame(
        {
            "example_id": ["e1", "e2", "e2"],
            "clean_prompt": ["q1", "q2", "q2"],
            "typo_prompt": ["t1", "t2", "t2b"],
            "clean_output": ["r\nok\nThe answer is 1", "s\nThe answer is 2", "s\nThe answer is 2"],
            "typo_output": ["r'\nThe answer is 9", "s\nThe answer is 2", "2?"],
            "clean_answer": ["1", "2", "2"],
            "typo_answer": ["9", "2", None],
            "clean_correct": [True, True, True],
        }
    )


def test_cells_and_restoration_by_hand() -> None:
    pairs = _tiny_pairs()
    assert cd.eligible(pairs).tolist() == [True, False, True]
    cells, unsplit = cd.cells(pairs, answer_type="number", designs=cd.DESIGNS, budgets=[0, 1.0])
    assert unsplit.tolist() == [False, False, True]
    swap = [c for c in cells if c.design == cd.COT_SWAP]
    assert [(c.cell, c.prompt, c.prefix) for c in swap] == [
        ("A", "q1", "r\nok\n"),
        ("B", "t1", "r'\n"),
        ("C", "t1", "r\nok\n"),
        ("D", "q1", "r'\n"),
    ]
    deletion = [c for c in cells if c.design == cd.ANSWER_LINE_DELETION]
    assert [(c.pair, c.prefix) for c in deletion] == [(0, "r\n")]
    scan = [(c.pair, c.budget, c.prefix) for c in cells if c.design == cd.PREFIX_SCAN]
    assert scan == [(0, "0", ""), (0, "1.0", "r\nok"), (2, "0", ""), (2, "1.0", "s")]
    reqs = cell_requests(cells, answer_tokens=16, free_tokens=256)
    assert {r.max_tokens for r, c in zip(reqs, cells, strict=True) if c.free} == {256}
    assert {r.max_tokens for r, c in zip(reqs, cells, strict=True) if not c.free} == {16}
    # A restores, B and D keep the typo'd answer, C is unextractable, deletion restores;
    # the scan restores one of two pairs at each budget
    answers = ["1", "9", None, "9", "1", None, "1", "2", "1"]
    table = restoration_table(pairs, cells, answers, unsplit, level=0.95)
    got = table.set_index(["design", "cell", "budget"])
    assert got.loc[("cot_swap", "A", ""), ["n", "restored"]].tolist() == [1, 1]
    assert got.loc[("cot_swap", "C", ""), ["restored", "unextractable"]].tolist() == [0, 1]
    assert got.loc[("prefix_scan", "scan", "0"), ["n", "restored", "unextractable"]].tolist() == [
        2,
        1,
        1,
    ]
    assert got.loc[("prefix_scan", "scan", "1.0"), ["restored", "rate"]].tolist() == [1, 0.5]
    assert (table["unsplit"] == 1).all()
    assert (table["ci_low"] <= table["rate"]).all() and (table["rate"] <= table["ci_high"]).all()


def _planted_pairs(n_examples: int, outputs: dict[str, str]) -> pd.DataFrame:
    rows = []
    for i in range(1, n_examples + 1):
        a, b = 10 + i % 37, 3 + i % 11
        clean = question(i, a, b)
        for typo in ("plsu", "pluss"):
            t = question(i, a, b, typo)
            rows.append(
                {
                    "example_id": i,
                    "clean_prompt": clean,
                    "typo_prompt": t,
                    "clean_output": outputs[clean],
                    "typo_output": outputs[t],
                    "gold": str(a + b),
                }
            )
    pairs = pd.DataFrame(rows)
    pairs["clean_answer"] = [_parse(t) for t in pairs["clean_output"]]
    pairs["typo_answer"] = [_parse(t) for t in pairs["typo_output"]]
    pairs["clean_correct"] = pairs["clean_answer"] == pairs["gold"]
    return pairs


def test_planted_server_rates_are_recovered_within_their_intervals() -> None:
    n_examples = 300
    with PlantedServer() as url:
        backend = OpenAIBackend([url], "planted", IDENTITY, max_concurrency=8)
        prompts = sorted(
            {
                question(i, 10 + i % 37, 3 + i % 11, w)
                for i in range(1, n_examples + 1)
                for w in ("plus", "plsu", "pluss")
            }
        )
        free = backend.generate([GenerationRequest(p, 64, temperature=0.0) for p in prompts])
        pairs = _planted_pairs(
            n_examples, {p: g.output for p, g in zip(prompts, free, strict=True)}
        )
        cells, unsplit = cd.cells(
            pairs, answer_type="number", designs=cd.DESIGNS, budgets=[0, 4, 0.5, 1.0]
        )
        gens = backend.generate(cell_requests(cells, answer_tokens=16, free_tokens=64))
        backend.close()
    table = restoration_table(
        pairs, cells, cd.cell_answers(cells, gens, _parse), unsplit, level=0.95
    )
    ids = pairs["example_id"].to_numpy()
    eligible = cd.eligible(pairs)
    # planted: clean wrong when i % 7 == 0, typo harmless when i % 5 == 0, no marker i % 11 == 0
    expected = [(i % 7 != 0 and i % 5 != 0) for i in ids]
    assert eligible.tolist() == expected
    assert unsplit.tolist() == [e and i % 11 == 0 for e, i in zip(expected, ids, strict=True)]
    split_ok = [e and i % 11 != 0 for e, i in zip(expected, ids, strict=True)]
    # the scan needs only the clean output split, which i % 11 == 0 also prevents
    truth = {
        ("cot_swap", "A", ""): 1.0,
        ("cot_swap", "B", ""): 0.0,
        ("cot_swap", "C", ""): 1 - UNEXTRACTABLE,
        ("cot_swap", "D", ""): 0.0,
        ("answer_line_deletion", "C-1", ""): RESTORE,
        ("prefix_scan", "scan", "0"): 0.0,
        ("prefix_scan", "scan", "4"): RESTORE,
        ("prefix_scan", "scan", "0.5"): RESTORE,
        ("prefix_scan", "scan", "1.0"): 1.0,
    }
    got = table.set_index(["design", "cell", "budget"])
    assert sorted(got.index) == sorted(truth)
    assert (got["n"] == sum(split_ok)).all()
    assert (got["unsplit"] == int(unsplit.sum())).all() and unsplit.sum() > 0
    for key, value in truth.items():
        row = got.loc[key]
        assert row["ci_low"] <= value <= row["ci_high"], (key, row.to_dict())
    # C's failures are the planted unextractable answers, kept in its denominator
    planted = sum(
        uniform(i, "u") < UNEXTRACTABLE for i, ok in zip(ids, split_ok, strict=True) if ok
    )
    assert got.loc[("cot_swap", "C", ""), "unextractable"] == planted > 0
    assert got.loc[("cot_swap", "C", ""), "restored"] == sum(split_ok) - planted
    # two typo draws of one example behave alike: the clustered interval is wider
    assert got.loc[("answer_line_deletion", "C-1", ""), "design_effect"] > 1.5


def test_a_refused_continuation_falls_back_to_completions_on_the_local_template(
    tiny_model: Path,
) -> None:
    """A chat endpoint without continue_final_message, and the model's own tokenizer at hand:
    the prompt is rendered with its chat template, left open, and sent to /v1/completions."""
    with PlantedServer(chat_only=True) as url:
        backend = OpenAIBackend([url], "planted", IDENTITY, max_retries=0, tokenizer_dir=tiny_model)
        prefix = "We add 2 and 3.\nThe sum is 5.\n"
        typo = question(1, 2, 3, "plsu")
        restored, wrong = backend.generate(
            [GenerationRequest(typo, 64, prefix=prefix), GenerationRequest(typo, 64, prefix="x")]
        )
        backend.close()
    assert restored.output == "The answer is 5." and wrong.output == "\nThe answer is 6."
    assert not backend.refused  # answered, not recorded as refused


def test_a_server_without_continuation_is_refused_clearly() -> None:
    with PlantedServer(chat_only=True) as url:
        backend = OpenAIBackend([url], "planted", IDENTITY, max_retries=0)
        plain = backend.generate([GenerationRequest(question(1, 2, 3), 32)])
        assert plain[0].output.endswith("The answer is 5.")
        with pytest.raises(EngineError, match="continue_final_message"):
            backend.generate([GenerationRequest(question(1, 2, 3), 16, prefix="We add")])
        backend.close()


def test_restoration_interval_covers_a_planted_rate_where_plain_wilson_does_not() -> None:
    """A small case of perf/continuation_coverage.py: heavy-tailed typo'd pairs per example,
    four draws, 40 examples (the full table is in docs/perturbation.md)."""
    rng = np.random.default_rng(hashed_seed(0, "test_restoration_coverage"))
    clustered = plain = 0
    reps = 200
    for _ in range(reps):
        hits, pairs, truth = restoration_study(
            "headline", rng, examples=40, clusters=HEAVY, draws=4
        )
        low, high, _ = restoration_interval(hits, pairs, level=0.95)
        clustered += low <= truth <= high
        p_low, p_high = wilson_interval(hits.sum(), hits.size, level=0.95)
        plain += p_low <= truth <= p_high
    assert clustered / reps >= 0.9
    assert plain / reps < 0.7


def _plain_result(backend: OpenAIBackend, n_examples: int):
    """A gsm8k-like benchmark of planted questions answered by the planted server, as the
    generate stage holds it after the plain answers (:class:`BenchmarkResult`)."""
    rows, prompts = [], []
    for i in range(1, n_examples + 1):
        a, b = 10 + i % 37, 3 + i % 11
        for variant, draw, word in (("original", 0, "plus"), ("w1", 0, "plsu"), ("w1", 1, "pluss")):
            rows.append(
                {"example_id": str(i), "variant": variant, "word_rank": 0 if variant == "original"
                 else 1, "draw": draw, "condition": "typo", "subtask": None, "gold": str(a + b)}
            )  # fmt: skip
            prompts.append(question(i, a, b, word))
    frame = pd.DataFrame(rows)
    requests = [GenerationRequest(p, 64, temperature=0.0) for p in prompts]
    spec = get_spec("gsm8k")
    bench = BenchmarkInput("gsm8k", Path("gsm8k.parquet"), frame, spec, None, "cot", 0, "english")
    plan = BenchmarkPlan(bench, frame, prompts, requests, None, "")
    return BenchmarkResult(plan, backend.generate(requests), [], {})


def _pairs_table(result) -> pd.DataFrame:
    """The score stage's pairs table of the plain result (the columns the study reads)."""
    rows = result.plan.rows.assign(
        prediction=[_parse(g.output) for g in result.generations], benchmark="gsm8k"
    )
    clean = rows.loc[rows["variant"] == "original"].set_index("example_id")
    typo = rows.loc[rows["variant"] != "original"].reset_index(drop=True)
    original = clean.loc[typo["example_id"]]
    return typo.assign(
        model="planted", view="gsm8k", method="generate", language="english",
        cluster=typo["example_id"].astype(int), prediction_perturbed=typo["prediction"],
        prediction_original=original["prediction"].to_numpy(),
        correct_original=(original["prediction"] == original["gold"]).to_numpy(),
    )  # fmt: skip


def test_the_study_parts_write_the_contract_files(tmp_path: Path) -> None:
    """generate's follow-up cells, score's metrics, impact's table and plot and the report
    section, from a planted server: the benchmark's rates hold the planted truths."""
    params = {
        "prompt": {"style": "cot"},
        "continuation": {"designs": list(cd.DESIGNS), "prefix_budgets": [0, 4, 1.0],
                         "answer_tokens": 16},
    }  # fmt: skip
    paths = ProjectPaths(tmp_path)
    with PlantedServer() as url:
        backend = OpenAIBackend([url], "planted", IDENTITY, max_concurrency=8)
        result = _plain_result(backend, 120)
        part = continuation_generate.generation(params, paths, slug="planted", source="params.yaml")
        assert part.enabled
        part.follow(backend, [result], progress=False)
        backend.close()
    cells = pd.read_parquet(files.outputs(paths, "planted") / "gsm8k.parquet")
    assert set(cells["design"]) == {"", *cd.DESIGNS} and (cells["cell"] == cd.UNSPLIT).any()

    pairs = _pairs_table(result)
    score = continuation_score.scoring(params)
    inputs = ScoreInputs("planted", paths, {}, pairs, 0.95)
    score.write(inputs, figures := score.figures(inputs))
    assert any("cot_swap C restores" in line for line in score.lines(figures))
    metrics = json.loads(files.metrics(paths, "planted").read_text())
    swap = metrics["gsm8k"]["cot_swap"]
    assert swap["C"]["ci_low"] <= 1 - UNEXTRACTABLE <= swap["C"]["ci_high"]
    assert swap["C"]["unextractable"] > 0 and swap["A"]["rate"] == 1.0 and swap["B"]["rate"] == 0
    deletion = metrics["gsm8k"]["answer_line_deletion"]["C-1"]
    assert deletion["ci_low"] <= RESTORE <= deletion["ci_high"]
    assert metrics["gsm8k"]["prefix_scan"]["1.0"]["rate"] == 1.0
    assert metrics["pooled:english"] == metrics["gsm8k"]

    empty = pd.DataFrame()
    continuation_impact.PART.write(ImpactInputs(paths, empty, empty, empty, 0.95, ["planted"], {}))
    table = pd.read_parquet(files.table(paths))
    assert {"model", "scope", "benchmark", "design", "n", "restored", "rate", "ci_low",
            "ci_high"} <= set(table.columns)  # fmt: skip
    assert len(table) == 2 * (4 + 1 + 3)  # the benchmark and its language pooled
    plot = pd.read_csv(files.plot(paths))
    assert sorted(set(plot["prefix_budget"])) == [0.0, 1.0, 4.0]

    report = ReportData(metrics={"metrics/planted/continuation.json": metrics})
    page = continuation_section(report)
    assert page is not None and "answer_line_deletion" in page and "mediation" in page
    assert continuation_section(ReportData()) is None

    # off: the files an earlier run wrote are removed, nothing new is written
    off = {**params, "continuation": {**params["continuation"], "designs": []}}
    continuation_generate.generation(off, paths, slug="planted", source="x").finish(["gsm8k"])
    assert not files.outputs(paths, "planted").exists()
    continuation_score.scoring(off).write(inputs, None)
    assert not files.scored(paths, "planted").exists()
