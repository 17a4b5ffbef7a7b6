"""The continuation designs' cells, generated after the plain answers they are cut from: per
benchmark, every typo pair whose typo'd answer differs from an extracted clean answer (whether
the clean answer is right is the score stage's to decide) gets its cells, through the same
engine and generation cache -> data/outputs/<model>/continuation/<benchmark>.parquet."""

from __future__ import annotations

import logging
import shutil
from collections.abc import Sequence
from typing import Any

import pandas as pd

from evalpipe import atomic
from evalpipe.answers import continuation_cells as cd
from evalpipe.answers.continuation_cells import KEY, UNSPLIT, Cell
from evalpipe.arms import ORIGINAL, TYPO
from evalpipe.errors import InputError
from evalpipe.inference.plan import BenchmarkResult, GenerationPart
from evalpipe.inference.types import GenerationRequest
from evalpipe.paths import ProjectPaths
from evalpipe.studies.continuation import paths as files

NAME = "continuation"
log = logging.getLogger("stages.generate")


def generation(params: dict, paths: ProjectPaths, *, slug: str, source: str) -> GenerationPart:
    """The part of ``continuation`` settings (``designs``, ``prefix_budgets``, ``answer_tokens``)."""
    cfg = params["continuation"]
    designs = list(cfg["designs"] or [])
    budgets = list(cfg["prefix_budgets"] or [])
    cd.check_designs(designs, budgets, source=source)
    if designs and str(params["prompt"]["style"]) != "cot":
        raise InputError(
            f"{source}: continuation.designs: the designs continue chain-of-thought answers; "
            f"expected prompt.style: cot, got {params['prompt']['style']!r}"
        )

    def follow(engine: Any, results: list[BenchmarkResult], *, progress: bool) -> None:
        out = files.outputs(paths, slug)
        frames: dict[str, tuple[pd.DataFrame, int, int]] = {}
        requests: list[GenerationRequest] = []
        for result in results:
            frame, reqs = _benchmark_cells(result, designs, budgets, int(cfg["answer_tokens"]))
            frames[result.plan.bench.name] = (frame, len(requests), len(reqs))
            requests += reqs
        generations = engine.generate(requests, progress=progress)
        stats = getattr(engine, "last_stats", None)
        log.info(
            "continuation: %d cells over %d benchmarks%s",
            len(requests),
            len(frames),
            f", {stats.cache_hits} from the cache" if stats is not None else "",
        )
        if out.exists():
            shutil.rmtree(out)
        for name, (frame, at, n) in sorted(frames.items()):
            gens = generations[at : at + n]
            sent = frame["cell"] != UNSPLIT
            frame.loc[sent, "output"] = [g.output for g in gens]
            frame.loc[sent, "finish_reason"] = [g.finish_reason for g in gens]
            atomic.write_parquet(out / f"{name}.parquet", frame)

    def finish(names: list[str]) -> None:
        out = files.outputs(paths, slug)
        if not designs and out.exists():
            shutil.rmtree(out)

    return GenerationPart(NAME, enabled=bool(designs), follow=follow, finish=finish)


def pairs_of(result: BenchmarkResult) -> pd.DataFrame:
    """The plain typo arm's pairs of one benchmark: each typo'd row beside its clean row, with
    prompts, outputs and extracted answers."""
    bench = result.plan.bench
    n = len(bench.rows)
    rows = bench.rows.reset_index(drop=True)
    outputs = [g.output for g in result.generations[:n]] if result.generations else [""] * n
    frame = rows.assign(prompt_text=result.plan.prompts[:n], output=outputs)
    frame = frame.loc[frame["condition"].astype(str) == TYPO]
    subtasks = frame["subtask"] if "subtask" in frame.columns else pd.Series(None, frame.index)
    spec = bench.spec
    frame = frame.assign(
        answer=[
            spec.answer.parse(
                text, **spec.parser_options(sub if isinstance(sub, str) else None)
            ).prediction
            for text, sub in zip(frame["output"], subtasks, strict=True)
        ]
    )
    clean = frame.loc[frame["variant"] == ORIGINAL].drop_duplicates("example_id")
    typo = frame.loc[frame["variant"] != ORIGINAL]
    joined = typo.merge(
        clean[["example_id", "prompt_text", "output", "answer"]],
        on="example_id",
        suffixes=("_typo", "_clean"),
        validate="many_to_one",
    )
    return pd.DataFrame(
        {
            **{k: joined[k].to_numpy() for k in KEY},
            "subtask": joined["subtask"].to_numpy() if "subtask" in joined else None,
            "clean_prompt": joined["prompt_text_clean"].to_numpy(),
            "typo_prompt": joined["prompt_text_typo"].to_numpy(),
            "clean_output": joined["output_clean"].to_numpy(),
            "typo_output": joined["output_typo"].to_numpy(),
            "clean_answer": joined["answer_clean"].astype(object).to_numpy(),
            "typo_answer": joined["answer_typo"].astype(object).to_numpy(),
            # candidates: the score stage keeps those whose clean answer is correct
            "clean_correct": joined["answer_clean"].notna().to_numpy(),
        }
    )


def _benchmark_cells(
    result: BenchmarkResult, designs: list[str], budgets: list, answer_tokens: int
) -> tuple[pd.DataFrame, list]:
    """One benchmark's cells as rows (their outputs filled in later) and their requests."""
    plan = result.plan
    pairs = pairs_of(result).reset_index(drop=True)
    cells, unsplit = cd.cells(
        pairs.assign(example_id=pairs["example_id"].astype(str)),
        answer_type=plan.bench.spec.answer_type,
        designs=designs,
        budgets=budgets,
    )
    free = plan.generate[0].max_tokens if plan.generate else answer_tokens
    stop = tuple(plan.generate[0].stop) if plan.generate else ()
    requests = cell_requests(cells, answer_tokens=answer_tokens, free_tokens=free, stop=stop)
    rows = [
        {"pair": c.pair, "design": c.design, "cell": c.cell, "budget": c.budget,
         "prefix": c.prefix}
        for c in cells
    ] + [
        {"pair": int(i), "design": "", "cell": UNSPLIT, "budget": "", "prefix": ""}
        for i in unsplit.nonzero()[0]
    ]  # fmt: skip
    frame = pd.DataFrame(rows, columns=["pair", "design", "cell", "budget", "prefix"])
    key = pairs.loc[frame["pair"].to_numpy(), KEY].reset_index(drop=True)
    frame = pd.concat([key, frame.drop(columns="pair")], axis=1)
    frame["benchmark"] = plan.bench.name
    frame["output"] = ""
    frame["finish_reason"] = ""
    frame["example_id"] = frame["example_id"].astype(str)
    return frame, requests


def cell_requests(
    cells_: Sequence[Cell],
    *,
    answer_tokens: int,
    free_tokens: int,
    stop: tuple[str, ...] = (),
) -> list[GenerationRequest]:
    """The cells' generation requests: greedy, the answer span's budget or the free one."""
    return [
        GenerationRequest(
            c.prompt,
            max_tokens=free_tokens if c.free else answer_tokens,
            temperature=0.0,
            stop=stop,
            prefix=c.prefix,
        )
        for c in cells_
    ]
