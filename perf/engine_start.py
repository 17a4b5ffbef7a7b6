"""Where a vLLM engine start goes on the CPU build, per engine mode, and what each mode costs in
generation speed and outputs.

Each mode runs in a fresh Python process (as a DVC stage does) that times ``import vllm``, the
``LLM(...)`` construction and one ``generate`` over ``--prompts`` short prompts (temperature 0),
and hashes the outputs. The construction is split into phases from vLLM's own log lines (the
engine-core and worker processes log with wall-clock timestamps): config and tokenizer,
engine-core process spawn, worker start-up, weights, torch.compile warm-up, KV cache.

Modes (``--modes``, comma-separated):

- ``compiled``: vLLM's default on the CPU build (Dynamo + inductor, warm-up compiles);
- ``eager``: ``enforce_eager=True`` (no compilation; what ``model.enforce_eager: auto`` picks
  for small models on the CPU build);
- ``compiled-bf16`` / ``eager-bf16``: the same with ``dtype=bfloat16`` (vLLM's ``auto`` for a
  float32 checkpoint on CPU; the others use float32, evalpipe's default for tiny-random);
- ``eager-inproc``: eager with ``VLLM_ENABLE_V1_MULTIPROCESSING=0`` (engine core and worker in
  the calling process instead of two spawned ones).

Usage (CPU build; a vLLM engine per mode, so under the heavy lock):
    flock /tmp/evalpipe-heavy.lock python perf/engine_start.py [--modes eager,compiled]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

# (phase name, regex of the vLLM log line that ENDS the phase), in order.
PHASES = [
    ("config+tokenizer", r"Initializing a V1 LLM engine"),
    ("engine-core spawn", r"EngineCore.*|.*World size"),
    ("worker start", r"Starting to load model|Loading model"),
    ("weights", r"Loading weights took|Model loading took"),
    ("compile warm-up", r"Warming up done|init engine \(profile"),
    ("kv cache + rest", r"init engine \(profile"),
]
_STAMP = re.compile(r"(\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)?)")


def _child(mode: str, n_prompts: int, max_tokens: int) -> None:
    """Run inside the fresh process: print one JSON line of timings."""
    if "inproc" in mode:
        # engine core and worker in this process: no spawn, no re-import of torch and vllm
        os.environ["VLLM_ENABLE_V1_MULTIPROCESSING"] = "0"
    from evalpipe.inference.tiny import build_tiny_random, default_model_cache

    model_dir, _ = build_tiny_random(default_model_cache(REPO))
    t_import = time.perf_counter()
    from vllm import LLM, SamplingParams

    import_s = time.perf_counter() - t_import
    kwargs = {
        "model": str(model_dir),
        "dtype": "bfloat16" if mode.endswith("-bf16") else "float32",
        "max_model_len": 2048,
        "gpu_memory_utilization": 0.1,
        "enable_prefix_caching": True,
        "seed": 0,
        "enforce_eager": mode.startswith("eager"),
    }
    construct_at = datetime.now().strftime("%m-%d %H:%M:%S.%f")
    t0 = time.perf_counter()
    llm = LLM(**kwargs)
    construct_s = time.perf_counter() - t0
    words = Path(REPO / "src/evalpipe/inference/tiny_corpus.txt").read_text("utf-8").split()
    prompts = [
        " ".join(words[(i * 7) % (len(words) - 40) :][: 8 + i % 24]) for i in range(n_prompts)
    ]
    params = SamplingParams(max_tokens=max_tokens, temperature=0.0, seed=0)
    t1 = time.perf_counter()
    outs = llm.generate(prompts, params, use_tqdm=False)
    gen_s = time.perf_counter() - t1
    tokens = sum(len(o.outputs[0].token_ids) for o in outs)
    digest = hashlib.sha256(
        json.dumps([o.outputs[0].text for o in outs], ensure_ascii=False).encode()
    ).hexdigest()[:16]
    print(
        "RESULT "
        + json.dumps(
            {
                "mode": mode,
                "import_s": import_s,
                "construct_s": construct_s,
                "construct_at": construct_at,
                "generate_s": gen_s,
                "tokens": tokens,
                "outputs_sha": digest,
            }
        ),
        flush=True,
    )


def _phases(log: str, construct_at: str) -> dict[str, float]:
    """Seconds per start-up phase, from the first log line matching each phase's end marker."""

    def parse(stamp: str) -> float:
        fmt = "%m-%d %H:%M:%S.%f" if "." in stamp else "%m-%d %H:%M:%S"
        return datetime.strptime(stamp, fmt).timestamp()

    prev = parse(construct_at)
    out: dict[str, float] = {}
    lines = log.splitlines()
    for name, pattern in PHASES:
        rx = re.compile(pattern)
        for line in lines:
            m = _STAMP.search(line)
            if m and rx.search(line) and parse(m.group(1)) >= prev - 1:
                t = parse(m.group(1))
                out[name] = max(0.0, t - prev)
                prev = max(prev, t)
                break
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--modes", default="compiled,eager")
    ap.add_argument("--prompts", type=int, default=500, help="about the default pipeline's count")
    ap.add_argument("--max-tokens", type=int, default=32)
    ap.add_argument("--log-dir", help="keep each mode's vLLM log here")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        _child(args.child, args.prompts, args.max_tokens)
        return
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO / "src") + os.pathsep + env.get("PYTHONPATH", "")
    rows = []
    for mode in args.modes.split(","):
        t0 = time.perf_counter()
        proc = subprocess.run(
            [
                sys.executable,
                __file__,
                "--child",
                mode,
                "--prompts",
                str(args.prompts),
                "--max-tokens",
                str(args.max_tokens),
            ],
            env=env,
            text=True,
            capture_output=True,
            timeout=900,
        )
        wall = time.perf_counter() - t0
        result = next(
            (json.loads(x[7:]) for x in proc.stdout.splitlines() if x.startswith("RESULT ")), None
        )
        if result is None:
            print(f"{mode}: failed (exit {proc.returncode})\n{proc.stderr[-3000:]}")
            continue
        result["process_wall_s"] = wall
        result["phases"] = _phases(proc.stderr + proc.stdout, result["construct_at"])
        rows.append(result)
        if args.log_dir:
            Path(args.log_dir).mkdir(parents=True, exist_ok=True)
            (Path(args.log_dir) / f"{mode}.log").write_text(proc.stderr, encoding="utf-8")
        print(
            f"{mode:14s} process {wall:6.1f} s | import vllm {result['import_s']:5.1f} s | "
            f"LLM() {result['construct_s']:6.1f} s | generate {args.prompts} prompts "
            f"{result['generate_s']:5.2f} s ({result['tokens']} tokens) | "
            f"outputs {result['outputs_sha']}",
            flush=True,
        )
        for name, secs in result["phases"].items():
            print(f"    {name:20s} {secs:6.1f} s", flush=True)
    print(json.dumps(rows, indent=1, default=str))


if __name__ == "__main__":
    main()
