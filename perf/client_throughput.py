"""The OpenAI-compatible client side by side with lm-evaluation-harness, whole process.

One run starts one instant local OpenAI-compatible server (``perf/instant_server.py``: a raw
asyncio HTTP/1.1 server on uvloop, ``--server-workers`` processes on one port) and sends the same
``--prompts`` chat prompts through

- evalpipe: ``make_engine`` with ``backend: openai`` and a fresh generation cache, as the
  generate stage runs it (cache lookups, chunks of ``checkpoint_every``, cache checkpoints);
- lm-evaluation-harness: its ``local-chat-completions`` model (``generate_until`` on chat
  instances, as ``--apply_chat_template`` builds them), driven directly, so its task loading is
  not counted against it,

each in a fresh process (imports included), at each ``--concurrency``, alternating which side
goes first. Every answer is checked against the server's (``echo <sha256(prompt)[:8]>``). It
prints one row per concurrency: seconds and prompts/s per side (median of ``--repeats``), the
ratio evalpipe / lm-eval, and the CPU seconds the client and the server used, so a reader can
see which side of the socket was busy (on a shared machine the wall times follow the other
processes' load; the client CPU seconds do not). The repeats are rounds over every concurrency
and side, so a change in load falls on all of them alike.

lm-eval is installed in its own venv (``python -m venv /path/lmeval && /path/lmeval/bin/pip
install lm-eval==0.4.13``) and named with ``--lm-eval-python`` (or ``$LM_EVAL_PYTHON``); without
it only evalpipe's side runs, and the script says so.

    python perf/client_throughput.py [--prompts 17944] [--concurrency 16 64 256] \\
        [--lm-eval-python /path/lmeval/bin/python] [--repeats 1] [--server-workers 1]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import resource
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
MODEL = "instant"
MAX_TOKENS = 16
WORDS = (
    "the",
    "of",
    "and",
    "to",
    "in",
    "is",
    "was",
    "for",
    "that",
    "with",
    "as",
    "on",
    "by",
    "at",
    "from",
    "which",
    "question",
    "answer",
    "model",
    "typo",
    "robustness",
    "evaluation",
    "benchmark",
    "sentence",
    "paragraph",
    "choice",
    "correct",
    "option",
)


def make_prompts(n: int, seed: int = 0) -> list[str]:
    """``n`` distinct prompts of 20-200 words (benchmark-sized), the same for a seed."""
    rng = random.Random(seed)
    return [
        f"Question {i}: " + " ".join(rng.choices(WORDS, k=rng.randint(20, 200))) + "\nAnswer:"
        for i in range(n)
    ]


def expected(prompt: str) -> str:
    return "echo " + hashlib.sha256(prompt.encode()).hexdigest()[:8]


def run_evalpipe(
    prompts: list[str], url: str, concurrency: int, work: Path
) -> tuple[list[str], float]:
    from evalpipe.inference.engine import make_engine
    from evalpipe.inference.types import GenerationRequest

    cfg = {
        "name": MODEL,
        "backend": "openai",
        "base_urls": [url],
        "api_key_env": None,
        "max_concurrency": concurrency,
    }
    t0 = time.perf_counter()
    engine = make_engine(cfg, cache_dir=work / "cache")
    requests = [GenerationRequest(p, max_tokens=MAX_TOKENS, temperature=0.0) for p in prompts]
    out = engine.generate(requests, progress=False)
    engine.close()
    return [g.output for g in out], time.perf_counter() - t0


def run_lm_eval(
    prompts: list[str], url: str, concurrency: int, work: Path
) -> tuple[list[str], float]:
    from lm_eval.api.instance import Instance
    from lm_eval.api.registry import get_model
    from lm_eval.models.api_models import JsonChatStr

    t0 = time.perf_counter()
    lm = get_model("local-chat-completions")(
        model=MODEL,
        base_url=url + "/chat/completions",
        num_concurrent=concurrency,
        max_retries=3,
        tokenized_requests=False,
    )
    gen_kwargs = {"until": [], "max_gen_toks": MAX_TOKENS, "temperature": 0.0, "do_sample": False}
    instances = [
        Instance(
            request_type="generate_until",
            doc={},
            arguments=(
                JsonChatStr(json.dumps([{"role": "user", "content": p}], ensure_ascii=False)),
                dict(gen_kwargs),
            ),
            idx=i,
        )
        for i, p in enumerate(prompts)
    ]
    return list(lm.generate_until(instances, disable_tqdm=True)), time.perf_counter() - t0


def child(args: argparse.Namespace) -> None:
    """One side's whole run in this process; prints a JSON line with its checks."""
    prompts = json.loads(Path(args.prompts_file).read_text("utf-8"))
    work = Path(args.work)
    run = run_evalpipe if args.side == "evalpipe" else run_lm_eval
    outputs, seconds = run(prompts, args.url, args.concurrency[0], work)
    wrong = sum(o != expected(p) for p, o in zip(prompts, outputs, strict=True))
    print(json.dumps({"n": len(outputs), "wrong": wrong, "requests_s": seconds}), flush=True)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _tree_cpu(pid: int) -> float:
    """CPU seconds of a process and its children (the server's workers), from /proc."""
    total = 0.0
    tick = os.sysconf("SC_CLK_TCK")
    pids = [pid]
    children = Path(f"/proc/{pid}/task/{pid}/children")
    if children.exists():
        pids += [int(p) for p in children.read_text().split()]
    for p in pids:
        try:
            fields = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()
        except FileNotFoundError:
            continue
        total += (int(fields[11]) + int(fields[12])) / tick
    return total


