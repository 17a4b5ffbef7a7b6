"""Pure pieces of the generate stage: perturbed rows -> requests, generations -> output rows."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from typing import Any

import pandas as pd
import pyarrow as pa

from evalpipe.errors import InputError
from evalpipe.inference.types import NOT_SENT, Generation, GenerationRequest
from evalpipe.params_schema import default_of

# A row's key: its example, its variant (target word) and typo draw, and its arm
# (``condition``, evalpipe.arms: the perturbed sets' rows are "typo"; defences add arms).
KEY_COLUMNS = ("benchmark", "example_id", "variant", "word_rank", "draw", "condition")
GOLD_COLUMNS = (
    "subtask",
    "task_type",
    "answer",
    "answers",
    "labels",
    "occurrences",
    "perturbed_occurrences",
)
# What perturb stated about each row, carried as it is so that nothing after generate reads the
# perturbed sets (docs/architecture.md, "Artifacts"): the language, the typo facts, the edits and
# the perturbed field texts.
CARRIED_COLUMNS = (
    "language",
    "n_typos",
    "n_edited_chars",
    "op",
    "script",
    "perturbations",
    "fields",
)
REQUIRED_COLUMNS = (*KEY_COLUMNS, *CARRIED_COLUMNS)
OUTPUT_COLUMNS = (
    *KEY_COLUMNS,
    "prompt_hash",
    "prompt",
    "output",
    "finish_reason",
    "prompt_tokens",
    "output_tokens",
    "model",
    "model_id",
    "from_cache",
    *GOLD_COLUMNS,
    *CARRIED_COLUMNS,
)


def validate_perturbed(df: pd.DataFrame, *, source: str) -> None:
    """Check a perturbed frame has what the generate stage needs.

    Parameters
    ----------
    df:
        Rows of ``data/perturbed/{name}.parquet``.
    source:
        The file name, for error messages.

    Raises
    ------
    InputError
        Naming the file, the missing columns or the first bad row.
    """
    missing = [c for c in REQUIRED_COLUMNS if c not in df.columns]
    if missing:
        raise InputError(
            f"{source}: missing columns {missing}; expected the perturbed-set "
            f"columns {list(REQUIRED_COLUMNS)} (docs/architecture.md; rerun `dvc repro "
            "perturb` if the set predates them)"
        )
    keys = ["benchmark", "example_id", "word_rank", "draw", "condition"]
    duplicated = df.duplicated(keys).to_numpy()
    if duplicated.any():
        i = int(duplicated.argmax())
        raise InputError(
            f"{source}, row {i}: a second row for ({', '.join(keys)}) = "
            f"{tuple(df.iloc[i][k] for k in keys)}; expected one row per key"
        )
    for i, value in enumerate(df["fields"].tolist()):
        if not isinstance(value, str | dict):
            raise InputError(
                f"{source}, row {i}, column 'fields': expected a JSON object "
                f"string, got {type(value).__name__}"
            )


def sampling_settings(
    sampling: dict[str, Any], *, source: str = "params.yaml"
) -> tuple[float, int | None, int | None]:
    """``(temperature, max_tokens override, seed)`` from the ``sampling`` params section.

    ``max_tokens`` is None (each benchmark's spec budget for the prompt style) or an integer that
    replaces every budget.
    """
    max_tokens = sampling.get("max_tokens")
    if max_tokens is not None and (
        isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens <= 0
    ):
        raise InputError(
            f"{source}: sampling.max_tokens: expected null (the specs' budgets) or an integer > 0, "
            f"got {max_tokens!r}"
        )
    temperature = sampling.get("temperature", default_of("sampling.temperature"))
    if (
        isinstance(temperature, bool)
        or not isinstance(temperature, int | float)
        or not 0.0 <= float(temperature) <= 5.0
    ):
        raise InputError(
            f"{source}: sampling.temperature: expected a number in 0..5, got {temperature!r}"
        )
    seed = sampling.get("seed")
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
        raise InputError(f"{source}: sampling.seed: expected an integer or null, got {seed!r}")
    return float(temperature), None if max_tokens is None else int(max_tokens), seed


def answer_budget(spec_max_tokens: int, *, override: int | None = None) -> int:
    """New tokens for one benchmark's answers: the spec's budget for the prompt style, unless
    ``sampling.max_tokens`` overrides it (explicitly, for every benchmark and style).

    Examples
    --------
    >>> answer_budget(512), answer_budget(512, override=64)
    (512, 64)
    """
    return int(spec_max_tokens) if override is None else int(override)


def make_requests(
    prompts: Sequence[str],
    *,
    max_tokens: int,
    temperature: float,
    json_schema: dict[str, Any] | None,
    seed: int | None,
    stop: Sequence[str] = (),
    top_logprobs: int = default_of("scoring.top_logprobs"),
) -> list[GenerationRequest]:
    """One request per prompt with the benchmark's budget, schema and stop sequences (and the
    first-token top-k count when ``top_logprobs`` > 0)."""
    return [
        GenerationRequest(
            prompt=p,
            max_tokens=max_tokens,
            temperature=temperature,
            json_schema=json_schema,
            seed=seed,
            stop=tuple(stop),
            top_logprobs=int(top_logprobs),
        )
        for p in prompts
    ]


FIRST_TOKEN_COLUMN = "first_token_logprobs"
"""The outputs' column (only with ``scoring.top_logprobs`` > 0): the first answer token's top-k
as JSON ``[[token, logprob], ...]``, null where the backend returned none."""


def first_token_column(generations: Sequence[Generation]) -> list[str | None]:
    """Each generation's first-token top-k as JSON (null when unavailable).

    >>> first_token_column([Generation("a", "stop", 1, 1, first_token_logprobs=(("a", -0.5),)),
    ...                     Generation("b", "stop", 1, 1)])
    ['[["a", -0.5]]', None]
    """
    return [
        None
        if g.first_token_logprobs is None
        else json.dumps([[t, v] for t, v in g.first_token_logprobs], ensure_ascii=False)
        for g in generations
    ]


def truncated_share(generations: Sequence[Generation]) -> tuple[int, float]:
    """How many generations stopped at their budget (finish_reason ``length``), and their share."""
    n = sum(1 for g in generations if g.finish_reason == "length")
    return n, (n / len(generations) if generations else 0.0)


def not_sent_counts(generations: Sequence[Generation]) -> dict[str, int]:
    """How many prompts got no answer, per reason: ``prompt_too_long`` (over the context
    length) and ``rejected`` (a server refused the request with a client error).

    >>> not_sent_counts([Generation("", "prompt_too_long", 0, 0), Generation("a", "stop", 1, 1)])
    {'prompt_too_long': 1, 'rejected': 0}
    """
    return {reason: sum(1 for g in generations if g.finish_reason == reason) for reason in NOT_SENT}


def generation_counts(
    keys: Sequence[str], generations: Sequence[Generation], *, seen: set[str]
) -> dict[str, int]:
    """How one benchmark's generation requests were answered, in counts that add up.

    ``requests`` = ``cached`` (the generation cache held the answer) + ``generated`` (sent to
    the engine in this run) + ``repeated`` (the same request as an earlier one in this run,
    generated once and reused).

    Parameters
    ----------
    keys:
        The requests' cache keys, aligned with ``generations``.
    generations:
        What the engine returned for them.
    seen:
        Keys already counted for earlier benchmarks of the same run; updated in place, so a
        request shared by two benchmarks is generated in the first and repeated in the second.

    Returns
    -------
    dict
        ``requests``, ``cached``, ``generated``, ``repeated``.

    Examples
    --------
    >>> gens = [Generation("a", "stop", 1, 1, from_cache=True), Generation("b", "stop", 1, 1)]
    >>> generation_counts(["k1", "k2", "k2"], [*gens, gens[1]], seen=set())
    {'requests': 3, 'cached': 1, 'generated': 1, 'repeated': 1}
    """
    if len(keys) != len(generations):
        raise ValueError("keys and generations must have the same length")
    cached = generated = repeated = 0
    for key, gen in zip(keys, generations, strict=True):
        if gen.from_cache:
            cached += 1
        elif key in seen:
            repeated += 1
        else:
            generated += 1
        seen.add(key)
    return {"requests": len(keys), "cached": cached, "generated": generated, "repeated": repeated}


def warned_prompts(prompts: Sequence[str], *, preamble: str) -> list[str]:
    r"""The prompts of the ``warned`` arm: the typo warning, a blank line, then the prompt.

    >>> warned_prompts(["Q: 1+1?"], preamble="The question may contain typos.")
    ['The question may contain typos.\n\nQ: 1+1?']
    """
    return [f"{preamble}\n\n{p}" for p in prompts]


def prompt_hash(prompt: str) -> str:
    """First 16 hex characters of the prompt's SHA-256 (joins outputs to prompts cheaply)."""
    return hashlib.sha256(prompt.encode("utf-8")).hexdigest()[:16]


