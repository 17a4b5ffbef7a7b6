"""The benchmark registry: one declarative YAML spec per benchmark (``specs/``), loaders for the
Hub, the publishers' files, bundled samples and local files, and prompt rendering from the
specs' templates. See docs/benchmarks.md.

The spec's modules, bottom first: ``spec`` (the data model), ``spec_files`` (YAML and
``include:`` merging), ``spec_build`` (validation into a ``BenchmarkSpec``), ``registry``
(specs by name); everything they export that other packages use is re-exported here.
"""

from evalpipe.benchmarks import registry as _registry
from evalpipe.benchmarks.loading import (
    EXAMPLE_COLUMNS,
    EXAMPLE_SCHEMA,
    HUB_DIR_ENV,
    load_benchmark,
    sample_files,
    select_examples,
    to_arrow,
)
from evalpipe.benchmarks.prompts import build_prompts, render
from evalpipe.benchmarks.registry import (
    REGISTRY,
    get_spec,
    list_specs,
    local_names,
    subtasks_of,
    validate_suites,
)
from evalpipe.benchmarks.spec import (
    STYLES,
    BenchmarkSpec,
    FilesSource,
    HubSource,
    SampleSource,
)
from evalpipe.benchmarks.spec_build import load_spec
from evalpipe.benchmarks.spec_files import LOCAL_SPEC, resolve
from evalpipe.params_schema import BENCHMARK_SOURCES

__all__ = [
    "BENCHMARK_SOURCES",
    "EXAMPLE_COLUMNS",
    "EXAMPLE_SCHEMA",
    "HUB_DIR_ENV",
    "LOCAL_SPEC",
    "REGISTRY",
    "STYLES",
    "BenchmarkSpec",
    "FilesSource",
    "HubSource",
    "SampleSource",
    "build_prompts",
    "get_spec",
    "list_specs",
    "load_benchmark",
    "load_spec",
    "local_names",
    "render",
    "resolve",
    "sample_files",
    "select_examples",
    "subtasks_of",
    "to_arrow",
    "validate_suites",
]


def __getattr__(name: str) -> tuple[str, ...]:
    # BBH_SUBTASKS and MMLU_SUBJECTS are read from their spec files on first use: the registry's
    # own module __getattr__ knows which names those are.
    if name in ("BBH_SUBTASKS", "MMLU_SUBJECTS"):
        return getattr(_registry, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
