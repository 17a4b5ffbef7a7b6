"""Stage processes import only what they use.

Every pipeline stage is a fresh Python process, so a heavy library imported at module level is
paid once per stage: scikit-learn + SciPy cost 2.5 s each time, and the 11 ``benchmarks@`` and
the generate, score, impact and judge stages all loaded them through ``evalpipe.scoring``'s
package imports (perf/pipeline_wall.py has the figures). The checks run in a fresh
interpreter, so what this test session imported does not count.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
HEAVY = ("sklearn", "scipy", "torch", "transformers", "vllm", "datasets")

# module -> heavy libraries it may load on import (none: loaded lazily where used)
ALLOWED: dict[str, tuple[str, ...]] = {
    "stages.words": (),
    "stages.benchmarks": (),
    "stages.perturb": (),
    "stages.generate": (),
    "stages.score": (),
    "stages.impact": (),
    "stages.annotation_tasks": (),
    "stages.judge": (),
    "stages.markers": (),
    "stages.agreement": (),
    "stages.report": (),
    "evalpipe.answers.types": (),
    "evalpipe.cli": (),
    "evalpipe.cli.quality": (),
    "evalpipe.cli.annotation_app": (),
    "evalpipe.cli.evaluate": (),
    "evalpipe.cli.compare": (),
    "evalpipe.scoring": (),
    "evalpipe.benchmarks": (),
    "evalpipe.inference": (),
}


def _loaded_after_import(module: str) -> list[str]:
    code = (
        "import importlib, json, sys\n"
        f"importlib.import_module({module!r})\n"
        f"print(json.dumps([m for m in {list(HEAVY)!r} if m in sys.modules]))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("module", sorted(ALLOWED))
def test_module_import_leaves_heavy_libraries_unloaded(module: str) -> None:
    loaded = _loaded_after_import(module)
    assert set(loaded) <= set(ALLOWED[module]), f"import {module} loaded {loaded}"


def test_answers_package_is_a_leaf_without_pandas() -> None:
    """Answer types and parsers load no data-frame library and nothing of evalpipe above
    ``errors`` (and the registries' names, which import only ``errors``): the benchmark specs
    import them in every stage."""
    code = (
        "import json, sys\n"
        "import evalpipe.answers.types, evalpipe.answers.parsers, evalpipe.answers.normalise\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in "
        "('pandas', 'numpy', 'tqdm', 'evalpipe'))))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    loaded = json.loads(proc.stdout.strip().splitlines()[-1])
    assert "evalpipe.answers.parsers" in loaded
    assert [m for m in loaded if not m.startswith("evalpipe.answers")] == [
        "evalpipe",
        "evalpipe.errors",
        "evalpipe.registries",
    ]


def test_sample_benchmarks_load_without_datasets() -> None:
    """The default source reads bundled JSONL with pyarrow: `datasets` (1.5 s to import and
    set up per benchmarks@ stage) is for the Hub and the publishers' files only."""
    code = (
        "import json, sys\n"
        "from evalpipe.benchmarks import get_spec\n"
        "from evalpipe.benchmarks.loading import load_benchmark\n"
        "for name in ('jnli', 'mmlu', 'gsm8k'):\n"
        "    examples, _ = load_benchmark(get_spec(name), source='sample', max_samples=5)\n"
        "    assert len(examples) == 5\n"
        f"print(json.dumps([m for m in {list(HEAVY)!r} if m in sys.modules]))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert json.loads(proc.stdout.strip().splitlines()[-1]) == []
