"""A stage's source folders are DVC deps: the caches Python and numba write beside the sources
(``__pycache__``, ``.pyc``, numba's ``cache=True`` files) must not change their hashes, or a
fresh `dvc repro` after the tests (CI's order) rewrites dvc.lock."""

from __future__ import annotations

import shutil

from tests.conftest import REPO, Project


def test_python_and_numba_caches_in_a_dep_folder_leave_the_stage_up_to_date(tmp_path):
    repo = Project(tmp_path)
    repo.git("init", "-q")
    repo.dvc("init", "-q")
    shutil.copy2(REPO / ".dvcignore", tmp_path / ".dvcignore")
    source = tmp_path / "src" / "pkg"
    source.mkdir(parents=True)
    (source / "kernel.py").write_text("VALUE = 1\n", encoding="utf-8")
    repo.dvc(
        "stage", "add", "-q", "-n", "use", "-d", "src/pkg", "-o", "out.txt", "echo ok > out.txt"
    )
    repo.dvc("repro", "-q")
    locked = (tmp_path / "dvc.lock").read_text(encoding="utf-8")

    caches = source / "__pycache__"
    caches.mkdir()
    for name in (
        "kernel.cpython-311.pyc",
        "kernel._kernel.locals.sweeps-33.py311.nbi",
        "kernel._kernel.locals.sweeps-33.py311.1.nbc",
    ):
        (caches / name).write_bytes(b"\x00compiled")
    (source / "stray.pyc").write_bytes(b"\x00compiled")

    status = repo.dvc("status", "use")
    assert "changed" not in status.stdout and "modified" not in status.stdout, status.stdout
    repo.dvc("repro", "-q")
    assert (tmp_path / "dvc.lock").read_text(encoding="utf-8") == locked

    # the source itself still counts
    (source / "kernel.py").write_text("VALUE = 2\n", encoding="utf-8")
    assert "modified:" in repo.dvc("status", "use").stdout
