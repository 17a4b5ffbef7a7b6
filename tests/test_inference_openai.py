"""The OpenAI backend against real HTTP servers on 127.0.0.1 (canned servers that fail, throttle
or die; the real vLLM API server is in test_inference_vllm.py), and the generate stage killed
mid-run."""

from __future__ import annotations

import json
import logging
import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
import yaml

from evalpipe.inference.cache import GenerationCache
from evalpipe.inference.engine import make_engine
from evalpipe.inference.types import EngineError, GenerationRequest
from tests.conftest import TEST_PARAMS
from tests.inference_servers import CANNED_JSON, CannedServer, canned_answer, free_port

REPO = Path(__file__).resolve().parents[1]
SCHEMA = {
    "type": "object",
    "properties": {"label": {"enum": ["positive", "negative"]}},
    "required": ["label"],
}


def _cfg(*urls: str, **extra: object) -> dict:
    cfg = {
        "name": "canned",
        "backend": "openai",
        "base_urls": list(urls),
        "api_key_env": "EVALPIPE_TEST_KEY",
        "max_concurrency": 4,
        "max_retries": 4,
        "retry_backoff_s": 0.01,
        # generous: a timeout on a loaded machine would send a request twice
        "request_timeout_s": 60,
    }
    cfg.update(extra)
    return cfg


def _requests(n: int, **kw: object) -> list[GenerationRequest]:
    return [GenerationRequest(f"prompt number {i}", max_tokens=8, **kw) for i in range(n)]


def test_answers_come_back_in_request_order_and_duplicates_are_sent_once(tmp_path: Path) -> None:
    with CannedServer(tmp_path / "log.jsonl") as server:
        engine = make_engine(_cfg(server.url), cache_dir=tmp_path / "cache")
        reqs = [*_requests(5), GenerationRequest("prompt number 2", max_tokens=8)]
        out = engine.generate(reqs, progress=False)
        assert [g.output for g in out] == [canned_answer(r.prompt) for r in reqs]
        assert len(server.requests()) == 5
        stats = engine.last_stats
        assert (stats.prompts, stats.unique_prompts, stats.misses) == (6, 5, 5)
        assert all(g.finish_reason == "stop" and g.output_tokens == 2 for g in out)


def test_schema_is_sent_as_response_format_json_schema(tmp_path: Path) -> None:
    with CannedServer(tmp_path / "log.jsonl") as server:
        engine = make_engine(_cfg(server.url), cache_dir=None)
        out = engine.generate(_requests(2, json_schema=SCHEMA), progress=False)
        assert json.loads(out[0].output) == CANNED_JSON
        fmt = server.requests()[0]["body"]["response_format"]
        assert fmt["type"] == "json_schema" and fmt["json_schema"]["schema"] == SCHEMA


def test_server_answering_500_for_a_while_is_retried_until_it_answers(tmp_path: Path) -> None:
    with CannedServer(tmp_path / "log.jsonl", fail_first=5) as server:
        engine = make_engine(_cfg(server.url, max_concurrency=1, max_retries=6), cache_dir=None)
        out = engine.generate(_requests(3), progress=False)
        assert [g.output for g in out] == [canned_answer(f"prompt number {i}") for i in range(3)]
        assert engine.backend.retries == 5


def test_429_with_retry_after_is_retried(tmp_path: Path) -> None:
    with CannedServer(tmp_path / "log.jsonl", fail_first=2, status=429) as server:
        engine = make_engine(_cfg(server.url, max_concurrency=1), cache_dir=None)
        assert len(engine.generate(_requests(2), progress=False)) == 2
        assert engine.backend.retries == 2


def test_server_dying_mid_run_keeps_finished_chunks_and_rerun_sends_only_the_rest(
    tmp_path: Path,
) -> None:
    cache_dir = tmp_path / "cache"
    reqs = _requests(12)
    with CannedServer(tmp_path / "a.jsonl", die_after=7) as dying:
        engine = make_engine(
            _cfg(dying.url, max_concurrency=1, max_retries=2, checkpoint_every=3),
            cache_dir=cache_dir,
        )
        with pytest.raises(EngineError, match="no answer in 3 attempts"):
            engine.generate(reqs, progress=False)
    kept = len(GenerationCache(cache_dir))
    assert kept == 6  # two full chunks of 3 were checkpointed; the third died half-way
    with CannedServer(tmp_path / "b.jsonl") as healthy:
        engine = make_engine(_cfg(healthy.url, checkpoint_every=3), cache_dir=cache_dir)
        out = engine.generate(reqs, progress=False)
        assert len(healthy.requests()) == 12 - kept
        assert engine.last_stats.cache_hits == kept
    assert [g.output for g in out] == [canned_answer(r.prompt) for r in reqs]
    assert sum(g.from_cache for g in out) == kept


