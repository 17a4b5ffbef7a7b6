"""Data-parallel generation on Ray (``models.<slug>.data_parallel_size``).

Fast: how chunks are owned, shards cut and results put back; the engine selection. Slow (one
local Ray cluster of two CPU workers for the module): tiny-random through vLLM's CPU build on two
replicas gives the single engine's outputs and cache byte for byte, and a replica killed
mid-chunk costs one chunk's prompts, no more, with the same results and cache.
"""

from __future__ import annotations

import functools
import os
import signal
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from evalpipe.cli import main as cli_main
from evalpipe.errors import InputError
from evalpipe.inference.cache import GenerationCache
from evalpipe.inference.device_plan import check_fits, devices_needed, take_devices
from evalpipe.inference.engine import Engine, make_backend, make_engine
from evalpipe.inference.ray_engine import (
    RayBackend,
    chunk_owners,
    contiguous_shards,
    reassemble,
    replica_count,
)
from evalpipe.inference.tiny import default_model_cache
from evalpipe.inference.types import GenerationRequest
from evalpipe.inference.vllm_engine import VLLMBackend
from tests.inference_servers import CannedServer, canned_answer

REPO = Path(__file__).resolve().parents[1]
# A small KV cache (the CPU build sizes it from this share of host memory, less what the
# process already holds).
MODEL_CFG = {
    "name": "tiny-random",
    "backend": "vllm",
    "dtype": "auto",
    "max_model_len": 512,
    "gpu_memory_utilization": 0.1,
    "checkpoint_every": 2,
}
PROMPTS = [
    "Question: What is 2 + 3?\nAnswer:",
    "Review: great film. Sentiment:",
    "質問：日本の首都はどこですか？",
    "Sort the words: pear apple fig.",
    "Premise: it rains. Hypothesis: the street is wet. Label:",
    "Translate to French: good morning",
    "Is 17 a prime number?",
]
LABEL_SCHEMA = {
    "type": "object",
    "properties": {"label": {"type": "string", "enum": ["positive", "negative"]}},
    "required": ["label"],
    "additionalProperties": False,
}


def test_chunk_j_always_runs_on_replica_j_mod_n() -> None:
    assert chunk_owners(7, 3) == [0, 1, 2, 0, 1, 2, 0]
    assert chunk_owners(2, 4) == [0, 1]
    assert chunk_owners(0, 2) == []


@pytest.mark.parametrize("n, parts", [(0, 2), (1, 3), (7, 3), (10, 2), (5, 5), (3, 8)])
def test_shards_cover_every_request_once_in_order(n: int, parts: int) -> None:
    shards = contiguous_shards(n, parts)
    assert [i for shard in shards for i in shard] == list(range(n))
    assert all(len(shard) > 0 for shard in shards) and len(shards) <= max(1, parts)
    assert max(map(len, shards), default=0) - min(map(len, shards), default=0) <= 1


def test_results_come_back_in_request_order_whatever_the_finishing_order() -> None:
    requests = [f"p{i}" for i in range(11)]
    shards = contiguous_shards(len(requests), 3)
    finished = {j: [requests[i].upper() for i in shards[j]] for j in (2, 0, 1)}
    assert reassemble(finished, len(shards)) == [r.upper() for r in requests]
    with pytest.raises(InputError, match=r"pieces \[1\] are missing"):
        reassemble({0: ["a"], 2: ["c"]}, 3)


def test_auto_fills_the_cluster_with_replicas_of_tensor_parallel_size() -> None:
    gpus = {"CPU": 96.0, "GPU": 8.0}
    assert replica_count("auto", cluster=gpus, per_replica={"CPU": 1, "GPU": 2}) == 4
    assert replica_count("auto", cluster=gpus, per_replica={"CPU": 1, "GPU": 3}) == 2
    assert replica_count("auto", cluster={"CPU": 2.0}, per_replica={"CPU": 1, "GPU": 0}) == 2
    assert replica_count("auto", cluster={"CPU": 8.0}, per_replica={"CPU": 1, "GPU": 1}) == 1
    assert replica_count(3, cluster={}, per_replica={"CPU": 1}) == 3