class Server:
    def __init__(self, workers: int) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/v1"
        self.proc = subprocess.Popen(
            [sys.executable, str(HERE / "instant_server.py"), "--port", str(self.port),
             "--workers", str(workers), "--model", MODEL],
        )  # fmt: skip
        deadline = time.time() + 60
        while time.time() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                    time.sleep(0.5 if workers > 1 else 0)  # the other workers' listen()
                    return
            except OSError:
                time.sleep(0.05)
        self.stop()
        raise RuntimeError("instant server did not start")

    def cpu(self) -> float:
        return _tree_cpu(self.proc.pid)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def measure(side: str, python: str, server: Server, concurrency: int, prompts_file: Path,
            n: int, scratch: Path) -> dict:  # fmt: skip
    work = Path(tempfile.mkdtemp(dir=scratch))
    env = dict(os.environ)
    if side == "evalpipe":
        env["PYTHONPATH"] = os.pathsep.join([str(REPO / "src"), env.get("PYTHONPATH", "")])
    cmd = [python, str(Path(__file__).resolve()), "--child", "--side", side, "--url", server.url,
           "--concurrency", str(concurrency), "--prompts-file", str(prompts_file),
           "--work", str(work)]  # fmt: skip
    before_cpu = resource.getrusage(resource.RUSAGE_CHILDREN)
    server_before = server.cpu()
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - t0
    server_cpu = server.cpu() - server_before
    after_cpu = resource.getrusage(resource.RUSAGE_CHILDREN)
    shutil.rmtree(work, ignore_errors=True)
    if proc.returncode != 0:
        raise SystemExit(f"{side} at concurrency {concurrency} failed:\n{proc.stderr[-3000:]}")
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    if result["n"] != n or result["wrong"]:
        raise SystemExit(f"{side} at concurrency {concurrency}: wrong answers {result}")
    client_cpu = (after_cpu.ru_utime - before_cpu.ru_utime) + (
        after_cpu.ru_stime - before_cpu.ru_stime
    )
    return {"wall": wall, "requests_s": result["requests_s"], "client_cpu": client_cpu,
            "server_cpu": server_cpu}  # fmt: skip


