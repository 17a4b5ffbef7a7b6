"""The params table: every key params.yaml may hold, its type, range, meaning and default, in the
schema language of :mod:`evalpipe.params_schema.language`.

Adding a key
------------
Add one entry to the section's ``Section({...})`` below, e.g. in ``annotation``::

    "min_overlap": integer("pairs sharing fewer items stay out of the headline", minimum=1,
                           default=10),

This table is the one place a default is written: ``load_params`` fills them in and
``default_of`` reads one for a library function's keyword default. A key without a default is
optional: a stage that needs it still reports it missing. Rules that tie a section's keys
together (``check=``) and the choices of a key (``BENCHMARK_SOURCES``) live here with the key;
the names of the extension points (typo models, correctors, backends) come from their
registries (:mod:`evalpipe.registries`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from evalpipe.errors import InputError
from evalpipe.languages import LANGUAGES
from evalpipe.params_schema.language import (
    Section,
    Value,
    anything,
    boolean,
    integer,
    list_of,
    number,
    probability,
    text,
)
from evalpipe.paths import check_slug
from evalpipe.registries import CORRECTORS, INFERENCE_BACKENDS, TYPO_MODELS


def _perturb_check(cfg: Mapping[str, Any], source: str) -> None:
    # Each *_prob is in [0, 1] (its Value); together they are the chance that an occurrence gets
    # one typo, so they sum to at most 1 (evalpipe.perturb.ops reads them into Probabilities).
    keys = [k for k in cfg if k.endswith("_prob") and isinstance(cfg[k], int | float)]
    total = sum(float(cfg[k]) for k in keys)
    if total > 1.0 + 1e-9:
        terms = " + ".join(f"perturb.{k}" for k in keys)
        values = " + ".join(f"{float(cfg[k]):g}" for k in keys)
        raise InputError(
            f"{source}: {terms} must be at most 1 (it is the chance that an occurrence gets one "
            f"typo), found {values} = {total:g}"
        )


# Where benchmark rows come from: the choices of ``benchmarks.source`` (evalpipe.benchmarks.loading
# reads each). Not to be confused with a word list's frequency source (``words.<language>.source``).
BENCHMARK_SOURCES = ("sample", "hub", "files", "hub_raw")


def validate_source(source: Any, *, where: str = "params.yaml: benchmarks.source") -> None:
    """Check a ``benchmarks.source`` value: one of ``BENCHMARK_SOURCES``, or a mapping of benchmark names
    (and ``default``) to one of them.

    Raises
    ------
    InputError
        Naming ``where``, the offending entry and the accepted values.
    """
    entries = source.items() if isinstance(source, Mapping) else [(None, source)]
    for key, value in entries:
        if not isinstance(value, str) or value not in BENCHMARK_SOURCES:
            at = f"{where}.{key}" if key is not None else where
            raise InputError(
                f"{at}: expected one of {', '.join(BENCHMARK_SOURCES)}"
                + ("" if key is not None else " or a mapping {default: ..., <benchmark>: ...}")
                + f", got {value!r}"
            )


def _benchmarks_check(cfg: Mapping[str, Any], source: str) -> None:
    if "source" in cfg:
        validate_source(cfg["source"], where=f"{source}: benchmarks.source")


def _models_check(cfg: Mapping[str, Any], source: str) -> None:
    for slug in cfg:
        check_slug(slug, where=f"{source}: models")


def _judges_check(cfg: Mapping[str, Any], source: str) -> None:
    for slug in cfg:
        check_slug(slug, where=f"{source}: judges")


# The typo warning put before every prompt of the "warned" arm (defences.warning_prompt).
WARNING_EN = "The question may contain typos; first silently correct them, then answer."
WARNING_JA = (
    "質問には誤字が含まれている可能性があります。まず誤字を黙って訂正してから答えてください。"
)


def _defences_check(cfg: Mapping[str, Any], source: str) -> None:
    # a registered corrector, with its argument after a colon (llm:<slug>; that the slug is one
    # of `models` is checked by the defend stage, which sees the whole file)
    seen = set()
    for i, name in enumerate(cfg.get("correctors") or []):
        where = f"{source}: defences.correctors[{i}]"
        if not isinstance(name, str):
            raise InputError(f"{where}: expected a corrector name, found {name!r}")
        kind, _, argument = name.partition(":")
        CORRECTORS.check(kind, where=where)
        if argument:
            check_slug(argument, where=where)
        if name in seen:
            raise InputError(f"{where}: {name!r} is listed twice")
        seen.add(name)


BACKENDS = INFERENCE_BACKENDS.names
# The prompt styles every benchmark spec has a template and a budget for (``prompt.style``).
PROMPT_STYLES = ("zero_shot", "few_shot", "cot")


def _engine_keys() -> dict[str, Value | Section]:
    """Keys of an inference engine, shared by ``model`` and ``judge``."""
    return {
        "backend": text(
            "which engine runs the model", choices=BACKENDS, default=INFERENCE_BACKENDS.default
        ),
        "dtype": text("vLLM dtype, e.g. auto, bfloat16", default="auto"),
        "max_model_len": integer("context length in tokens", minimum=1, default=2048),
        "tensor_parallel_size": integer("GPUs per model", minimum=1, default=1),
        # a positive integer | auto: vLLM engine replicas on Ray (evalpipe.inference.ray_engine);
        # 1 runs one engine in the stage's process
        "data_parallel_size": Value(
            "any", "vLLM: engine replicas (data parallel, on Ray)", default=1
        ),
        "gpu_memory_utilization": number(
            "share of GPU (CPU build: host) memory for vLLM",
            minimum=0.0,
            maximum=1.0,
            default=0.3,
        ),
        "revision": text("hub commit or tag", nullable=True, default=None),
        "base_urls": list_of(text("URL"), "OpenAI-compatible servers", nullable=True, default=[]),
        "api_key_env": text(
            "NAME of the variable holding the API key", nullable=True, default="OPENAI_API_KEY"
        ),
        "max_concurrency": integer("openai: requests in flight", minimum=1, default=8),
        "max_retries": integer("openai: retries per request", minimum=0, default=5),
        "request_timeout_s": number(
            "openai: seconds per request", minimum=0.0, nullable=True, default=120.0
        ),
        "retry_backoff_s": number(
            "openai: first retry delay", minimum=0.0, nullable=True, default=0.5
        ),
        "structured_outputs": boolean("openai: send JSON schemas to the server", default=True),
        "compact_json": boolean("vLLM: no free whitespace in structured outputs", default=True),
        # true | false | auto (eager for small models on the CPU build)
        "enforce_eager": Value(
            "any",
            "vLLM: skip torch.compile / CUDA graphs",
            nullable=True,
            choices=(True, False, "auto"),
            default="auto",
        ),
        # true | false | auto (in-process on the CPU build)
        "in_process": Value(
            "any",
            "vLLM: run the engine in the stage's process (no spawned engine-core/worker)",
            nullable=True,
            choices=(True, False, "auto"),
            default="auto",
        ),
        # a positive integer (pin) | auto (torch's default); the in-process engine on the CPU build
        "cpu_threads": Value(
            "any", "vLLM CPU build: torch/OpenMP threads", nullable=True, default="auto"
        ),
        "checkpoint_every": integer(
            "prompts per engine call between cache saves", minimum=1, default=1024
        ),
        # checked against vllm.EngineArgs by evalpipe.inference.engine_args
        "engine_args": Section(each=anything("a vLLM engine argument"), nullable=True),
    }


# labels of a model in a ladder (generation.json, comparisons); never part of the cache key
MODEL_LABELS = {
    "family": text("label: model family, e.g. qwen2.5", nullable=True, default=None),
    "size": anything("label: size, e.g. 7B", default=None),
    "quantisation": text("label: e.g. awq-int4, gptq-int8, none", nullable=True, default=None),
}


def _language_words(min_length: int) -> Section:
    return Section(
        {
            "source": text(
                "where the frequency list comes from",
                choices=("wordfreq", "subtlex", "bccwj"),
                default="wordfreq",
            ),
            "min_length": integer(
                "shorter words are never targets (characters)", minimum=1, default=min_length
            ),
        }
    )


SCHEMA = Section(
    {
        "seed": integer("the one seed every random choice is hashed from", default=42),
        "words": Section(
            {
                "top_n": integer("target words per language", minimum=1, default=10),
                "english": _language_words(2),
                "japanese": _language_words(1),
            }
        ),
        "benchmarks": Section(
            {
                # sample | hub | files | hub_raw, or {default: ..., <benchmark>: ...}
                "source": anything("where benchmark rows come from", default="sample"),
                "max_samples": integer(
                    "examples per benchmark", minimum=1, nullable=True, default=None
                ),
                # the one declaration of what runs: dvc.yaml iterates over it; generate reads
                # exactly these sets (evalpipe.benchmarks.validate_suites checks names/languages)
                "suites": Section(
                    each=text(
                        "the language of the benchmark's target words",
                        choices=LANGUAGES,
                    )
                ),
            },
            check=_benchmarks_check,
        ),
        "perturb": Section(
            {
                # checked by evalpipe.perturb.count.validate_design / validate_counts
                "design": text(
                    "words: every occurrence of one target word; count: exactly k words",
                    choices=("words", "count"),
                    default="words",
                ),
                "counts": list_of(
                    integer("edited words per example", minimum=1),
                    "design count: the doses k",
                    default=[1, 2, 4, 8],
                ),
                # evalpipe.perturb.targeting / evalpipe.studies.targeting
                "targeting": text(
                    "design count: random words, or also the model's most important (occlusion)",
                    choices=("random", "importance"),
                    default="random",
                ),
                "model": text(
                    "how replaced / inserted characters are chosen",
                    choices=TYPO_MODELS.names,
                    default=TYPO_MODELS.default,
                ),
                # checked by evalpipe.perturb.eligibility.from_params
                "exclude": anything("occurrences never edited: auto or a list", default="auto"),
                "min_letters": anything("letters an English word needs: auto or n", default="auto"),
                "replace_prob": probability("chance an occurrence gets a replacement", default=0.2),
                "insert_prob": probability("chance an occurrence gets an insertion", default=0.2),
                "delete_prob": probability("chance an occurrence gets a deletion", default=0.2),
                "transpose_prob": probability(
                    "chance two adjacent characters are swapped", default=0.0
                ),
                "conversion_prob": probability("chance of a homophone (Japanese)", default=0.0),
                "draws": integer(
                    "independent typo draws per (example, word)", minimum=1, default=1
                ),
                # evalpipe.perturb.control: the same typos on matched random words
                "control": boolean("add the matched-control arm (words design)", default=False),
            },
            check=_perturb_check,
        ),
        # settings every entry of `models` starts from (an entry overrides any of them)
        "model_defaults": Section(
            {
                "name": text("model name or hub id (tiny-random: the smoke-test model)"),
                **_engine_keys(),
                **MODEL_LABELS,
            }
        ),
        # slug -> model: dvc.yaml runs generate@<slug> and score@<slug> for each
        "models": Section(
            each=Section(
                {
                    "name": text("model name or hub id (tiny-random: the smoke-test model)"),
                    **_engine_keys(),
                    **MODEL_LABELS,
                    # checked against benchmarks.suites by evalpipe.model_list.model_benchmarks
                    "benchmarks": list_of(
                        text("a benchmark of benchmarks.suites"),
                        "the suites this model runs (null: every one)",
                        nullable=True,
                        default=None,
                    ),
                }
            ),
            check=_models_check,
        ),
        "sampling": Section(
            {
                "temperature": number(
                    "sampling temperature", minimum=0.0, maximum=5.0, default=0.0
                ),
                # null: each benchmark's budget for the prompt style (its spec); a number
                # overrides every budget
                "max_tokens": integer(
                    "new tokens per answer", minimum=1, nullable=True, default=None
                ),
                "seed": integer("sampling seed", nullable=True, default=None),
                # n > 1 (temperature > 0): every prompt n times, repeat r at its own hashed seed
                # (evalpipe.studies.repeats), so the run-to-run spread sits beside the typo effect
                "repeats": integer("sampled answers per prompt", minimum=1, default=1),
            }
        ),
        "prompt": Section(
            {
                "style": text("prompt style", choices=PROMPT_STYLES, default="zero_shot"),
                "n_shots": integer("few-shot examples", minimum=0, nullable=True, default=3),
                # n > 1 (style few_shot): n hashed selections of the demonstrations per prompt
                "fewshot_draws": integer("few-shot selections per prompt", minimum=1, default=1),
                # names of the benchmarks' prompt.templates: each an arm template:<name>, the
                # clean prompt reworded, beside the typo effect (evalpipe.studies.repeats)
                "templates": list_of(text("template name"), "instruction templates", default=[]),
            }
        ),
        "scoring": Section(
            {
                # deprecated and ignored: read by nothing since deltas get score intervals
                # (docs/scoring.md "Intervals"); accepted so that older params files still load
                "bootstrap_samples": integer(
                    "deprecated, ignored (was: bootstrap resamples)", minimum=1
                ),
                "confidence_level": number(
                    "interval level", minimum=0.0, maximum=1.0, default=0.95
                ),
                "sentiment_strict": boolean(
                    "out-of-label sentiment answers count as wrong", default=True
                ),
                "method": text(
                    "how answers are scored: parse the generated text, pick the most likely "
                    "choice by log-likelihood (choice benchmarks), or both",
                    choices=("generate", "loglikelihood", "both"),
                    default="generate",
                ),
                # the non-inferiority gate of every view (docs/scoring.md "What the field
                # reports"): pass when the one-sided lower bound of the change is above -margin
                "margin": number(
                    "largest acceptable accuracy loss under typos (0.02 = 2 points); null: no gate",
                    minimum=0.0,
                    maximum=1.0,
                    nullable=True,
                    default=0.02,
                ),
                # docs/scoring.md "Perplexity under typos": generate scores the perturbable
                # text's prompt log-probabilities; score writes metrics/<model>/perplexity.json
                "perplexity": boolean(
                    "score the perplexity of the perturbable text, original vs perturbed",
                    default=False,
                ),
                # docs/scoring.md "Calibration under typos": ECE, Brier and KL of the
                # log-likelihood views' choice probabilities, from their existing scores (no
                # request); off by default as its nested keys widen `dvc metrics show` past one
                # narrow row per file; score writes metrics/<model>/readouts.json when a model has
                # such views
                "calibration": boolean(
                    "calibration (ECE, Brier) and KL of the choice probabilities, clean vs typo'd",
                    default=False,
                ),
                # docs/scoring-studies.md "First-token KL": every answer request also asks for the
                # first answer token's k most probable tokens (a cache-key field only when > 0);
                # score writes the first_token_kl block of metrics/<model>/readouts.json
                "top_logprobs": integer(
                    "first-token top-k log-probabilities per answer (0 = off) for the first-token "
                    "KL, clean vs typo'd",
                    minimum=0,
                    maximum=20,
                    default=0,
                ),
            }
        ),
        # input correctors and a warning preamble: more arms beside the plain typo'd prompts
        # (docs/defences.md); off by default
        "defences": Section(
            {
                "correctors": list_of(
                    text("spelling (pyspellchecker, English) or llm:<slug of models>"),
                    "correctors run on every clean and typo'd prompt (condition corrected:<name>)",
                    nullable=True,
                    default=[],
                ),
                "warning_prompt": boolean(
                    "every prompt also runs behind a typo warning (condition warned)",
                    default=False,
                ),
                "warning_text": Section(
                    {
                        "english": text(
                            "the warning preamble of English prompts", default=WARNING_EN
                        ),
                        "japanese": text(
                            "the warning preamble of Japanese prompts", default=WARNING_JA
                        ),
                    }
                ),
                "llm_max_tokens": integer(
                    "llm correctors: new tokens per corrected text", minimum=1, default=512
                ),
            },
            check=_defences_check,
        ),
        # format arms of choice benchmarks: option orders, label sets, the incorrect option
        # (docs/scoring-studies.md "Option order, labels and the incorrect option"); off by default
        "formats": Section(
            {
                "orders": text(
                    "option orders as arms: none, cyclic (the gold at every position) or all "
                    "(every permutation, at most 24)",
                    choices=("none", "cyclic", "all"),
                    default="none",
                ),
                "labels": list_of(
                    text(
                        "a label set",
                        # evalpipe.arms.FORMAT_LABELS (a test holds the two equal)
                        choices=(
                            "letters",
                            "lowercase",
                            "digits",
                            "symbols",
                            "katakana",
                            "circled",
                        ),
                    ),
                    "label sets as arms (katakana and circled: Japanese benchmarks only)",
                    nullable=True,
                    default=[],
                ),
                "incorrect": boolean(
                    "an arm asking for an option that is not correct", default=False
                ),
            }
        ),
        # continuations as arms (docs/perturbation.md "Continuation designs"): the model continues
        # a prefix cut from the clean and typo'd chain-of-thought answers; off by default
        "continuation": Section(
            {
                "designs": list_of(
                    text(
                        "a continuation design",
                        choices=("cot_swap", "answer_line_deletion", "prefix_scan"),
                    ),
                    "designs run as arms (empty: off)",
                    nullable=True,
                    default=[],
                ),
                "prefix_budgets": list_of(
                    number("tokens (integer) or share (decimal in [0, 1]) of the clean reasoning"),
                    "prefix_scan: the clean-reasoning prefixes the typo'd question is continued from",
                    default=[0, 8, 16, 32, 64, 0.5, 1.0],
                ),
                "answer_tokens": integer(
                    "cot_swap / answer_line_deletion: most tokens of the regenerated answer span",
                    minimum=1,
                    default=16,
                ),
            }
        ),
        "impact": Section(
            {
                "small_n": integer(
                    "rows with fewer paired examples are flagged small_n", minimum=1, default=30
                ),
                "top_n_plot": integer(
                    "words per language in the top-N plots", minimum=1, default=20
                ),
                # as scoring.bootstrap_samples: deprecated, ignored, accepted for older files
                "bootstrap_samples": integer(
                    "deprecated, ignored (was: bootstrap resamples)", minimum=1
                ),
            }
        ),
        "report": Section(
            {
                "top_words": integer(
                    "words per language in the forest plot", minimum=1, default=20
                ),
                "examples_per_benchmark": integer(
                    "wrong answers on perturbed prompts shown per benchmark", minimum=0, default=3
                ),
            }
        ),
        "annotation": Section(
            {
                "min_kappa": number(
                    "agreement below this fails", minimum=-1.0, maximum=1.0, default=0.6
                ),
                "target_kappa": number(
                    "agreement aimed for", minimum=-1.0, maximum=1.0, default=0.8
                ),
                "min_confidence": probability(
                    "annotations below this confidence are dropped", default=0.7
                ),
                "context_window": integer("dialogue turns shown", minimum=0, default=7),
                "merge_method": text(
                    "how ratings merge",
                    choices=("weighted_average", "median", "majority", "kappa_weighted"),
                    default="weighted_average",
                ),
                "bootstrap_samples": integer("bootstrap resamples", minimum=1, default=1000),
                "confidence_level": number(
                    "interval level", minimum=0.0, maximum=1.0, default=0.95
                ),
                "max_item_range": integer("largest score span on an axis", minimum=0, default=1),
                "min_annotators": integer("fewest human annotators per item", minimum=1, default=2),
                "outlier_bias": number(
                    "mean offset that flags an annotator", minimum=0.0, default=0.5
                ),
                "min_pair_overlap": integer(
                    "pairs sharing fewer items stay out of the headline kappa",
                    minimum=1,
                    default=10,
                ),
                "max_consistency_rate": probability(
                    "quality gate: largest share of annotations breaking a consistency rule",
                    default=0.1,
                ),
                "require_qualification": boolean(
                    "web app: annotators pass the qualification test before the real queue",
                    default=True,
                ),
                "monitor_window_days": integer(
                    "agreement-over-time window in days (7 = ISO weeks)", minimum=1, default=7
                ),
                "tasks_per_benchmark": integer(
                    "model outputs per benchmark turned into tasks",
                    minimum=1,
                    nullable=True,
                    default=2,
                ),
                "variants": text(
                    "which outputs may become tasks",
                    choices=("original", "perturbed", "all"),
                    default="original",
                ),
                "benchmarks": list_of(
                    text("benchmark name"), "benchmarks", nullable=True, default=None
                ),
                "model": text(
                    "whose outputs become tasks: a slug of `models` (null: the first)",
                    nullable=True,
                    default=None,
                ),
                "dialogues": list_of(
                    text("JSONL path or 'sample'"),
                    "dialogue files",
                    nullable=True,
                    default=["sample"],
                ),
                "overlap": integer("annotators per task", minimum=1, default=2),
                "reannotation_high_kappa": number(
                    "item kappa from which a rejected item goes back to the same raters",
                    minimum=-1.0,
                    maximum=1.0,
                    default=0.4,
                ),
                "reannotation_medium_kappa": number(
                    "item kappa from which more raters are added (below: revise the item)",
                    minimum=-1.0,
                    maximum=1.0,
                    default=0.2,
                ),
                "rater_min_items": integer(
                    "ratings an annotator needs before the straight-liner, variance and speed "
                    "flags judge them",
                    minimum=1,
                    default=10,
                ),
                "fast_ratio": number(
                    "flag an annotator whose median seconds per item is below this share of "
                    "the team's median",
                    minimum=0.0,
                    maximum=1.0,
                    default=0.33,
                ),
                "rater_variance_min": number(
                    "flag an annotator whose score variance on an axis is below this (but not 0)",
                    minimum=0.0,
                    default=0.05,
                ),
                "rater_variance_max": number(
                    "flag an annotator whose score variance on an axis is above this",
                    minimum=0.0,
                    default=2.0,
                ),
                "gold_file": text(
                    "web app: gold items (task + reference per line) hidden in the queues",
                    nullable=True,
                    default=None,
                ),
                "gold_share": number(
                    "web app: share of each queue that is gold items",
                    minimum=0.0,
                    maximum=0.9,
                    default=0.1,
                ),
                "review_step": boolean(
                    "web app: show a rating for review before it is saved", default=False
                ),
                "autosave_seconds": integer(
                    "web app: seconds between draft autosaves (0: never)", minimum=0, default=30
                ),
                "session_timeout_minutes": number(
                    "web app: sign out after this long without a request (0: never)",
                    minimum=0.0,
                    default=30.0,
                ),
            }
        ),
        "sycophancy": Section(
            {
                "dialogues": list_of(
                    text("JSONL path or 'sample'"),
                    "dialogue files every model answers",
                    default=["sample"],
                ),
                "threshold": integer(
                    "a reply counts as sycophantic on an axis at or above this rating",
                    minimum=1,
                    maximum=5,
                    default=3,
                ),
                # a share in (0, 1), or a count of dialogues (>= 1)
                "human_sample": number(
                    "dialogues whose replies people rate: a share (< 1) or a count (>= 1)",
                    minimum=0.0,
                    default=0.2,
                ),
                "max_tokens": integer("new tokens per reply", minimum=1, default=256),
                "epsilon": probability(
                    "alternative annotator test: the margin the judge may lose by", default=0.15
                ),
                "confidence_level": number(
                    "level of every interval", minimum=0.5, maximum=0.999, default=0.95
                ),
            }
        ),
        # slug -> judge settings over `judge` (each entry overrides any key of it); {} or
        # absent: `judge` alone, a panel of one
        "judges": Section(
            each=Section(
                {
                    "model": text("judge model name or hub id"),
                    "temperature": number("sampling temperature", minimum=0.0, maximum=5.0),
                    "max_tokens": integer("new tokens per rating", minimum=1),
                    **_engine_keys(),
                }
            ),
            nullable=True,
            check=_judges_check,
        ),
        "judge": Section(
            {
                "model": text("judge model name or hub id", default="tiny-random"),
                "temperature": number(
                    "sampling temperature", minimum=0.0, maximum=5.0, default=0.0
                ),
                "max_tokens": integer("new tokens per rating", minimum=1, default=384),
                **_engine_keys(),
            }
        ),
    }
)
