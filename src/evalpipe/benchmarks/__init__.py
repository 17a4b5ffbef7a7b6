"""The benchmark registry: one declarative YAML spec per benchmark (``specs/``), loaders for the
Hub, the publishers' files, bundled samples and local files, and prompt rendering from the
specs' templates. See docs/benchmarks.md."""

from evalpipe.benchmarks import spec as _spec
from evalpipe.benchmarks.loading import (
    EXAMPLE_COLUMNS,
    EXAMPLE_SCHEMA,
    HUB_DIR_ENV,
    SOURCES,
    load_benchmark,
    sample_files,
    select_examples,
    to_arrow,
)
from evalpipe.benchmarks.prompts import build_prompts, render
from evalpipe.benchmarks.spec import (
    LOCAL_SPEC,
    REGISTRY,
    STYLES,
    BenchmarkSpec,
    FilesSource,
    HubSource,
    SampleSource,
    get_spec,
    list_specs,
    load_spec,
    local_names,
    subtasks_of,
    validate_suites,
)

__all__ = [
    "EXAMPLE_COLUMNS",
    "EXAMPLE_SCHEMA",
    "HUB_DIR_ENV",
    "LOCAL_SPEC",
    "REGISTRY",
    "SOURCES",
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
    "sample_files",
    "select_examples",
    "subtasks_of",
    "to_arrow",
    "validate_suites",
]


def __getattr__(name: str) -> tuple[str, ...]:
    # BBH_SUBTASKS and MMLU_SUBJECTS are read from their spec files on first use: spec's own
    # module __getattr__ knows which names those are.
    if name in ("BBH_SUBTASKS", "MMLU_SUBJECTS"):
        return getattr(_spec, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
