"""Annotation tasks from model outputs and user-supplied dialogues (the task input format).

A benchmark output becomes a task with the benchmark prompt as the user turn, the model output as
the response and no context (the generate stage is single-turn). Its id is
``out/<benchmark>/<example_id>/<variant>``, stable across runs. Which outputs become tasks is a
deterministic sample: per benchmark, rows are ordered by a hash of (seed, benchmark, example_id,
variant) and the first ``per_benchmark`` are taken, so raising the count keeps the earlier tasks.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import pandas as pd

from evalpipe.annotation.schema import DialoguePair
from evalpipe.errors import InputError
from evalpipe.params_schema import default_of

VARIANTS = ("original", "perturbed", "all")
REQUIRED_COLUMNS = ("benchmark", "example_id", "variant", "prompt", "output")
OUTPUT_PREFIX = "out"


def output_task_id(benchmark: str, example_id: str, variant: str) -> str:
    """``out/<benchmark>/<example_id>/<variant>``.

    >>> output_task_id("gsm8k", "test-0007", "original")
    'out/gsm8k/test-0007/original'
    """
    return f"{OUTPUT_PREFIX}/{benchmark}/{example_id}/{variant}"


def _sample_key(seed: int, benchmark: str, example_id: str, variant: str) -> str:
    text = "\x1f".join((str(seed), benchmark, example_id, variant))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass
class SampleStats:
    """How many output rows each benchmark had, how many were eligible, and how many were taken."""

    rows: dict[str, int] = field(default_factory=dict)
    eligible: dict[str, int] = field(default_factory=dict)
    blank: dict[str, int] = field(default_factory=dict)
    taken: dict[str, int] = field(default_factory=dict)


def sample_output_tasks(
    outputs: pd.DataFrame,
    *,
    per_benchmark: int | None,
    seed: int,
    variants: str = default_of("annotation.variants"),
    benchmarks: Sequence[str] | None = None,
    source: str = "outputs",
) -> tuple[list[DialoguePair], SampleStats]:
    """Pick a deterministic sample of model outputs per benchmark and turn them into tasks.

    Parameters
    ----------
    outputs:
        Rows of ``data/outputs/*.parquet`` (columns ``benchmark, example_id, variant, prompt,
        output`` at least), one or several benchmarks.
    per_benchmark:
        Tasks per benchmark; None takes every eligible row.
    seed:
        Hashed with each row's key to order the rows.
    variants:
        ``original`` (unperturbed prompts only), ``perturbed`` (typo variants only) or ``all``.
    benchmarks:
        Benchmarks to sample from; None means all in ``outputs``.
    source:
        Name of the input, for error messages.

    Returns
    -------
    (list[DialoguePair], SampleStats)
        Tasks ordered by benchmark name then sample order; counts per benchmark. Rows whose
        output is blank (nothing to rate) are not eligible and are counted in ``stats.blank``.

    Raises
    ------
    InputError
        Missing columns, an unknown ``variants`` value, a negative count, or a requested
        benchmark absent from ``outputs``.
    """
    missing = [c for c in REQUIRED_COLUMNS if c not in outputs.columns]
    if missing:
        raise InputError(
            f"{source}: missing column(s) {', '.join(missing)} "
            f"(expected the generate stage's outputs: {', '.join(REQUIRED_COLUMNS)})"
        )
    if variants not in VARIANTS:
        raise InputError(
            f"params.yaml: annotation.variants: expected one of {', '.join(VARIANTS)}, "
            f"got {variants!r}"
        )
    if per_benchmark is not None and (not isinstance(per_benchmark, int) or per_benchmark < 0):
        raise InputError(
            f"params.yaml: annotation.tasks_per_benchmark: expected an integer >= 0 or null, "
            f"got {per_benchmark!r}"
        )
    present = sorted(outputs["benchmark"].astype(str).unique())
    wanted = present if benchmarks is None else list(benchmarks)
    unknown = [b for b in wanted if b not in present]
    if unknown:
        raise InputError(
            f"params.yaml: annotation.benchmarks: {', '.join(unknown)} not in {source} "
            f"(present: {', '.join(present) or 'none'})"
        )

    stats = SampleStats()
    tasks: list[DialoguePair] = []
    for benchmark in sorted(wanted):
        rows = outputs[outputs["benchmark"].astype(str) == benchmark]
        stats.rows[benchmark] = len(rows)
        is_original = rows["variant"].astype(str) == "original"
        if variants == "original":
            rows = rows[is_original]
        elif variants == "perturbed":
            rows = rows[~is_original]
        blank = rows["output"].isna() | (rows["output"].astype(str).str.strip() == "")
        stats.blank[benchmark] = int(blank.sum())
        rows = rows[~blank]
        stats.eligible[benchmark] = len(rows)
        keyed = sorted(
            (
                _sample_key(seed, benchmark, str(r.example_id), str(r.variant)),
                str(r.example_id),
                str(r.variant),
                str(r.prompt),
                str(r.output),
            )
            for r in rows.itertuples(index=False)
        )
        chosen = keyed if per_benchmark is None else keyed[:per_benchmark]
        stats.taken[benchmark] = len(chosen)
        tasks.extend(
            DialoguePair(
                id=output_task_id(benchmark, example_id, variant),
                user=prompt,
                response=output,
                context=[],
            )
            for _, example_id, variant, prompt, output in chosen
        )
    return tasks, stats


def trim_context(task: DialoguePair, *, context_window: int) -> DialoguePair:
    """Keep the turns within the context window (7 = the pair plus 3 turns either side).

    Parameters
    ----------
    task:
        A dialogue pair.
    context_window:
        Window size in utterances; turns with ``|turn| <= context_window // 2`` are kept.

    Returns
    -------
    DialoguePair
        A copy with the context trimmed.
    """
    reach = max(context_window, 1) // 2
    kept = [t for t in task.context if abs(int(t["turn"])) <= reach]
    return DialoguePair(id=task.id, user=task.user, response=task.response, context=kept)


def combine_tasks(*groups: Iterable[DialoguePair], sources: Sequence[str]) -> list[DialoguePair]:
    """Concatenate task groups in order, refusing an id that appears twice.

    Parameters
    ----------
    groups:
        Task lists (e.g. each dialogue file, then the sampled outputs).
    sources:
        One name per group for the error message.

    Returns
    -------
    list[DialoguePair]

    Raises
    ------
    InputError
        Naming the duplicate id and both sources.
    """
    seen: dict[str, str] = {}
    out: list[DialoguePair] = []
    for group, source in zip(groups, sources, strict=True):
        for task in group:
            if task.id in seen:
                raise InputError(
                    f'{source}: field "id": duplicate task id {task.id!r} '
                    f"(already in {seen[task.id]}); task ids must be unique across all sources"
                )
            seen[task.id] = source
            out.append(task)
    return out
