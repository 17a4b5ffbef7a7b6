"""Shared fixtures. End-to-end tests run real `dvc repro` in a temporary Git + DVC copy of the
repository; the stage commands run with this interpreter's environment (the project's venv).

Built once per test run (per pytest-xdist worker): the committed Git + DVC copy that every
``project`` starts from, and tiny-random in the shared model cache (one build for all workers).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
# The params the tests are written against: the shipped params.yaml as it was released. Tests
# never read the repository's own params.yaml (a user's project edits it: other models, other
# suites) and every project copy gets this one.
TEST_PARAMS = Path(__file__).resolve().parent / "fixtures" / "params.yaml"
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
    shutil.copy2(TEST_PARAMS, dest / "params.yaml")
    # the repository's dvc.lock records its own params' runs, not these
    (dest / "dvc.lock").unlink(missing_ok=True)
    # data/params.yaml (every stage's DVC params) as the params stage writes it from these
    # params, so a test may run one stage alone (`dvc repro --single-item`)
    subprocess.run(
        [sys.executable, "-m", "stages.params"],
        cwd=dest,
        env=project_env(),
        check=True,
        capture_output=True,
    )
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


@pytest.fixture(scope="session")
def tiny_model() -> Path:
    """tiny-random in the model cache the stages read (``EVALPIPE_MODEL_CACHE``), built once:
    parallel workers wait on a file lock instead of each building their own copy."""
    from filelock import FileLock

    from evalpipe.inference.tiny import build_tiny_random

    cache = Path(project_env()["EVALPIPE_MODEL_CACHE"])
    cache.mkdir(parents=True, exist_ok=True)
    with FileLock(str(cache / ".tiny-random.lock")):
        model_dir, _ = build_tiny_random(cache)
    return model_dir


@pytest.fixture(scope="session")
def project_template(tmp_path_factory: pytest.TempPathFactory, tiny_model: Path) -> Path:
    """The clone-like copy, committed once with DVC initialised; each test gets a copy of it.

    Under pytest-xdist the workers share one: the first builds it in the run's common temporary
    folder (new for every run) while the others wait on the lock, then only read it.
    """
    from filelock import FileLock

    if os.environ.get("PYTEST_XDIST_WORKER") is None:
        return _build_template(tmp_path_factory.mktemp("template") / "repo")
    shared = tmp_path_factory.getbasetemp().parent
    done = shared / "project-template"
    with FileLock(str(shared / "project-template.lock")):
        if not done.is_dir():
            # built aside and renamed, so a failed build never leaves a half template behind
            building = tmp_path_factory.mktemp("template")
            _build_template(building / "repo")
            building.rename(done)
    return done / "repo"


def _build_template(root: Path) -> Path:
    copy_project(root)
    proj = Project(root)
    proj.git("init", "-q", "-b", "main")
    proj.git("config", "user.email", "test@example.invalid")
    proj.git("config", "user.name", "evalpipe tests")
    if not (root / ".dvc").exists():
        proj.dvc("init", "-q")
    proj.dvc("config", "core.analytics", "false")
    proj.commit("initial")
    return root


@pytest.fixture
def project(project_template: Path, tmp_path: Path) -> Project:
    """A fresh clone-like copy of the repository, committed once, with DVC initialised."""
    root = tmp_path / "repo"
    # .dvc/tmp holds the template's own locks and state: never shared between copies
    shutil.copytree(project_template, root, symlinks=True, ignore=_skip_dvc_tmp)
    return Project(root)


def _skip_dvc_tmp(folder: str, names: list[str]) -> set[str]:
    return {"tmp"} & set(names) if Path(folder).name == ".dvc" else set()


CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


@pytest.fixture(scope="module")
def browser():
    """Debian's headless Chromium under Playwright, one per test module: each test opens its own
    pages or contexts, so they share no state; skipped where chromium is not installed."""
    if not Path(CHROMIUM).exists():
        pytest.skip("Debian's chromium is not installed (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield b
        b.close()