def test_fleet_routes_around_a_server_that_dies(tmp_path: Path) -> None:
    # one retry per request: enough, because a request's retry goes to the other server
    with (
        CannedServer(tmp_path / "a.jsonl", die_after=2) as dying,
        CannedServer(tmp_path / "b.jsonl") as healthy,
    ):
        engine = make_engine(
            _cfg(dying.url, healthy.url, max_concurrency=2, max_retries=1), cache_dir=None
        )
        prompts = [f"prompt number {i}" for i in range(10)]
        out = engine.generate(_requests(10), progress=False)
        # every prompt answered once, in order, none lost
        assert [g.output for g in out] == [canned_answer(p) for p in prompts]
        assert dying.proc.wait(timeout=5) != 0
        answered_by = {
            name: [r["body"]["messages"][-1]["content"] for r in server.requests()]
            for name, server in (("dying", dying), ("healthy", healthy))
        }
    # The dying server answered at most its 2 before it died (one of them may have been cut
    # off on the wire as it died, and answered again by the healthy one); everything else went
    # to the healthy server, so the run avoided the dead one after its death.
    assert len(answered_by["dying"]) <= 2
    assert set(answered_by["healthy"]) >= set(prompts) - set(answered_by["dying"])
    assert set(answered_by["healthy"]) | set(answered_by["dying"]) == set(prompts)
    assert engine.backend.retries >= 1  # the request that found it dead was sent elsewhere


def test_a_retry_goes_to_the_server_after_the_one_that_failed_it(tmp_path: Path) -> None:
    # All four requests take their first server before any answer: 0, 1, 0, 1. The two sent to
    # the closed port retry together; on a shared round-robin the first of them would take
    # turn 0 (the closed port) again and, with one retry, fail the run.
    dead = f"http://127.0.0.1:{free_port()}/v1"
    with CannedServer(tmp_path / "log.jsonl") as healthy:
        engine = make_engine(
            _cfg(dead, healthy.url, max_concurrency=4, max_retries=1), cache_dir=None
        )
        out = engine.generate(_requests(8), progress=False)
        assert [g.output for g in out] == [canned_answer(f"prompt number {i}") for i in range(8)]
        assert len(healthy.requests()) == 8
    assert engine.backend.retries == 4  # every other request found the closed port, once
    assert engine.backend.failures.total() == 0  # summed up and cleared at the run's end


