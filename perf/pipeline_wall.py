"""Where the wall time of a default ``dvc repro`` from scratch goes: per stage and per engine start.

Copies the repository (committed files plus the working tree's changes) into a scratch
directory, empties the generation caches and DVC's cache, runs ``dvc repro`` there and prints:

1. per stage: the stage's total (from DVC's "Running stage" to the next), the Python process
   (start to exit), its imports (start to the Click command), and DVC's own share (hashing,
   caching outputs, writing dvc.lock: total minus the process);
2. per group (words x2, benchmarks x11, perturb x11, ...) and the whole run;
3. for generate and judge, the engine start: ``import vllm``, ``LLM()`` split by vLLM's log
   lines (config + worker init, weights, KV cache + profile run, tokenizer/renderer), and the
   generation itself;
4. whether the outputs are unchanged: ``git status`` of the tracked outputs (dvc.lock, metrics,
   plots) in the copy, and ``--compare FILE`` checks the SHA-256 of every data output against a
   file that an earlier run wrote with ``--save-hashes FILE``.

Each Python process is timed by a ``sitecustomize`` module put first on PYTHONPATH (process
start, first Click command invocation, first ``import vllm``, exit); log lines are stamped as
they arrive. ``--parse DIR`` re-reads a kept scratch directory without running again.

Usage (starts two vLLM engines, so under the heavy lock; 2 to 4 minutes on 2 cores):
    flock /tmp/evalpipe-heavy.lock python perf/pipeline_wall.py \
        [--workdir /tmp/evalpipe-wall] [--save-hashes before.sha] [--compare before.sha]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from repo_copy import copy_repo

REPO = Path(__file__).resolve().parents[1]

# Installed as sitecustomize.py in a directory first on the stages' PYTHONPATH. Python imports
# it at start-up; it appends one JSON line per process to $EVALPIPE_WALL_TRACE at exit.
TRACER = r"""
import atexit, json, os, sys, time

_T0 = time.time()
_EVENTS = {"start": _T0}
_PATH = os.environ.get("EVALPIPE_WALL_TRACE")


def _audit(event, args):
    # "import" fires as each import begins: the first vllm import starts the engine's import
    if event == "import" and "vllm_import" not in _EVENTS and args[0] == "vllm":
        _EVENTS["vllm_import"] = time.time()
    elif event == "import" and "command" not in _EVENTS and args[0] == "click.core":
        _watch_click()


def _watch_click():
    _EVENTS["command"] = None  # patch once, when click.core is first imported

    def later():
        core = sys.modules.get("click.core")
        command = getattr(core, "Command", None)
        if command is None:  # click.core still loading
            return False
        original = command.invoke

        def invoke(self, ctx):
            if _EVENTS.get("command") is None:
                _EVENTS["command"] = time.time()
            return original(self, ctx)

        command.invoke = invoke
        return True

    _PENDING.append(later)


_PENDING = []


def _poll(event, args):
    if _PENDING and event == "import":
        for fn in list(_PENDING):
            try:
                done = fn()
            except Exception:  # the tracer must never break a stage
                done = True
            if done:
                _PENDING.remove(fn)


def _done():
    if _PENDING:
        _poll("import", ("",))
    if not _PATH:
        return
    _EVENTS["end"] = time.time()
    with open(_PATH, "a", encoding="utf-8") as fh:
        fh.write(json.dumps({"argv": sys.argv, "pid": os.getpid(), **_EVENTS}) + "\n")


if _PATH:
    sys.addaudithook(_audit)
    sys.addaudithook(_poll)
    atexit.register(_done)
