"""The benchmark registry: declarative specs, loaders for Hub / bundled samples / local files,
and prompt templates. See docs/benchmarks.md."""

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
from evalpipe.benchmarks.prompts import STYLES, build_prompts, render
from evalpipe.benchmarks.spec import (
    BBH_SUBTASKS,
    MMLU_SUBJECTS,
    REGISTRY,
    BenchmarkSpec,
    HubSource,
    get_spec,
    list_specs,
    local_spec,
)

__all__ = [
    "BBH_SUBTASKS",
    "EXAMPLE_COLUMNS",
    "EXAMPLE_SCHEMA",
    "HUB_DIR_ENV",
    "MMLU_SUBJECTS",
    "REGISTRY",
    "SOURCES",
    "STYLES",
    "BenchmarkSpec",
    "HubSource",
    "build_prompts",
    "get_spec",
    "list_specs",
    "load_benchmark",
    "local_spec",
    "render",
    "sample_files",
    "select_examples",
    "to_arrow",
]
