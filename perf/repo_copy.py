"""A scratch copy of the repository for the perf scripts that run the pipeline end to end.

The copy is the committed tree plus the working tree's uncommitted changes (edits, new files
git does not ignore, deletions), so a figure measures the code as it stands; caches, the venv
and DVC's own folders are never copied (a run starts from empty caches).
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

SKIP_COPY = (".venv", ".cache", ".dvc/cache", ".dvc/tmp", "data/cache")


def copy_repo(repo: Path, dest: Path) -> None:
    """Clone ``repo``, then overlay its working tree's uncommitted changes."""
    subprocess.run(["git", "clone", "-q", "--no-hardlinks", str(repo), str(dest)], check=True)
    changed = subprocess.run(
        ["git", "ls-files", "-m", "-o", "--exclude-standard", "-d"],
        cwd=repo,
        check=True,
        capture_output=True,
        text=True,
    ).stdout.split("\n")
    for rel in filter(None, changed):
        if rel.startswith(SKIP_COPY):
            continue
        src, dst = repo / rel, dest / rel
        if src.is_file():
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dst)
        elif dst.exists():
            dst.unlink()
