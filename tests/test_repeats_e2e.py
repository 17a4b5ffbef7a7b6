"""sampling.repeats: 3, prompt.fewshot_draws: 2 and prompt.templates: [terse, plain] end to end against a real OpenAI-compatible server on 127.0.0.1 that
honours the seed and the temperature (its answer at temperature > 0 is hashed from the prompt and
the seed): perturb -> generate -> score, each stage its own process. The repeats are distinct,
cached (a re-run sends nothing) and reproducible (a run without the cache gets the same answers),
and every table counts them as pairs of their example. The server plants a template effect: under
the imdb template ``terse`` it gives the other label than for the clean prompt at the same seed,
under ``plain`` the same one, so ``template:terse`` changes every answer and ``template:plain``
none."""

from __future__ import annotations

import hashlib
import importlib
import json
import shutil
import threading
from functools import partial
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pandas as pd
import pytest
import yaml
from click.testing import CliRunner

from evalpipe import atomic
from evalpipe.arms import FEWSHOT_DRAW, ORIGINAL, REPEAT, TYPO, template_arm
from evalpipe.benchmarks import build_prompts, get_spec, load_benchmark
from evalpipe.studies.repeats.generate import repeat_seed
from evalpipe.words import word_list
from tests.conftest import TEST_PARAMS
from tests.inference_servers import canned_tokens
from tests.test_inference_openai import _cfg

pytestmark = [pytest.mark.server, pytest.mark.e2e, pytest.mark.slow, pytest.mark.timeout(600)]
SEED = 11
TEMPLATES = ["terse", "plain"]  # terse: the planted effect (every answer flipped); plain: none


def sampled_label(prompt: str, *, temperature: float, seed: int | None) -> str:
    """The planted model: greedy answers hash the prompt; sampled ones the prompt and the seed."""
    key = prompt if temperature == 0 else f"{prompt}\x1f{seed}"
    return ("positive", "negative")[hashlib.sha256(key.encode()).digest()[0] % 2]


class SeededServer:
    """A threaded OpenAI-compatible server; ``bodies`` holds every chat request it answered."""

    def __init__(self) -> None:
        self.bodies: list[dict] = []
        # a template's prompt -> (the clean prompt it rewords, flip the clean prompt's answer)
        self.reworded: dict[str, tuple[str, bool]] = {}
        lock, bodies, reworded = threading.Lock(), self.bodies, self.reworded

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a: object) -> None:
                pass

            def _send(self, body: dict) -> None:
                data = json.dumps(body).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                self._send({"object": "list", "data": [{"id": "seeded", "object": "model"}]})

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                if self.path == "/tokenize":
                    self._send(
                        {"tokens": canned_tokens(body["prompt"], body["add_special_tokens"])}
                    )
                    return
                prompt = body["messages"][-1]["content"]
                clean, flip = reworded.get(prompt, (prompt, False))
                label = sampled_label(clean, temperature=body.get("temperature", 1.0),
                                      seed=body.get("seed"))  # fmt: skip
                if flip:
                    label = "negative" if label == "positive" else "positive"
                content = (
                    json.dumps({"label": label, "confidence": 0.5, "reason": "seeded"})
                    if "response_format" in body else label
                )  # fmt: skip
                with lock:
                    bodies.append(body)
                self._send({
                    "id": "c", "object": "chat.completion", "model": body["model"],
                    "choices": [{"index": 0, "finish_reason": "stop",
                                 "message": {"role": "assistant", "content": content}}],
                    "usage": {"prompt_tokens": len(prompt.split()), "completion_tokens": 1},
                })  # fmt: skip

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> SeededServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


def _setup(root: Path, url: str) -> None:
    examples, fewshot = load_benchmark(get_spec("imdb"), source="sample", max_samples=4)
    atomic.write_parquet(root / "data" / "benchmarks" / "imdb.parquet", examples)
    atomic.write_parquet(root / "data" / "benchmarks" / "imdb.fewshot.parquet", fewshot)
    words = word_list("english", "wordfreq", raw_dir=root / "none", top_n=10, min_length=2)
    atomic.write_parquet(root / "data" / "words" / "english.parquet", words)
    params = yaml.safe_load(TEST_PARAMS.read_text())
    params["benchmarks"]["suites"] = {"imdb": "english"}
    params["models"] = {"seeded": _cfg(url, name="seeded", max_concurrency=2)}
    params["sampling"].update(temperature=0.7, seed=SEED, repeats=3)
    params["prompt"].update(style="few_shot", n_shots=2, fewshot_draws=2, templates=TEMPLATES)
    (root / "params.yaml").write_text(yaml.safe_dump(params))


def _run(root: Path, stage: str, *args: str) -> str:
    """One stage's command, in this process (the stages read the working directory)."""
    main = importlib.import_module(stage).main
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