def test_refused_connection_is_a_clear_error(tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{free_port()}/v1"
    engine = make_engine(_cfg(url, max_retries=1), cache_dir=tmp_path / "cache")
    with pytest.raises(EngineError, match="nothing listens") as info:
        engine.generate(_requests(1), progress=False)
    assert url in str(info.value) and "ConnectionRefusedError" in str(info.value)


def test_a_server_that_is_down_is_one_warning_and_a_summary_not_a_line_per_retry(
    tmp_path: Path, caplog
) -> None:
    # 8 requests, 4 in flight, 5 attempts each at a closed port: a line per retry printed 16
    url = f"http://127.0.0.1:{free_port()}/v1"
    engine = make_engine(_cfg(url, max_retries=4), cache_dir=None)
    with (
        caplog.at_level(logging.DEBUG, logger="evalpipe.inference.openai_engine"),
        pytest.raises(EngineError, match="nothing listens") as info,
    ):
        engine.generate(_requests(8), progress=False)
    assert "no answer in 5 attempts" in str(info.value) and "ConnectionRefusedError" in str(
        info.value
    )
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 2, warnings
    assert warnings[0].startswith(f"{url}/chat/completions: ConnectionRefusedError")
    assert warnings[1].startswith(f"failed attempts: {url}/chat/completions: ")
    failed = int(warnings[1].split(": ")[2].split(" ")[0])
    assert failed >= 5  # every attempt of the request that gave up, the others' too
    retries = [r for r in caplog.records if r.getMessage().startswith("retrying in")]
    assert retries and all(r.levelno == logging.DEBUG for r in retries)


def test_api_key_comes_from_the_environment_and_is_never_stored(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("EVALPIPE_TEST_KEY", "sk-secret-123")
    with CannedServer(tmp_path / "log.jsonl") as server:
        engine = make_engine(_cfg(server.url), cache_dir=tmp_path / "cache")
        engine.generate(_requests(2), progress=False)
        assert {r["authorization"] for r in server.requests()} == {"Bearer sk-secret-123"}
    stored = b"".join(p.read_bytes() for p in (tmp_path / "cache").iterdir())
    assert b"sk-secret" not in stored


def test_a_request_the_server_refuses_is_recorded_not_retried(tmp_path: Path) -> None:
    with CannedServer(tmp_path / "log.jsonl", fail_first=1, status=400) as server:
        engine = make_engine(_cfg(server.url, max_concurrency=1), cache_dir=None)
        out = engine.generate(_requests(2), progress=False)
        assert [g.finish_reason for g in out] == ["rejected", "stop"]
        assert out[0].output == "" and engine.backend.retries == 0


def test_an_unauthorised_request_stops_the_run(tmp_path: Path) -> None:
    # 401/403/404 concern every request (key, URL, model name): not a prompt's fault
    with CannedServer(tmp_path / "log.jsonl", fail_first=1, status=401) as server:
        engine = make_engine(_cfg(server.url), cache_dir=None)
        with pytest.raises(EngineError, match="HTTP 401: canned failure"):
            engine.generate(_requests(1), progress=False)
        assert engine.backend.retries == 0


def test_prompts_over_the_servers_context_are_recorded_and_the_run_goes_on(
    tmp_path: Path,
) -> None:
    long_prompt = "word " * 40
    reqs = [
        *_requests(3),
        GenerationRequest(long_prompt, max_tokens=8),
        GenerationRequest("please REFUSE this", max_tokens=8),
        GenerationRequest("a prompt with a budget over the context", max_tokens=500),
    ]
    with CannedServer(tmp_path / "log.jsonl", max_model_len=32) as server:
        engine = make_engine(_cfg(server.url), cache_dir=tmp_path / "cache")
        out = engine.generate(reqs, progress=False)
        assert engine.backend.max_model_len == 32  # read from /v1/models
        reasons = [g.finish_reason for g in out]
        assert reasons == ["stop"] * 3 + ["prompt_too_long", "rejected", "stop"]
        assert out[3].output == out[4].output == "" and engine.backend.retries == 0
        assert engine.backend.refused == {"prompt_too_long": 1, "rejected": 1}
        # the budget is clamped to the published context, as vLLM would refuse it otherwise
        budgets = {
            r["body"]["messages"][-1]["content"]: r["body"]["max_tokens"] for r in server.requests()
        }
        assert budgets[reqs[-1].prompt] == 32 and budgets[reqs[0].prompt] == 8
        # refusals depend on the server's settings, not on the model identity: not cached
        again = make_engine(_cfg(server.url), cache_dir=tmp_path / "cache")
        second = again.generate(reqs, progress=False)
        assert again.last_stats.cache_hits == 4 and again.last_stats.misses == 2
        assert [g.finish_reason for g in second] == reasons


def test_loglikelihood_over_a_server_scores_token_ids_not_character_offsets(
    tmp_path: Path,
) -> None:
    from evalpipe.inference.types import LoglikelihoodRequest
    from tests.inference_servers import canned_logprob, canned_tokens

    reqs = [
        LoglikelihoodRequest("### 応答:\n", "矛盾"),  # byte tokens: every echoed offset is 0
        LoglikelihoodRequest("### 応答:\n", "含意"),
        LoglikelihoodRequest("Question?\nAnswer:", " B"),
        LoglikelihoodRequest("x" * 40, " B"),  # over the published context: not sent
    ]
    with CannedServer(tmp_path / "log.jsonl", max_model_len=32) as server:
        engine = make_engine(_cfg(server.url), cache_dir=tmp_path / "cache")
        scores = engine.loglikelihood(reqs, progress=False)
        sent = [r["body"] for r in server.requests()]
    for req, score in zip(reqs[:3], scores, strict=False):
        ctx, cont = canned_tokens(req.context, True), canned_tokens(req.continuation, False)
        ids = ctx + cont
        expected = sum(canned_logprob(i, ids[i]) for i in range(len(ctx), len(ids)))
        assert score.logprob == pytest.approx(expected) and score.n_tokens == len(cont)
        # greedy only when every continuation position is even (the canned server's top token)
        assert score.greedy is all(i % 2 == 0 for i in range(len(ctx), len(ids)))
    assert scores[0].n_tokens == 6 and scores[0].logprob != scores[1].logprob
    assert math.isnan(scores[3].logprob) and len(sent) == 3  # the long one never went out
    assert all(isinstance(b["prompt"], list) and b["echo"] for b in sent)


def test_loglikelihood_needs_a_tokenizer_and_says_where_to_get_one(tmp_path: Path) -> None:
    from evalpipe.inference.types import LoglikelihoodRequest

    # nothing listens at the server root: no /tokenize, and the name is no local folder
    url = f"http://127.0.0.1:{free_port()}/v1"
    engine = make_engine(_cfg(url, max_retries=0), cache_dir=None)
    with pytest.raises(EngineError, match="/tokenize") as info:
        engine.loglikelihood([LoglikelihoodRequest("Q:", " A")], progress=False)
    assert "local model folder" in str(info.value)


def _stage_project(root: Path, url: str) -> Path:
    """A working directory with perturbed sets built from the bundled imdb and gsm8k samples."""
    from evalpipe import atomic
    from evalpipe.benchmarks import get_spec, load_benchmark
    from tests.perturbed_sets import write_unperturbed

    for name in ("imdb", "gsm8k"):
        examples, fewshot = load_benchmark(get_spec(name), source="sample", max_samples=10)
        write_unperturbed(root, name, examples)
        atomic.write_parquet(root / "data" / "benchmarks" / f"{name}.fewshot.parquet", fewshot)
    params = yaml.safe_load(TEST_PARAMS.read_text())
    params["benchmarks"]["suites"] = {"imdb": "english", "gsm8k": "english"}
    params["models"] = {"canned": _cfg(url, name="canned", max_concurrency=1, checkpoint_every=4)}
    (root / "params.yaml").write_text(yaml.safe_dump(params))
    return root


def _run_stage(root: Path, **kw: object) -> subprocess.Popen:
    # this checkout's stages and library, whatever copy of evalpipe the venv has installed
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO), str(REPO / "src")]))
    return subprocess.Popen(
        [sys.executable, "-m", "stages.generate", "--no-progress"],
        cwd=root,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        **kw,
    )


