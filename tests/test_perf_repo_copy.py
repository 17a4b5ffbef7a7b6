"""The perf scripts' scratch copy (perf/repo_copy.py, shared by pipeline_wall and ray_generate):
the committed tree plus the uncommitted changes, never the caches."""

from __future__ import annotations

import importlib.util
import subprocess
from pathlib import Path

_SPEC = importlib.util.spec_from_file_location(
    "repo_copy", Path(__file__).resolve().parents[1] / "perf" / "repo_copy.py"
)
assert _SPEC is not None and _SPEC.loader is not None
repo_copy = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(repo_copy)


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True)


def test_the_copy_is_the_working_tree_without_its_caches(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / "src").mkdir(parents=True)
    (repo / "src" / "edited.py").write_text("old\n")
    (repo / "src" / "deleted.py").write_text("gone soon\n")
    (repo / ".gitignore").write_text("ignored.txt\n")
    _git(repo, "init", "-q")
    _git(repo, "add", ".")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "base")
    (repo / "src" / "edited.py").write_text("new\n")
    (repo / "src" / "deleted.py").unlink()
    (repo / "src" / "added.py").write_text("added\n")
    (repo / "ignored.txt").write_text("ignored\n")
    (repo / "data" / "cache").mkdir(parents=True)
    (repo / "data" / "cache" / "segment").write_text("cached\n")
    (repo / ".venv").mkdir()
    (repo / ".venv" / "python").write_text("venv\n")

    dest = tmp_path / "copy"
    repo_copy.copy_repo(repo, dest)
    files = sorted(
        str(p.relative_to(dest)) for p in dest.rglob("*") if p.is_file() and ".git" not in p.parts
    )
    assert files == [".gitignore", "src/added.py", "src/edited.py"]
    assert (dest / "src" / "edited.py").read_text() == "new\n"
