"""How long sharing data through a DVC remote takes: push, then a fresh clone's pull.

    python perf/remote_transfer.py [--files 200] [--kib 256]

Builds a throwaway Git + DVC repository holding a directory of FILES random Parquet-sized blobs of
KIB KiB each (the shape of data/cache/generations and data/outputs), pushes it and pulls it into
a fresh clone, once through the default local-directory remote and once through an S3-compatible
moto server on 127.0.0.1 (`verify = true` on both, as in .dvc/config). Prints seconds and MiB/s.
"""

from __future__ import annotations

import argparse
import logging
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

VENV_BIN = str(Path(sys.executable).parent)


def _run(cwd: Path, *args: str, env: dict[str, str] | None = None) -> float:
    start = time.perf_counter()
    subprocess.run(args, cwd=cwd, check=True, capture_output=True, text=True, env=env)
    return time.perf_counter() - start


def _env(site: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["PATH"] = VENV_BIN + os.pathsep + env.get("PATH", "")
    env["DVC_NO_ANALYTICS"] = "1"
    env["DVC_SITE_CACHE_DIR"] = str(site)
    return env


def _make_repo(root: Path, n_files: int, kib: int, env: dict[str, str]) -> None:
    root.mkdir(parents=True)
    for args in (
        ("git", "init", "-q", "-b", "main"),
        ("git", "config", "user.email", "bench@example.invalid"),
        ("git", "config", "user.name", "bench"),
        ("dvc", "init", "-q"),
    ):
        _run(root, *args, env=env)
    data = root / "data" / "cache" / "generations"
    data.mkdir(parents=True)
    rng = __import__("random").Random(0)
    for i in range(n_files):
        (data / f"{i:05d}.parquet").write_bytes(rng.randbytes(kib * 1024))
    _run(root, "dvc", "add", "-q", "data/cache/generations", env=env)


def _commit(root: Path, env: dict[str, str]) -> None:
    _run(root, "git", "add", "-A", env=env)
    _run(root, "git", "commit", "-q", "-m", "bench", env=env)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def bench(kind: str, n_files: int, kib: int) -> tuple[float, float]:
    """Seconds for `dvc push` and for a fresh clone's `dvc pull` through one remote kind."""
    tmp = Path(tempfile.mkdtemp(prefix="evalpipe-remote-bench-"))
    env = _env(tmp / "site")
    server = None
    try:
        repo = tmp / "repo"
        _make_repo(repo, n_files, kib, env)
        creds: list[tuple[str, str]] = []
        if kind == "local":
            _run(repo, "dvc", "remote", "add", "-d", "local", "../evalpipe-remote", env=env)
            _run(repo, "dvc", "remote", "modify", "local", "verify", "true", env=env)
        else:
            import boto3
            from moto.server import ThreadedMotoServer

            logging.getLogger("werkzeug").setLevel(logging.ERROR)  # one log line per request
            port = _free_port()
            server = ThreadedMotoServer(ip_address="127.0.0.1", port=port)
            server.start()
            url = f"http://127.0.0.1:{port}"
            boto3.client(
                "s3",
                endpoint_url=url,
                region_name="us-east-1",
                aws_access_key_id="k",
                aws_secret_access_key="s",
            ).create_bucket(Bucket="bench")
            for args in (
                ("remote", "add", "-d", "s3", "s3://bench/store"),
                ("remote", "modify", "s3", "endpointurl", url),
                ("remote", "modify", "s3", "region", "us-east-1"),
                ("remote", "modify", "s3", "verify", "true"),
            ):
                _run(repo, "dvc", *args, env=env)
            creds = [("access_key_id", "k"), ("secret_access_key", "s")]
        for key, value in creds:
            _run(repo, "dvc", "remote", "modify", "--local", kind, key, value, env=env)
        _commit(repo, env)
        push = _run(repo, "dvc", "push", env=env)
        clone = tmp / "clone"
        _run(tmp, "git", "clone", "-q", str(repo), str(clone), env=env)
        for key, value in creds:
            _run(clone, "dvc", "remote", "modify", "--local", kind, key, value, env=env)
        pull = _run(clone, "dvc", "pull", env=env)
        return push, pull
    finally:
        if server is not None:
            server.stop()
        shutil.rmtree(tmp, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=200)
    parser.add_argument("--kib", type=int, default=256)
    args = parser.parse_args()
    mib = args.files * args.kib / 1024
    print(f"remote transfer: {args.files} files x {args.kib} KiB = {mib:.1f} MiB")
    for kind in ("local", "s3"):
        push, pull = bench(kind, args.files, args.kib)
        print(
            f"  {kind:5s}  push {push:6.2f} s ({mib / push:6.1f} MiB/s)   "
            f"fresh-clone pull {pull:6.2f} s ({mib / pull:6.1f} MiB/s)"
        )


if __name__ == "__main__":
    main()