def lm_eval_python(option: str | None) -> str | None:
    """The lm-eval venv's python, or None with a message saying why that side is skipped."""
    path = option or os.environ.get("LM_EVAL_PYTHON")
    if not path:
        print("lm-eval side skipped: no --lm-eval-python (or $LM_EVAL_PYTHON) given")
        return None
    check = subprocess.run([path, "-c", "import lm_eval, sys; print(lm_eval.__version__)"],
                           capture_output=True, text=True, check=False)  # fmt: skip
    if check.returncode != 0:
        print(f"lm-eval side skipped: {path} cannot import lm_eval ({check.stderr.strip()[-200:]})")
        return None
    print(f"lm-eval {check.stdout.strip()} from {path}")
    return path


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--prompts", type=int, default=17944)
    parser.add_argument("--concurrency", type=int, nargs="+", default=[16, 64, 256])
    parser.add_argument("--lm-eval-python", default=None)
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--server-workers", type=int, default=1)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--side", choices=("evalpipe", "lm-eval"), help=argparse.SUPPRESS)
    parser.add_argument("--url", help=argparse.SUPPRESS)
    parser.add_argument("--prompts-file", help=argparse.SUPPRESS)
    parser.add_argument("--work", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args)
        return
    lm_python = lm_eval_python(args.lm_eval_python)
    sides = [("evalpipe", sys.executable)] + ([("lm-eval", lm_python)] if lm_python else [])
    print(f"{args.prompts} prompts, instant server with {args.server_workers} worker(s), "
          f"{os.cpu_count()} cores, median of {args.repeats}")  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="client-throughput-") as tmp:
        scratch = Path(tmp)
        prompts_file = scratch / "prompts.json"
        prompts_file.write_text(json.dumps(make_prompts(args.prompts)), "utf-8")
        server = Server(args.server_workers)
        names = [name for name, _ in sides]
        runs: dict[tuple[int, str], list[dict]] = {}
        step = 0
        try:
            # rounds over every concurrency and side, the order turning each time, so a change
            # in the machine's load falls on all of them alike
            for repeat in range(args.repeats):
                for concurrency in args.concurrency:
                    order = sides if step % 2 == 0 else sides[::-1]
                    step += 1
                    for name, python in order:
                        found = measure(name, python, server, concurrency, prompts_file,
                                        args.prompts, scratch)  # fmt: skip
                        runs.setdefault((concurrency, name), []).append(found)
                        _print_run(repeat, concurrency, name, found, args.prompts)
        finally:
            server.stop()
    rows = []
    for concurrency in args.concurrency:
        row: dict = {"concurrency": concurrency}
        for name in names:
            found = runs[(concurrency, name)]
            row[name] = {k: statistics.median(r[k] for r in found) for k in found[0]}
        rows.append(row)
    _print_table(rows, args.prompts, [name for name, _ in sides])


def _print_run(repeat: int, concurrency: int, name: str, r: dict, n: int) -> None:
    print(f"round {repeat + 1}, concurrency {concurrency}, {name}: {r['wall']:.1f} s "
          f"({n / r['wall']:.0f}/s; after imports {r['requests_s']:.1f} s, client CPU "
          f"{r['client_cpu']:.1f} s, server CPU {r['server_cpu']:.1f} s)", flush=True)  # fmt: skip


def _print_table(rows: list[dict], n: int, names: list[str]) -> None:
    head = "| concurrency | " + " | ".join(
        f"{name}: wall s (prompts/s, client CPU s)" for name in names
    )
    if "lm-eval" in names:
        head += " | evalpipe / lm-eval"
    print()
    print(head + " |")
    print("|" + "---|" * (len(names) + 1 + ("lm-eval" in names)))
    for row in rows:
        cells = [
            f"{row[name]['wall']:.1f} ({n / row[name]['wall']:.0f}/s, CPU {row[name]['client_cpu']:.1f})"
            for name in names
        ]
        if "lm-eval" in names:
            cells.append(f"{row['lm-eval']['wall'] / row['evalpipe']['wall']:.2f}x")
        print(f"| {row['concurrency']} | " + " | ".join(cells) + " |")
    walls = [row["evalpipe"]["wall"] for row in rows]
    if len(walls) > 1:
        print(f"\nevalpipe at {rows[-1]['concurrency']} vs {rows[0]['concurrency']}: "
              f"{walls[0] / walls[-1]:.2f}x the throughput")  # fmt: skip


if __name__ == "__main__":
    main()
