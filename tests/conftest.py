"""Shared fixtures. End-to-end tests run real `dvc repro` in a temporary Git + DVC copy of the
repository; the stage commands run with this interpreter's environment (the project's venv)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
VENV_BIN = str(Path(sys.executable).parent)

# Only what a fresh clone has: no data outputs, no caches, no venv.
_SKIP_DIRS = {
    ".venv",
    ".git",
    ".cache",
    "__pycache__",
    ".pytest_cache",
    ".ruff_cache",
    ".hypothesis",
    "data",
    "metrics",
    "plots",
    "reports",  # the report stage's output (a DVC output, like data/)
    "dvc_plots",
    "node_modules",
}


def project_env(**extra: str) -> dict[str, str]:
    """Environment in which `python` and `dvc` are the project's own and DVC stays quiet."""
    env = dict(os.environ)
    env["PATH"] = VENV_BIN + os.pathsep + env.get("PATH", "")
    env["DVC_NO_ANALYTICS"] = "1"
    env["DVC_SITE_CACHE_DIR"] = env.get("DVC_SITE_CACHE_DIR", str(REPO / ".cache" / "dvc-site"))
    env.setdefault("EVALPIPE_MODEL_CACHE", str(REPO / ".cache" / "models"))
    env.setdefault("HF_HUB_OFFLINE", "1")
    env.setdefault("HF_DATASETS_OFFLINE", "1")
    env.setdefault("TRANSFORMERS_OFFLINE", "1")
    env.update(extra)
    # This checkout's sources first, whichever checkout the venv's editable install points at
    # (several git worktrees may share one venv).
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(REPO / "src"), env.get("PYTHONPATH", "")) if p
    )
    return env


def copy_project(dest: Path) -> Path:
    """Copy the repository's sources (not its data or caches) into ``dest``."""
    dest.mkdir(parents=True, exist_ok=True)
    for item in REPO.iterdir():
        if item.name in _SKIP_DIRS:
            continue
        if item.name == ".dvc":
            # never a developer's credentials or remote overrides, cache or lock files
            shutil.copytree(
                item,
                dest / item.name,
                ignore=shutil.ignore_patterns("config.local", "cache", "tmp"),
            )
        elif item.is_dir():
            shutil.copytree(
                item, dest / item.name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc")
            )
        else:
            shutil.copy2(item, dest / item.name)
    # data/raw holds inputs (README placeholders), data/samples the bundled sample batches.
    for inputs in ("raw", "samples"):
        if (REPO / "data" / inputs).exists():
            shutil.copytree(
                REPO / "data" / inputs,
                dest / "data" / inputs,
                ignore=shutil.ignore_patterns("*.xlsx", "*.tsv"),
            )
    for name in ("metrics", "plots"):
        (dest / name).mkdir(exist_ok=True)
    return dest


class Project:
    """A temporary Git + DVC repository holding a copy of evalpipe."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.env = project_env()

    def run(
        self,
        *args: str,
        check: bool = True,
        timeout: float = 1800,
        env: dict[str, str] | None = None,
    ) -> subprocess.CompletedProcess[str]:
        proc = subprocess.run(
            list(args),
            cwd=self.root,
            env=env or self.env,
            text=True,
            capture_output=True,
            timeout=timeout,
        )
        if check and proc.returncode != 0:
            raise AssertionError(
                f"{' '.join(args)} exited {proc.returncode}\n--- stdout\n{proc.stdout}\n"
                f"--- stderr\n{proc.stderr}"
            )
        return proc

    def dvc(self, *args: str, check: bool = True, timeout: float = 1800):
        return self.run("dvc", *args, check=check, timeout=timeout)

    def git(self, *args: str, check: bool = True):
        return self.run("git", *args, check=check)

    def commit(self, message: str) -> None:
        self.git("add", "-A")
        self.git("commit", "-q", "-m", message, "--allow-empty")


@pytest.fixture
def project(tmp_path: Path) -> Project:
    """A fresh clone-like copy of the repository, committed once, with DVC initialised."""
    root = copy_project(tmp_path / "repo")
    proj = Project(root)
    proj.git("init", "-q", "-b", "main")
    proj.git("config", "user.email", "test@example.invalid")
    proj.git("config", "user.name", "evalpipe tests")
    if not (root / ".dvc").exists():
        proj.dvc("init", "-q")
    proj.dvc("config", "core.analytics", "false")
    proj.commit("initial")
    return proj