@pytest.mark.parametrize("bad", [0, -1, "two", 1.5, True, None])
def test_a_bad_data_parallel_size_names_the_key(bad: object) -> None:
    with pytest.raises(InputError, match=r"model\.data_parallel_size: expected a positive"):
        make_backend({**MODEL_CFG, "data_parallel_size": bad}, model_cache=_models())


def test_the_default_is_one_engine_and_replicas_keep_its_identity() -> None:
    single = make_backend(MODEL_CFG, model_cache=_models())
    replicated = make_backend({**MODEL_CFG, "data_parallel_size": 2}, model_cache=_models())
    assert isinstance(single, VLLMBackend)
    assert isinstance(replicated, RayBackend) and not replicated.started
    # the same identity, so the same cache keys: a run may switch between the two and resume
    assert replicated.identity == single.identity


def _models() -> Path:
    return default_model_cache(REPO)


@pytest.fixture(scope="module")
def cluster() -> Iterator[None]:
    """A local Ray cluster of two CPU workers for the module (no dashboard)."""
    ray = pytest.importorskip("ray")
    ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


def _segments(directory: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(directory.glob("seg-*.parquet"))}


@pytest.mark.slow
@pytest.mark.vllm
@pytest.mark.timeout(600)
def test_two_replicas_give_the_single_engines_outputs_and_cache_bytes(
    cluster: None, tmp_path: Path
) -> None:
    requests = [GenerationRequest(p, max_tokens=8) for p in PROMPTS]
    requests.append(GenerationRequest(PROMPTS[1], max_tokens=24, json_schema=LABEL_SCHEMA))
    requests.append(GenerationRequest(PROMPTS[0], max_tokens=8))  # a repeat, generated once

    single = make_engine(MODEL_CFG, cache_dir=tmp_path / "single", model_cache=_models())
    expected = single.generate(requests, progress=False)
    single.close()
    VLLMBackend.shutdown_all()

    cfg = {**MODEL_CFG, "data_parallel_size": 2}
    engine = make_engine(cfg, cache_dir=tmp_path / "ray", model_cache=_models())
    try:
        got = engine.generate(requests, progress=False)
        backend = engine.backend
        assert isinstance(backend, RayBackend) and backend.replicas == 2
        assert len(set(backend.pids)) == 2 and os.getpid() not in backend.pids
    finally:
        engine.close()

    assert got == expected
    assert engine.last_stats.to_dict() == single.last_stats.to_dict()
    assert engine.last_stats.misses == 8  # four chunks of two: two per replica
    assert _segments(tmp_path / "ray") == _segments(tmp_path / "single")
    assert len(_segments(tmp_path / "ray")) == 1


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_a_replica_killed_mid_chunk_costs_at_most_that_chunk(cluster: None, tmp_path: Path) -> None:
    every = 3
    prompts = [f"question {i:02d}" for i in range(12)]  # four chunks: 0 and 2 on replica 0
    requests = [GenerationRequest(p, max_tokens=4) for p in prompts]
    # one request at a time per replica, half a second each: a chunk takes 1.5 s
    with CannedServer(tmp_path / "calm.jsonl") as server:
        cfg = {
            "name": "canned",
            "backend": "openai",
            "base_urls": [server.url],
            "max_concurrency": 1,
        }
        reference = Engine(
            make_backend(cfg), GenerationCache(tmp_path / "single"), checkpoint_every=every
        )
        expected = reference.generate(requests, progress=False)
    assert [g.output for g in expected] == [canned_answer(p) for p in prompts]

    with CannedServer(tmp_path / "killed.jsonl", delay=0.5) as server:
        cfg = {**cfg, "base_urls": [server.url]}
        inner = make_backend(cfg)
        backend = RayBackend(
            inner,
            functools.partial(make_backend, cfg),
            replicas=2,
            resources={"CPU": 1.0, "GPU": 0.0},
        )
        engine = Engine(backend, GenerationCache(tmp_path / "ray"), checkpoint_every=every)
        backend.start()
        victim = backend.pids[1]
        first_of_chunk_1 = prompts[every]
        result: dict[str, object] = {}
        worker = threading.Thread(
            target=lambda: result.update(out=engine.generate(requests, progress=False))
        )
        worker.start()
        # kill replica 1 once the first prompt of its first chunk is answered: the chunk is
        # half done, and nothing of it is in the cache yet
        deadline = time.time() + 120
        while time.time() < deadline and not any(
            r["body"]["messages"][-1]["content"] == first_of_chunk_1 for r in server.requests()
        ):
            time.sleep(0.02)
        os.kill(victim, signal.SIGKILL)
        worker.join(timeout=180)
        sent = Counter(r["body"]["messages"][-1]["content"] for r in server.requests())
        engine.close()

    assert not worker.is_alive()
    assert result["out"] == expected
    repeats = sum(n - 1 for n in sent.values())
    # the killed chunk's answered prompts were asked again, and nothing else was (chunk 1, or
    # on a machine too loaded to kill inside it, replica 1's next chunk, 3)
    assert 1 <= repeats <= every
    again = {p for p, n in sent.items() if n > 1}
    assert any(again <= set(prompts[j * every : (j + 1) * every]) for j in (1, 3))
    assert set(sent) == set(prompts)
    assert _segments(tmp_path / "ray") == _segments(tmp_path / "single")


