"""The format arms: every typo-arm row of a choice benchmark again under each variant params
``formats`` asks for (:mod:`evalpipe.benchmarks.formats`), condition ``format:<variant>``."""

from __future__ import annotations

import logging

from evalpipe.arms import TYPO
from evalpipe.benchmarks import build_prompts
from evalpipe.benchmarks.formats import (
    check_config,
    enabled,
    example_fields,
    variant_fewshot,
    variant_rows,
    variant_spec,
    variants,
)
from evalpipe.inference.plan import Arm, BenchmarkInput, GenerationPart
from evalpipe.paths import ProjectPaths

NAME = "formats"
log = logging.getLogger("stages.generate")


def generation(params: dict, paths: ProjectPaths, *, slug: str, source: str) -> GenerationPart:
    """The part of ``formats`` (orders, labels, incorrect)."""
    cfg = params["formats"]
    check_config(cfg, source=source)
    # a label arm's choices are scored by generation only: the log-likelihood continuations are
    # the benchmark's labels
    by_generation = params["scoring"]["method"] == "generate"

    def arms(bench: BenchmarkInput, prompts: list[str]) -> list[Arm]:
        rows = bench.rows.loc[bench.rows["condition"] == TYPO].reset_index(drop=True)
        k = len(bench.spec.labels or [])
        sizes = {len(c) for c in rows["choices"] if c is not None} if "choices" in rows else set()
        if sizes and sizes != {k}:
            # an order or label variant is defined over the full label space
            log.warning(
                "%s: formats: rows hold %s options for %d labels; no format arms for it",
                bench.name, sorted(sizes), k,
            )  # fmt: skip
            return []
        out = []
        for variant in variants(bench.spec, cfg, fields=example_fields(rows)):
            if variant.labels is not None and not by_generation:
                continue
            spec = variant_spec(bench.spec, variant)
            shown = variant_rows(bench.spec, rows, variant)
            fewshot = variant_fewshot(bench.spec, bench.fewshot, variant)
            texts = build_prompts(spec, shown, fewshot, style=bench.style, n_shots=bench.n_shots)
            out.append(Arm(shown, texts))
        return out

    return GenerationPart(NAME, enabled=enabled(cfg), arms=arms)