def test_repeats_are_distinct_cached_reproducible_and_pairs_of_their_example(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    outputs_path = tmp_path / "data" / "outputs" / "seeded" / "imdb.parquet"
    with SeededServer() as server:
        _setup(tmp_path, server.url)
        _run(tmp_path, "stages.perturb", "--name", "imdb")
        perturbed = pd.read_parquet(tmp_path / "data" / "perturbed" / "imdb.parquet")
        clean = perturbed.loc[(perturbed["variant"] == ORIGINAL) & (perturbed["condition"] == TYPO)]
        shots = pd.read_parquet(tmp_path / "data" / "benchmarks" / "imdb.fewshot.parquet")
        render = partial(build_prompts, get_spec("imdb"), clean, shots, style="few_shot", n_shots=2)
        for name in TEMPLATES:
            for worded, own in zip(render(template=name), render(), strict=True):
                server.reworded[worded] = (own, name == "terse")
        _run(tmp_path, "stages.generate", "--no-progress")
        first = list(server.bodies)
        generated = pd.read_parquet(outputs_path)
        _run(tmp_path, "stages.generate", "--no-progress")  # every answer from the cache
        assert len(server.bodies) == len(first)
        cached = pd.read_parquet(outputs_path)
        assert cached["from_cache"].all()
        pd.testing.assert_frame_equal(cached.drop(columns="from_cache"),
                                      generated.drop(columns="from_cache"))  # fmt: skip
        shutil.rmtree(tmp_path / "data" / "cache")  # a fresh run asks the server again
        _run(tmp_path, "stages.generate", "--no-progress")
        assert len(server.bodies) == 2 * len(first)
    outputs = pd.read_parquet(outputs_path)
    # the same answers: every repeat's seed is in its request, and the server honours it
    pd.testing.assert_frame_equal(outputs, generated)
    seeds = {SEED, repeat_seed(SEED, 1), repeat_seed(SEED, 2)}
    assert {b["seed"] for b in first} == seeds and {b["temperature"] for b in first} == {0.7}

    perturbed = pd.read_parquet(tmp_path / "data" / "perturbed" / "imdb.parquet")
    typo_rows = perturbed.loc[perturbed["variant"] != ORIGINAL]
    arm = outputs.loc[(outputs["condition"] == TYPO) & (outputs["variant"] != ORIGINAL)]
    assert len(arm) == 6 * len(typo_rows)  # 3 repeats x 2 selections of demonstrations
    # another selection: other demonstrations for the same example, at the run's seed
    drawn = outputs.loc[outputs["condition"] == FEWSHOT_DRAW]
    assert drawn.groupby("example_id").size().eq(2).all()
    assert drawn.groupby("example_id")["prompt"].nunique().eq(2).all()
    # distinct: the clean prompt at three seeds, answers that differ for some example
    again = outputs.loc[outputs["condition"] == REPEAT]
    assert again.groupby("example_id")["prompt"].nunique().eq(1).all()
    assert again.groupby("example_id").size().eq(3).all()
    assert again.groupby("example_id")["output"].nunique().max() > 1
    # each answer is the planted model's for its own seed
    seed_of = {0: SEED, 1: repeat_seed(SEED, 1), 2: repeat_seed(SEED, 2)}
    for rec in again.to_dict("records"):
        expected = sampled_label(rec["prompt"], temperature=0.7, seed=seed_of[rec["draw"]])
        assert json.loads(rec["output"])["label"] == expected

    _run(tmp_path, "stages.score")
    details = json.loads(
        (tmp_path / "data" / "scored" / "seeded" / "robustness_details.json").read_text()
    )
    assert details["imdb"]["n"] == 6 * len(typo_rows)  # every replicate a pair of its example
    assert details["imdb"]["n_examples"] == perturbed["example_id"].nunique()
    spread = json.loads((tmp_path / "metrics" / "seeded" / "repeats.json").read_text())
    view = spread["views"]["imdb"]
    worded = {template_arm(name) for name in TEMPLATES}
    assert set(view) == {TYPO, REPEAT, FEWSHOT_DRAW, *worded, "templates"}
    assert view[TYPO]["n"] == 6 * len(typo_rows)
    assert view[FEWSHOT_DRAW]["n"] == perturbed["example_id"].nunique()
    assert view[REPEAT]["n"] == 2 * perturbed["example_id"].nunique()
    pairs = pd.read_parquet(tmp_path / "data" / "scored" / "seeded" / "pairs.parquet")
    rerun = pairs.loc[pairs["condition"] == REPEAT]
    changed = (rerun["prediction_original"] != rerun["prediction_perturbed"]).mean()
    assert view[REPEAT]["answer_change"] == pytest.approx(changed, abs=1e-4)  # rounded
    assert not (tmp_path / "metrics" / "seeded" / "defences.json").exists()

    # the planted template effect, recovered within its interval beside the typo effect: terse
    # changes every answer (accuracy 1 - 2 x the clean prompt's), plain none
    n_examples = perturbed["example_id"].nunique()
    clean_correct = pairs.loc[pairs["condition"] == template_arm("terse"), "correct_original"]
    truths = {"terse": (1.0, 1 - 2 * clean_correct.mean()), "plain": (0.0, 0.0)}
    for name, (change, delta) in truths.items():
        figures = view[template_arm(name)]
        assert figures["n"] == figures["n_examples"] == n_examples
        assert figures["answer_change_low"] <= change <= figures["answer_change_high"]
        assert figures["answer_change"] == pytest.approx(change)
        assert figures["ci_low"] <= delta <= figures["ci_high"]
        assert figures["delta"] == pytest.approx(delta, abs=1e-4)
    assert view["templates"]["n"] == 2 * n_examples
    assert view["templates"]["n_examples"] == n_examples
    assert view["templates"]["answer_change"] == pytest.approx(0.5)