def outputs_frame(
    rows: pd.DataFrame,
    prompts: Sequence[str],
    generations: Sequence[Generation],
    *,
    model: str,
    model_id: str | None = None,
) -> pd.DataFrame:
    """The ``data/outputs/{name}.parquet`` rows: keys, prompt, generation, carried gold columns.

    Parameters
    ----------
    rows:
        The perturbed rows, in the order the prompts were built.
    prompts, generations:
        Aligned with ``rows``.
    model:
        The model's slug in params.yaml ``models`` (the name tables and reports use).
    model_id:
        The model identity label (e.g. ``tiny-random@ae468db6d094``); default ``model``.

    Returns
    -------
    pandas.DataFrame
        Columns ``OUTPUT_COLUMNS``: ``draw`` (int32) always, 0 with one typo draw; gold columns
        absent from ``rows`` are null; ``CARRIED_COLUMNS`` as ``rows`` hold them
        (:func:`outputs_table` gives them their Parquet types back).
    """
    if not len(rows) == len(prompts) == len(generations):
        raise ValueError("rows, prompts and generations must have the same length")
    out = pd.DataFrame({c: rows[c].tolist() for c in KEY_COLUMNS})
    out["word_rank"] = out["word_rank"].astype("int64")
    out["draw"] = out["draw"].astype("int32")
    out["prompt_hash"] = [prompt_hash(p) for p in prompts]
    out["prompt"] = list(prompts)
    out["output"] = [g.output for g in generations]
    out["finish_reason"] = [g.finish_reason for g in generations]
    out["prompt_tokens"] = pd.array([g.prompt_tokens for g in generations], dtype="int64")
    out["output_tokens"] = pd.array([g.output_tokens for g in generations], dtype="int64")
    out["model"] = model
    out["model_id"] = model_id or model
    out["from_cache"] = [bool(g.from_cache) for g in generations]
    for col in GOLD_COLUMNS:
        out[col] = rows[col].tolist() if col in rows.columns else [None] * len(rows)
    for col in CARRIED_COLUMNS:
        out[col] = rows[col].tolist()
    return out[list(OUTPUT_COLUMNS)]


def outputs_table(frame: pd.DataFrame, perturbed: pa.Schema) -> pa.Table:
    """The outputs frame as Arrow, each carried column typed as in the perturbed set.

    pandas keeps ``perturbations`` as Python objects, from which Arrow would guess the types again
    (int64 offsets, a null type for a field no record of the benchmark sets, no struct at all
    when no row has an edit); the perturbed set's own types keep every benchmark's outputs on the
    contract's schema.

    Parameters
    ----------
    frame:
        :func:`outputs_frame` (plus any further columns, e.g. the log-likelihood ones).
    perturbed:
        The schema of the perturbed set the rows came from (``pyarrow.parquet.read_schema``).
    """
    table = pa.Table.from_pandas(frame, preserve_index=False)
    for name in ("draw", *CARRIED_COLUMNS):
        kind = perturbed.field(name).type
        at = table.schema.get_field_index(name)
        table = table.set_column(
            at, pa.field(name, kind), pa.array(frame[name].tolist(), kind, from_pandas=True)
        )
    return table.replace_schema_metadata(None)