def test_each_model_holds_its_gpus_and_replicas_on_a_cluster_hold_none_here() -> None:
    vllm = {"backend": "vllm", "tensor_parallel_size": 2, "data_parallel_size": 1}
    assert devices_needed(vllm, total=8, ray_cluster=False) == 2
    assert devices_needed({**vllm, "data_parallel_size": 3}, total=8, ray_cluster=False) == 6
    assert devices_needed({**vllm, "data_parallel_size": "auto"}, total=7, ray_cluster=False) == 6
    assert devices_needed({**vllm, "data_parallel_size": 3}, total=8, ray_cluster=True) == 0
    assert devices_needed({**vllm, "backend": "openai"}, total=8, ray_cluster=False) == 0
    assert devices_needed(vllm, total=0, ray_cluster=False) == 0
    assert take_devices(["0", "1", "2"], 2) == (["0", "1"], ["2"])
    assert take_devices(["0"], 2) is None
    with pytest.raises(InputError, match=r"models\.big: needs 6 GPUs .* has 4"):
        check_fits({"small": 2, "big": 6}, ["0", "1", "2", "3"])


def test_generate_command_shares_out_the_gpus(tmp_path: Path) -> None:
    params = tmp_path / "params.yaml"
    params.write_text(
        "models:\n"
        "  a: {name: tiny-random, tensor_parallel_size: 2}\n"
        "  b: {name: tiny-random, data_parallel_size: 2}\n"
        "  c: {name: served, backend: openai, base_urls: [http://127.0.0.1:1/v1]}\n",
        encoding="utf-8",
    )
    runner = CliRunner()
    args = ["generate", "--dry-run", "--params", str(params), "--devices", "0,1,2,3"]
    result = runner.invoke(cli_main, args, env={"RAY_ADDRESS": ""})
    assert result.exit_code == 0, result.output
    assert result.output.splitlines() == [
        "a: 2 GPUs",
        "b: 2 GPUs",
        "c: 0 GPUs",
        "4 GPUs (0, 1, 2, 3), at most 3 at once",
    ]
    result = runner.invoke(cli_main, [*args[:-1], "0"], env={"RAY_ADDRESS": ""})
    assert result.exit_code == 2 and "models.a: needs 2 GPUs" in result.output


@pytest.mark.slow
def test_more_replicas_than_the_cluster_holds_is_an_error_not_a_wait(cluster: None) -> None:
    cfg = {"name": "canned", "backend": "openai", "base_urls": ["http://127.0.0.1:9/v1"]}
    backend = RayBackend(
        make_backend(cfg),
        functools.partial(make_backend, cfg),
        replicas=3,
        resources={"CPU": 1.0, "GPU": 0.0},
    )
    with pytest.raises(InputError, match=r"3 replicas of canned need \{'CPU': 3\.0\}"):
        backend.start()
    assert not backend.started and backend.replicas == 0
