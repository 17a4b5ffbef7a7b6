"""The layers hold and dvc.yaml cannot drift from the code.

A static walk of every import (also the ones inside functions) in ``src/evalpipe`` and
``stages/`` (scripts/layer_check.py, which also prints the figures):

- no import cycle and no module importing another module's private name;
- each stage command in dvc.yaml has in its ``deps`` every project module it imports,
  transitively, so an edit there re-runs the stage (``dvc status`` would otherwise call stale
  results up to date);
- the layers point down: a package imports only the packages below it (docs/architecture.md).
"""

from __future__ import annotations

import importlib.util
import shutil
import sys
from pathlib import Path

import pytest
import yaml

from tests.conftest import TEST_PARAMS

REPO = Path(__file__).resolve().parents[1]


def _checker():
    path = REPO / "scripts" / "layer_check.py"
    spec = importlib.util.spec_from_file_location("layer_check", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules["layer_check"] = module  # dataclasses resolve their module by name
    spec.loader.exec_module(module)
    return module


lc = _checker()


def test_no_import_cycle() -> None:
    _, edges = lc.import_graph(REPO)
    assert lc.cycles(edges) == []


def test_no_module_imports_a_private_name_of_another() -> None:
    _, edges = lc.import_graph(REPO)
    found = [
        f"{imp.importer}:{imp.line} {imp.target}.{name}" for imp, name in lc.private_imports(edges)
    ]
    assert found == []


def test_every_stage_declares_the_modules_it_imports() -> None:
    missing = lc.undeclared(REPO, only=None)
    assert missing == {}, "\n".join(
        f"{stage}: {', '.join(mods)}" for stage, mods in missing.items()
    )


def test_layers_only_point_down() -> None:
    _, edges = lc.import_graph(REPO)
    assert lc.upward_imports(edges) == []


def test_every_stage_command_is_checked() -> None:
    # a stage whose cmd the checker could not read would escape the dependency check
    stages = lc.stage_commands(REPO)
    dvc = yaml.safe_load((REPO / "dvc.yaml").read_text(encoding="utf-8"))
    assert {name.split("@")[0] for name in stages} == set(dvc["stages"])
    assert all(module.startswith("stages.") for module, _ in stages.values())


def _copy(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    for part in ("src/evalpipe", "stages"):
        shutil.copytree(REPO / part, root / part, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(REPO / "dvc.yaml", root / "dvc.yaml")
    shutil.copy(TEST_PARAMS, root / "params.yaml")
    return root


def test_an_import_the_deps_miss_is_reported(tmp_path) -> None:
    root = _copy(tmp_path)
    stage = root / "stages" / "markers.py"
    # an import inside a function counts: the stage runs it
    stage.write_text(
        stage.read_text(encoding="utf-8")
        + "\n\ndef _late():\n    from evalpipe.scoring import views  # noqa: F401\n",
        encoding="utf-8",
    )
    missing = lc.undeclared(root, only=None)
    assert set(missing) == {"markers"}
    assert "evalpipe.scoring.views" in missing["markers"]


def test_a_cycle_and_a_private_import_are_reported(tmp_path) -> None:
    root = _copy(tmp_path)
    errors = root / "src" / "evalpipe" / "errors.py"
    errors.write_text(
        errors.read_text(encoding="utf-8") + "\nfrom evalpipe.paths import _nothing  # noqa\n",
        encoding="utf-8",
    )
    _, edges = lc.import_graph(root)
    assert ["evalpipe.errors", "evalpipe.paths"] in lc.cycles(edges)
    assert [(i.importer, n) for i, n in lc.private_imports(edges)] == [
        ("evalpipe.errors", "_nothing")
    ]


@pytest.mark.parametrize(
    ("importer", "target", "upward"),
    [
        ("evalpipe.benchmarks.spec", "evalpipe.scoring.scorer", True),
        ("evalpipe.answers.types", "evalpipe.benchmarks.spec", True),
        ("evalpipe.scoring.scorer", "evalpipe.answers.parsers", False),
        ("evalpipe.errors", "evalpipe.paths", False),
        ("stages.score", "evalpipe.report.assemble", False),
    ],
)
def test_layer_order(importer: str, target: str, upward: bool) -> None:
    edge = lc.Import(importer, target, (), 1, False)
    assert bool(lc.upward_imports([edge])) is upward
