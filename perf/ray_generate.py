"""The default study's generate stage on one engine and on two Ray replicas, side by side.

Copies the repository (committed files plus the working tree's changes) into a scratch
directory, runs ``dvc repro perturb`` there (words, benchmarks, perturbed sets), then runs
``python -m stages.generate`` for each model of params.yaml twice from empty generation caches:

1. one engine in the stage's process (``data_parallel_size: 1``, the default);
2. ``data_parallel_size: 2``: two vLLM replicas on a local Ray cluster (``RAY_ADDRESS`` unset).

Both runs use ``checkpoint_every`` 128 (``--checkpoint-every``): chunks are what the replicas
share, and the default 1024 is more than the default study's misses (one chunk, one replica).

It prints each run's wall time and whether every output file (``data/outputs/<model>/``) and
every generation-cache segment (``data/cache/generations/<model>/``) is byte-identical between
the two. On a 2-core machine two CPU replicas share the same two cores as one engine, so the
figure to expect there is identity, not speed.

Usage (starts three vLLM engines, so under the heavy lock; 5 to 15 minutes on 2 cores):
    flock /tmp/evalpipe-heavy.lock python perf/ray_generate.py [--workdir /tmp/evalpipe-ray]
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml
from repo_copy import copy_repo

REPO = Path(__file__).resolve().parents[1]


def digests(folder: Path) -> dict[str, str]:
    """SHA-256 of every file under ``folder``, by path relative to it."""
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def run(work: Path, env: dict[str, str], *args: str) -> float:
    t0 = time.perf_counter()
    subprocess.run(args, cwd=work, env=env, check=True)
    return time.perf_counter() - t0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workdir", type=Path, default=None)
    parser.add_argument("--replicas", type=int, default=2)
    parser.add_argument(
        "--reuse", action="store_true", help="keep --workdir's perturbed sets (skip dvc repro)"
    )
    # Chunks are what the replicas share: the default study's ~975 misses are one chunk of the
    # default 1024, which one replica would run alone. Both runs use the same value.
    parser.add_argument("--checkpoint-every", type=int, default=128)
    args = parser.parse_args()
    work = args.workdir or Path(tempfile.mkdtemp(prefix="evalpipe-ray-"))
    if args.reuse and (work / "data" / "perturbed").is_dir():
        # an earlier run's copy: its perturbed sets, this checkout's code
        for folder in ("src", "stages"):
            shutil.rmtree(work / folder)
            shutil.copytree(REPO / folder, work / folder)
    else:
        if work.exists():
            shutil.rmtree(work)
        copy_repo(REPO, work)
    env = dict(os.environ)
    env["PYTHONPATH"] = str(work / "src")
    env.setdefault("DVC_NO_ANALYTICS", "1")
    env.setdefault("EVALPIPE_MODEL_CACHE", str(REPO / ".cache" / "models"))
    env.pop("RAY_ADDRESS", None)  # a local cluster of this node's CPUs
    python = sys.executable
    print(f"scratch copy: {work}", flush=True)
    if not args.reuse:
        prepare = run(work, env, "dvc", "repro", "--quiet", "perturb")
        print(f"dvc repro perturb: {prepare:.1f} s", flush=True)

    params = yaml.safe_load((work / "params.yaml").read_text("utf-8"))
    models = list(params["models"])
    for label, replicas in (("single", 1), ("replicas", args.replicas)):
        edited = yaml.safe_load((work / "params.yaml").read_text("utf-8"))
        for slug in models:
            edited["models"][slug]["data_parallel_size"] = replicas
            if args.checkpoint_every:
                edited["models"][slug]["checkpoint_every"] = args.checkpoint_every
        (work / f"params.{label}.yaml").write_text(yaml.safe_dump(edited), "utf-8")

    results = {}
    for label, params_file in (
        ("one engine", "params.single.yaml"),
        ("ray", "params.replicas.yaml"),
    ):
        shutil.rmtree(work / "data" / "outputs", ignore_errors=True)
        shutil.rmtree(work / "data" / "cache" / "generations", ignore_errors=True)
        seconds = 0.0
        for slug in models:
            seconds += run(
                work,
                env,
                python,
                "-m",
                "stages.generate",
                "--model",
                slug,
                "--no-progress",
                "--params",
                params_file,
            )
        results[label] = {
            "seconds": seconds,
            "outputs": digests(work / "data" / "outputs"),
            "cache": digests(work / "data" / "cache" / "generations"),
        }
        print(f"{label}: generate {seconds:.1f} s", flush=True)

    one, ray = results["one engine"], results["ray"]
    print()
    print("| run | generate wall (s) | output files | cache segments |")
    print("|---|---|---|---|")
    for label, r in results.items():
        print(f"| {label} | {r['seconds']:.1f} | {len(r['outputs'])} | {len(r['cache'])} |")
    same_outputs = one["outputs"] == ray["outputs"]
    same_cache = one["cache"] == ray["cache"]
    print(f"\noutputs byte-identical: {same_outputs}; cache byte-identical: {same_cache}")
    for name in sorted(set(one["outputs"]) | set(ray["outputs"])):
        if one["outputs"].get(name) != ray["outputs"].get(name):
            print(f"  differs: data/outputs/{name}")
    sys.exit(0 if same_outputs and same_cache else 1)


if __name__ == "__main__":
    main()