"""

RUNNING = re.compile(r"Running stage '([^']+)'")
# (phase, regex of the log line that ends it), in order, within the generate/judge stage
ENGINE_PHASES = [
    ("config + worker init", re.compile(r"Starting to load model")),
    ("weights", re.compile(r"Loading weights took|Model loading took")),
    ("KV cache + profile run", re.compile(r"init engine \(profile")),
    ("tokenizer + renderer", re.compile(r"Detected the chat template|generate:\s+0%")),
]
ENGINE_START = re.compile(r"starting vLLM engine for")
GEN_DONE = re.compile(r"generate: 100%")


def run_repro(work: Path) -> None:
    """``dvc repro`` in ``work`` with the tracer on, every output line stamped on arrival."""
    tracer = work / ".wall"
    tracer.mkdir(exist_ok=True)
    (tracer / "sitecustomize.py").write_text(TRACER, encoding="utf-8")
    for name in ("trace.jsonl", "repro.log"):
        (tracer / name).unlink(missing_ok=True)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(tracer), str(work / "src")])
    env["EVALPIPE_WALL_TRACE"] = str(tracer / "trace.jsonl")
    env.setdefault("DVC_NO_ANALYTICS", "1")
    env.setdefault("EVALPIPE_MODEL_CACHE", str(REPO / ".cache" / "models"))
    env.pop("OMP_NUM_THREADS", None)  # measure the pipeline's own thread choice
    with (tracer / "repro.log").open("w", encoding="utf-8") as log:
        log.write(f"{time.time():.3f} START\n")
        proc = subprocess.Popen(
            ["dvc", "repro"],
            cwd=work,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            errors="replace",
        )
        assert proc.stdout is not None
        for line in proc.stdout:
            log.write(f"{time.time():.3f} {line}")
        code = proc.wait()
        log.write(f"{time.time():.3f} END {code}\n")
    if code:
        sys.exit(f"dvc repro failed ({code}); log: {tracer / 'repro.log'}")


def read_log(work: Path) -> list[tuple[float, str]]:
    rows = []
    for line in (work / ".wall" / "repro.log").read_text("utf-8").splitlines():
        stamp, _, text = line.partition(" ")
        try:
            rows.append((float(stamp), text))
        except ValueError:  # a line that itself held a newline: part of the previous one
            continue
    return rows


def read_trace(work: Path) -> list[dict]:
    path = work / ".wall" / "trace.jsonl"
    return [json.loads(x) for x in path.read_text("utf-8").splitlines() if x.strip()]


def stage_of(argv: list[str]) -> str | None:
    """``stages.perturb --name jnli`` -> ``perturb@jnli``, matching DVC's foreach names."""
    text = " ".join(argv)
    m = re.search(r"stages[./](\w+)", text)
    if not m:
        return None
    for flag in ("--name", "--language"):
        if flag in argv:
            return f"{m[1]}@{argv[argv.index(flag) + 1]}"
    return m[1]


def analyse(work: Path) -> dict:
    """Per-stage rows and the engine breakdown from the log and the trace."""
    log = read_log(work)
    t_start, t_end = log[0][0], log[-1][0]
    marks = [(t, m[1]) for t, text in log if (m := RUNNING.search(text))]
    procs = {}
    for rec in read_trace(work):
        name = stage_of(rec["argv"])
        if name:
            procs[name] = rec
    stages = []
    for i, (t, name) in enumerate(marks):
        t_next = marks[i + 1][0] if i + 1 < len(marks) else t_end
        rec = procs.get(name, {})
        row = {"stage": name, "total": t_next - t, "begin": t, "next": t_next}
        if rec:
            command = rec.get("command") or rec["end"]
            row.update(
                process=rec["end"] - rec["start"],
                imports=command - rec["start"],
                work=rec["end"] - command,
                dvc=(t_next - t) - (rec["end"] - rec["start"]),
            )
            if rec.get("vllm_import"):
                row["engine"] = engine_breakdown(log, rec, t_next)
        stages.append(row)
    return {"total": t_end - t_start, "before_first": marks[0][0] - t_start, "stages": stages}


def engine_breakdown(log: list[tuple[float, str]], rec: dict, t_next: float) -> dict:
    """Phases of one generate/judge process from its vLLM log lines (absolute times)."""
    lines = [(t, text) for t, text in log if rec["start"] - 0.5 <= t <= t_next]
    t_engine = next((t for t, x in lines if ENGINE_START.search(x)), None)
    out = {
        "stage code before import vllm": rec["vllm_import"] - (rec.get("command") or rec["start"]),
    }
    if t_engine is None:
        return out
    out["import vllm"] = t_engine - rec["vllm_import"]
    prev = t_engine
    for phase, pattern in ENGINE_PHASES:
        t = next((t for t, x in lines if t >= prev and pattern.search(x)), None)
        if t is None:
            continue
        out[f"LLM(): {phase}"] = t - prev
        prev = t
    done = [t for t, x in lines if GEN_DONE.search(x)]
    t_gen = done[-1] if done else rec["end"]
    out["generation (all engine calls)"] = t_gen - prev
    out["after generation: outputs + exit"] = rec["end"] - t_gen
    return out


def group(name: str) -> str:
    return name.split("@")[0]