def test_generate_stage_killed_mid_run_resumes_without_regenerating(tmp_path: Path) -> None:
    cache_dir = tmp_path / "data" / "cache" / "generations" / "canned"
    # 0.5 s per answer, one at a time, 4 per checkpoint: a checkpoint every 2 s, so the kill
    # lands mid-run even when this process is slow to notice the second one
    with CannedServer(tmp_path / "slow.jsonl", delay=0.5) as slow:
        root = _stage_project(tmp_path, slow.url)
        proc = _run_stage(root)
        deadline = time.time() + 600  # a stage's imports can take long on a loaded machine
        while time.time() < deadline and len(list(cache_dir.glob("seg-*.parquet"))) < 2:
            time.sleep(0.05)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    assert len(list(cache_dir.glob("seg-*.parquet"))) >= 2, "the stage never checkpointed twice"
    kept = len(GenerationCache(cache_dir))
    assert kept >= 8 and not (tmp_path / "data" / "outputs").exists()
    with CannedServer(tmp_path / "fast.jsonl") as fast:
        _stage_project(tmp_path, fast.url)
        proc = _run_stage(root)
        out, err = proc.communicate(timeout=600)
        assert proc.returncode == 0, err
        metrics = json.loads((root / "data" / "outputs" / "canned" / "generation.json").read_text())
        assert metrics["cache_hits"] == kept
        assert len(fast.requests()) == metrics["misses"] == metrics["unique_prompts"] - kept
    assert all(p.name.startswith("seg-") for p in cache_dir.iterdir())
    outputs = pd.read_parquet(root / "data" / "outputs" / "canned" / "imdb.parquet")
    assert len(outputs) == 10 and outputs["output"].map(json.loads).tolist() == [CANNED_JSON] * 10
    assert set(outputs["model"]) == {"canned"} and set(outputs["model_id"]) == {"canned"}
    assert outputs["from_cache"].sum() + len(outputs[~outputs["from_cache"]]) == 10
    assert "generate@canned: 20 prompts" in out
    # every request carries its benchmark's budget and stop sequences for the prompt style
    logged = [json.loads(line) for name in ("slow.jsonl", "fast.jsonl")
              for line in (tmp_path / name).read_text().splitlines() if line]  # fmt: skip
    sent = {("Question:" in r["body"]["messages"][-1]["content"]): r["body"] for r in logged}
    assert sent[True]["max_tokens"] == 256 and sent[True]["stop"] == ["\n\nQuestion:"]
    assert sent[False]["max_tokens"] == 128 and "stop" not in sent[False]
    per = metrics["benchmarks"]
    assert per["gsm8k"]["stop"] == ["\n\nQuestion:"] and per["gsm8k"]["truncated"] == 0


