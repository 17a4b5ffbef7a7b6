"""Which Git commit a report shows: the commit of a revision, or of the working tree with a note
of uncommitted changes."""

from __future__ import annotations

import subprocess
from pathlib import Path

# The working tree, as a revision name (as `dvc metrics diff` and `dvc plots diff` say it).
WORKSPACE = "workspace"


def git(root: Path, *args: str) -> str | None:
    """Output of a git command, or None outside a repository."""
    try:
        proc = subprocess.run(
            ["git", *args], cwd=root, capture_output=True, text=True, check=True, timeout=60
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return proc.stdout.strip()


def commit_label(root: Path, rev: str) -> str | None:
    """``<hash>`` for a revision; the workspace adds whether it has uncommitted changes."""
    if rev == WORKSPACE:
        head = git(root, "rev-parse", "HEAD")
        if head is None:
            return None
        dirty = git(root, "status", "--porcelain", "--untracked-files=no")
        return f"{head} + uncommitted changes" if dirty else head
    return git(root, "rev-parse", rev)