def output_hashes(work: Path) -> dict[str, str]:
    """SHA-256 of every pipeline output (data outside raw/ and the caches, metrics, plots,
    reports) and of the outputs recorded in dvc.lock."""
    hashes = {}
    for top in ("data", "metrics", "plots", "reports"):
        for path in sorted((work / top).rglob("*")):
            rel = path.relative_to(work).as_posix()
            if not path.is_file() or rel.startswith(("data/raw/", "data/cache/")):
                continue
            if path.name == ".gitignore":
                continue
            hashes[rel] = hashlib.sha256(path.read_bytes()).hexdigest()
    # dvc.lock's outputs only: its dependency hashes change with any source edit, even one that
    # leaves every output as it was (the point of a speed-up)
    import yaml

    lock = yaml.safe_load((work / "dvc.lock").read_text("utf-8"))
    outs = {name: stage.get("outs", []) for name, stage in lock["stages"].items()}
    hashes["dvc.lock (outs)"] = hashlib.sha256(
        json.dumps(outs, sort_keys=True).encode()
    ).hexdigest()
    return hashes


def report(work: Path, result: dict, compare: Path | None) -> None:
    print(f"whole dvc repro: {result['total']:.1f} s (DVC start-up {result['before_first']:.1f} s)")
    print()
    print(f"{'stage':28s} {'total':>7s} {'process':>8s} {'imports':>8s} {'work':>7s} {'dvc':>6s}")
    groups: dict[str, list[dict]] = {}
    for row in result["stages"]:
        groups.setdefault(group(row["stage"]), []).append(row)
        print(
            f"{row['stage']:28s} {row['total']:7.1f} {row.get('process', float('nan')):8.1f} "
            f"{row.get('imports', float('nan')):8.1f} {row.get('work', float('nan')):7.1f} "
            f"{row.get('dvc', float('nan')):6.1f}"
        )
    print()
    print(f"{'group':20s} {'n':>3s} {'total':>7s} {'process':>8s} {'imports':>8s} {'dvc':>6s}")
    for name, rows in groups.items():

        def tot(key: str, rows: list[dict] = rows) -> float:
            return sum(r.get(key, 0.0) for r in rows)

        print(
            f"{name:20s} {len(rows):3d} {tot('total'):7.1f} {tot('process'):8.1f} "
            f"{tot('imports'):8.1f} {tot('dvc'):6.1f}"
        )
    for row in result["stages"]:
        if "engine" in row:
            print()
            print(f"{row['stage']}: process {row['process']:.1f} s, of which")
            print(f"  {'imports before the command':34s} {row['imports']:6.1f}")
            for phase, seconds in row["engine"].items():
                print(f"  {phase:34s} {seconds:6.1f}")
    status = subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=no"],
        cwd=work,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    print()
    print("git status of tracked outputs:", "clean" if not status else "\n" + status)
    if compare is not None:
        before = json.loads(compare.read_text("utf-8"))
        now = output_hashes(work)
        differ = sorted(k for k in before.keys() | now.keys() if before.get(k) != now.get(k))
        print(
            f"outputs vs {compare}: "
            + ("all identical" if not differ else f"{len(differ)} differ: {', '.join(differ)}")
            + f" ({len(now)} files)"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repo", type=Path, default=REPO, help="the checkout to measure")
    parser.add_argument("--workdir", type=Path, help="scratch copy (default: a temp dir)")
    parser.add_argument("--parse", type=Path, help="only parse a kept scratch copy")
    parser.add_argument("--keep", action="store_true", help="keep the scratch copy")
    parser.add_argument("--save-hashes", type=Path, help="write the outputs' SHA-256 here")
    parser.add_argument("--compare", type=Path, help="compare the outputs with --save-hashes")
    parser.add_argument("--json", type=Path, help="also write the figures as JSON here")
    args = parser.parse_args()

    if args.parse:
        work = args.parse
    else:
        work = args.workdir or Path(tempfile.mkdtemp(prefix="evalpipe-wall-"))
        if work.exists():
            shutil.rmtree(work)
        copy_repo(args.repo.resolve(), work)
        run_repro(work)
    result = analyse(work)
    report(work, result, args.compare)
    if args.save_hashes:
        args.save_hashes.write_text(json.dumps(output_hashes(work), indent=1), encoding="utf-8")
    if args.json:
        args.json.write_text(json.dumps(result, indent=1), encoding="utf-8")
    if not (args.parse or args.keep or args.workdir):
        shutil.rmtree(work)


if __name__ == "__main__":
    main()