def test_generate_stage_errors_name_the_model_entry(tmp_path: Path) -> None:
    root = _stage_project(tmp_path, "http://127.0.0.1:9/v1")
    params = yaml.safe_load((root / "params.yaml").read_text())
    params["models"]["canned"]["base_urls"] = []
    (root / "params.yaml").write_text(yaml.safe_dump(params))
    proc = _run_stage(root)
    _, err = proc.communicate(timeout=600)
    assert proc.returncode == 2, err
    assert "params.yaml: models.canned.base_urls: expected at least one server URL" in err
    assert "for models.canned.backend: openai" in err
    assert not (root / "data" / "outputs").exists()  # nothing half-written


def test_requests_leave_no_info_lines_in_the_log(tmp_path: Path, caplog) -> None:
    # one INFO line per request would bury the progress bar under 17,944 lines
    caplog.set_level(logging.DEBUG)
    with CannedServer(tmp_path / "log.jsonl") as server:
        engine = make_engine(_cfg(server.url), cache_dir=None)
        caplog.clear()  # the server's readiness probe is not the backend's
        with caplog.at_level(logging.INFO):
            out = engine.generate(_requests(6), progress=False)
    assert len(out) == 6 and len(server.requests()) == 6
    lines = [r for r in caplog.records if r.levelno >= logging.INFO]
    assert not [r for r in lines if "POST" in r.getMessage()], lines


def test_per_request_lines_show_when_the_backend_is_asked_for_debug(tmp_path: Path, caplog) -> None:
    with CannedServer(tmp_path / "log.jsonl") as server:
        engine = make_engine(_cfg(server.url), cache_dir=None)
        caplog.clear()
        with caplog.at_level(logging.DEBUG, logger="evalpipe.inference.openai_engine"):
            engine.generate(_requests(2), progress=False)
    posts = [r for r in caplog.records if r.getMessage().startswith("POST ")]
    assert len(posts) == 2 and all("/chat/completions: HTTP 200" in r.getMessage() for r in posts)


def test_a_reply_that_is_not_an_openai_chat_completion_is_a_clear_error(tmp_path: Path) -> None:
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *a: object) -> None:
            pass

        def do_GET(self) -> None:  # /v1/models: no context limit
            self._send({"data": []})

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers["Content-Length"]))
            self._send({"choices": [], "note": "not a completion"})

        def _send(self, body: dict) -> None:
            data = json.dumps(body).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    server = ThreadingHTTPServer(("127.0.0.1", free_port()), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/v1"
        engine = make_engine(_cfg(url, max_retries=0), cache_dir=None)
        with pytest.raises(EngineError) as err:
            engine.generate(_requests(1), progress=False)
        message = str(err.value)
        assert f"{url}/chat/completions" in message
        assert "not an OpenAI chat completion" in message
        assert "not a completion" in message  # the reply's start: what came back
    finally:
        server.shutdown()
        server.server_close()


def test_chat_and_completions_replies_parse_alike() -> None:
    from evalpipe.inference.http_client import Reply
    from evalpipe.inference.openai_engine import _parse, _parse_text

    usage = {"prompt_tokens": 7, "completion_tokens": 3}
    chat = {
        "choices": [
            {
                "message": {"content": "Paris"},
                "finish_reason": "stop",
                "logprobs": {
                    "content": [
                        {"token": "Par", "logprob": -0.1, "top_logprobs": [
                            {"token": "Lon", "logprob": -2.5}, {"token": "Par", "logprob": -0.1}
                        ]}
                    ]
                },
            }
        ],
        "usage": usage,
    }  # fmt: skip
    text = {
        "choices": [
            {
                "text": "Paris",
                "finish_reason": "stop",
                "logprobs": {"top_logprobs": [{"Lon": -2.5, "Par": -0.1}]},
            }
        ],
        "usage": usage,
    }

    def reply(body: dict) -> Reply:
        return Reply(200, {}, json.dumps(body).encode())

    a, b = _parse(reply(chat), "u"), _parse_text(reply(text), "u")
    assert a == b
    assert (a.output, a.prompt_tokens, a.output_tokens) == ("Paris", 7, 3)
    assert a.first_token_logprobs == (("Par", -0.1), ("Lon", -2.5))
    with pytest.raises(EngineError, match="u: response is not an OpenAI completion"):
        _parse_text(reply({"choices": []}), "u")
