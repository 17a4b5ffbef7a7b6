"""Studies are units the stages iterate over: the stages name no study, stay short, and every
study module is listed where its stage reads it; the registries' names each have a module."""

from __future__ import annotations

import importlib
import inspect
from pathlib import Path, PurePosixPath

import pytest
import yaml

from evalpipe.paths import ProjectPaths
from evalpipe.registries import ANSWER_METRICS, CORRECTORS, INFERENCE_BACKENDS, TYPO_MODELS
from evalpipe.studies import generate, impact, report, score

REPO = Path(__file__).resolve().parents[1]
STUDY_NAMES = (
    "perplexity",
    "defences",
    "ladder",
    "control",
    "dose",
    "token_split",
    "repeats",
    "formats",
    "readouts",
    "targeting",
    "continuation",
)


@pytest.mark.parametrize("stage", ["generate", "score", "impact"])
def test_the_stages_name_no_study_and_stay_short(stage):
    text = (REPO / "stages" / f"{stage}.py").read_text(encoding="utf-8")
    assert len(text.splitlines()) < 150
    code = [line for line in text.splitlines() if not line.lstrip().startswith("#")]
    for name in STUDY_NAMES:
        assert not any(f'"{name}"' in line or f"'{name}'" in line for line in code), name


def test_every_study_module_is_listed_by_its_stage():
    listed = {
        "generate": {f.__module__ for f in generate.STUDIES},
        "score": {f.__module__ for f in score.STUDIES},
        "impact": {type(p).__module__ and p.write.__module__ for p in impact.STUDIES}
        | {p.words.__module__ for p in impact.STUDIES},
        "report": {p.sections.__module__ for p in report.STUDIES},
    }
    folder = REPO / "src" / "evalpipe" / "studies"
    for path in sorted(folder.glob("*/*.py")):
        if path.stem in {"__init__", "paths"}:  # the package docstring; the study's files
            continue
        module = f"evalpipe.studies.{path.parent.name}.{path.stem}"
        assert module in listed[path.stem], f"{module} is not in evalpipe.studies.{path.stem}"
    assert {p.parent.name for p in folder.glob("*/__init__.py")} == set(STUDY_NAMES)


@pytest.mark.parametrize(
    ("registry", "attribute"),
    [(TYPO_MODELS, "MODEL"), (CORRECTORS, "CORRECTOR"), (INFERENCE_BACKENDS, "BACKEND"),
     (ANSWER_METRICS, "METRIC")],
)  # fmt: skip
def test_every_registered_name_has_its_module(registry, attribute):
    for name in registry.names:
        assert hasattr(importlib.import_module(registry.module(name)), attribute), name
    assert registry.default is None or registry.default in registry.names


def test_every_study_report_input_is_read_and_a_dependency_of_the_report_stage():
    """A part's declared files are what the loader reads (one name each), and an edit to any of
    them re-runs `dvc repro report`: each lies under one of the stage's ``deps``."""
    stage = yaml.safe_load((REPO / "dvc.yaml").read_text(encoding="utf-8"))["stages"]["report"]
    deps = [PurePosixPath(d) for d in stage["deps"]]
    rel = ProjectPaths(Path("."))
    names = [wanted.name for part in report.STUDIES for wanted in part.inputs]
    assert len(names) == len(set(names))
    assert {"dose", "ladder", "perplexity", "repeats", "token_split", "formats", "defences"} <= set(
        names
    )
    for part in report.STUDIES:
        for wanted in part.inputs:
            for _, path in wanted.files(rel, ["tiny-random"]):
                file = PurePosixPath(path.as_posix())
                assert any(d == file or d in file.parents for d in deps), (part.name, file)
                # a study's file lives in its own package's paths module
                function = wanted.path or wanted.model_path
                assert function.__module__ == f"evalpipe.studies.{part.name}.paths", file


def _declared_outputs() -> list[PurePosixPath]:
    """Every ``outs`` / ``metrics`` / ``plots`` path of dvc.yaml, a model's ``${key}`` as
    ``tiny-random``."""
    stages = yaml.safe_load((REPO / "dvc.yaml").read_text(encoding="utf-8"))["stages"]
    found = []
    for stage in stages.values():
        body = stage.get("do", stage)
        for kind in ("outs", "metrics", "plots"):
            for entry in body.get(kind) or []:
                name = next(iter(entry)) if isinstance(entry, dict) else entry
                found.append(PurePosixPath(name.replace("${key}", "tiny-random")))
    return found


def test_every_study_file_is_an_output_dvc_yaml_declares():
    """A study's ``paths`` module names only files a stage of dvc.yaml writes (the one place
    outputs are declared), built on ProjectPaths' folders."""
    outs = _declared_outputs()
    rel = ProjectPaths(Path("."))
    folder = REPO / "src" / "evalpipe" / "studies"
    modules = sorted(folder.glob("*/paths.py"))
    assert len(modules) >= 10
    for path in modules:
        module = importlib.import_module(f"evalpipe.studies.{path.parent.name}.paths")
        functions = [
            f
            for f in vars(module).values()
            if inspect.isfunction(f) and f.__module__ == module.__name__
        ]
        assert functions, module.__name__
        for function in functions:
            per_model = len(inspect.signature(function).parameters) == 2
            file = function(rel, "tiny-random") if per_model else function(rel)
            file = PurePosixPath(file.as_posix())
            assert any(o == file or o in file.parents for o in outs), (module.__name__, file)
