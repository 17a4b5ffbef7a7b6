"""Every key params.yaml may hold: its type, range and meaning, in one declarative table.

``evalpipe.params.load_params`` checks a params file against ``SCHEMA`` before any stage reads
it, so a misspelt key (``min_kapa``) or a wrong type (``min_kappa: "0.6"``) stops every stage
with a message naming the file, the dotted key and what was expected, instead of being ignored
or crashing later with a raw TypeError.

Adding a key
------------
Add one entry to the section's ``Section({...})`` below, e.g. in ``annotation``::

    "min_overlap": integer("pairs sharing fewer items stay out of the headline", minimum=1),

Constructors: ``integer``, ``number``, ``probability``, ``boolean``, ``text`` (optionally with
``choices``), ``list_of(item)``, ``anything`` (a value another module validates), and
``Section({...})`` for a nested mapping (``Section(each=...)`` when the keys are names the user
chooses, as in ``benchmarks.suites``). Every constructor takes ``nullable=True`` when ``null``
is allowed. A key declared here is optional: a stage that needs it still reports it missing.
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from evalpipe.errors import InputError


@dataclass(frozen=True)
class Value:
    """One leaf key: ``kind`` is int | number | bool | str | list | any."""

    kind: str
    doc: str
    nullable: bool = False
    minimum: float | None = None
    maximum: float | None = None
    choices: tuple[Any, ...] | None = None
    item: Value | None = None  # for lists: every element

    def expected(self) -> str:
        """What a valid value looks like, for error messages."""
        if self.choices is not None:
            text = "one of " + ", ".join(str(c) for c in self.choices)
        elif self.kind == "list":
            text = f"a list (each {self.item.expected()})" if self.item else "a list"
        else:
            text = {
                "int": "an integer",
                "number": "a number",
                "bool": "true or false",
                "str": "a string",
                "any": "a value",
            }[self.kind]
            if self.minimum is not None and self.maximum is not None:
                text += f" in [{self.minimum:g}, {self.maximum:g}]"
            elif self.minimum is not None:
                text += f" >= {self.minimum:g}"
            elif self.maximum is not None:
                text += f" <= {self.maximum:g}"
        return text + (" or null" if self.nullable else "")


@dataclass(frozen=True)
class Section:
    """A mapping: fixed ``keys``, or (``each``) names the user chooses, all shaped alike.

    ``check`` sees the whole section after its keys passed, for rules that tie keys together
    (e.g. the three typo probabilities sum to at most 1); it raises InputError.
    """

    keys: Mapping[str, Value | Section] = field(default_factory=dict)
    doc: str = ""
    each: Value | Section | None = None
    nullable: bool = False
    check: Callable[[Mapping[str, Any], str], None] | None = None

    def expected(self) -> str:
        return "a mapping" + (" or null" if self.nullable else "")


def integer(
    doc: str, *, minimum: int | None = None, maximum: int | None = None, nullable: bool = False
) -> Value:
    return Value("int", doc, nullable, minimum, maximum)


def number(
    doc: str,
    *,
    minimum: float | None = None,
    maximum: float | None = None,
    nullable: bool = False,
) -> Value:
    return Value("number", doc, nullable, minimum, maximum)


def probability(doc: str, *, nullable: bool = False) -> Value:
    return Value("number", doc, nullable, 0.0, 1.0)


def boolean(doc: str, *, nullable: bool = False) -> Value:
    return Value("bool", doc, nullable)


def text(doc: str, *, choices: tuple[str, ...] | None = None, nullable: bool = False) -> Value:
    return Value("str", doc, nullable, choices=choices)


def list_of(item: Value, doc: str, *, nullable: bool = False) -> Value:
    return Value("list", doc, nullable, item=item)


def anything(doc: str) -> Value:
    return Value("any", doc, nullable=True)


def _perturb_check(cfg: Mapping[str, Any], source: str) -> None:
    from evalpipe.perturb.ops import validate_probabilities  # perturb imports are heavier

    validate_probabilities(cfg, source=source)


def _benchmarks_check(cfg: Mapping[str, Any], source: str) -> None:
    from evalpipe.benchmarks.loading import validate_source  # pandas/pyarrow imports

    if "source" in cfg:
        validate_source(cfg["source"], where=f"{source}: benchmarks.source")


def _models_check(cfg: Mapping[str, Any], source: str) -> None:
    from evalpipe.inference.model_list import check_slug

    for slug in cfg:
        check_slug(slug, where=f"{source}: models")


BACKENDS = ("vllm", "openai")


def _engine_keys() -> dict[str, Value]:
    """Keys of an inference engine, shared by ``model`` and ``judge``."""
    return {
        "backend": text("which engine runs the model", choices=BACKENDS),
        "dtype": text("vLLM dtype, e.g. auto, bfloat16"),
        "max_model_len": integer("context length in tokens", minimum=1),
        "tensor_parallel_size": integer("GPUs per model", minimum=1),
        "gpu_memory_utilization": number(
            "share of GPU (CPU build: host) memory for vLLM", minimum=0.0, maximum=1.0
        ),
        "revision": text("hub commit or tag", nullable=True),
        "base_urls": list_of(text("URL"), "OpenAI-compatible servers", nullable=True),
        "api_key_env": text("NAME of the variable holding the API key", nullable=True),
        "max_concurrency": integer("openai: requests in flight", minimum=1),
        "max_retries": integer("openai: retries per request", minimum=0),
        "request_timeout_s": number("openai: seconds per request", minimum=0.0, nullable=True),
        "retry_backoff_s": number("openai: first retry delay", minimum=0.0, nullable=True),
        "structured_outputs": boolean("openai: send JSON schemas to the server"),
        "compact_json": boolean("vLLM: no free whitespace in structured outputs"),
        # true | false | auto (eager for small models on the CPU build)
        "enforce_eager": Value(
            "any",
            "vLLM: skip torch.compile / CUDA graphs",
            nullable=True,
            choices=(True, False, "auto"),
        ),
        # true | false | auto (in-process on the CPU build)
        "in_process": Value(
            "any",
            "vLLM: run the engine in the stage's process (no spawned engine-core/worker)",
            nullable=True,
            choices=(True, False, "auto"),
        ),
        # a positive integer (pin) | auto (torch's default); the in-process engine on the CPU build
        "cpu_threads": Value("any", "vLLM CPU build: torch/OpenMP threads", nullable=True),
        "checkpoint_every": integer("prompts per engine call between cache saves", minimum=1),
    }


_LANGUAGE_WORDS = Section(
    {
        "source": text(
            "where the frequency list comes from", choices=("wordfreq", "subtlex", "bccwj")
        ),
        "min_length": integer("shorter words are never targets (characters)", minimum=1),
    }
)

SCHEMA = Section(
    {
        "seed": integer("the one seed every random choice is hashed from"),
        "words": Section(
            {
                "top_n": integer("target words per language", minimum=1),
                "english": _LANGUAGE_WORDS,
                "japanese": _LANGUAGE_WORDS,
            }
        ),
        "benchmarks": Section(
            {
                # sample | hub | files | hub_raw, or {default: ..., <benchmark>: ...}
                "source": anything("where benchmark rows come from"),
                "max_samples": integer("examples per benchmark", minimum=1, nullable=True),
                # the one declaration of what runs: dvc.yaml iterates over it; generate reads
                # exactly these sets (evalpipe.benchmarks.validate_suites checks names/languages)
                "suites": Section(
                    each=text(
                        "the language of the benchmark's target words",
                        choices=("english", "japanese"),
                    )
                ),
            },
            check=_benchmarks_check,
        ),
        "perturb": Section(
            {
                "model": text(
                    "how replaced / inserted characters are chosen", choices=("uniform", "keyboard")
                ),
                "replace_prob": probability("chance an occurrence gets a replacement"),
                "insert_prob": probability("chance an occurrence gets an insertion"),
                "delete_prob": probability("chance an occurrence gets a deletion"),
                "transpose_prob": probability("chance two adjacent characters are swapped"),
                "conversion_prob": probability("chance of a homophone (Japanese)"),
                "draws": integer("independent typo draws per (example, word)", minimum=1),
            },
            check=_perturb_check,
        ),
        # settings every entry of `models` starts from (an entry overrides any of them)
        "model_defaults": Section(
            {
                "name": text("model name or hub id (tiny-random: the smoke-test model)"),
                **_engine_keys(),
            }
        ),
        # slug -> model: dvc.yaml runs generate@<slug> and score@<slug> for each
        "models": Section(
            each=Section(
                {
                    "name": text("model name or hub id (tiny-random: the smoke-test model)"),
                    **_engine_keys(),
                }
            ),
            check=_models_check,
        ),
        "sampling": Section(
            {
                "temperature": number("sampling temperature", minimum=0.0, maximum=5.0),
                # null: each benchmark's budget for the prompt style (its spec); a number
                # overrides every budget
                "max_tokens": integer("new tokens per answer", minimum=1, nullable=True),
                "seed": integer("sampling seed", nullable=True),
            }
        ),
        "prompt": Section(
            {
                "style": text("prompt style", choices=("zero_shot", "few_shot", "cot")),
                "n_shots": integer("few-shot examples", minimum=0, nullable=True),
            }
        ),
        "scoring": Section(
            {
                "bootstrap_samples": integer("bootstrap resamples", minimum=1),
                "confidence_level": number("interval level", minimum=0.0, maximum=1.0),
                "sentiment_strict": boolean("out-of-label sentiment answers count as wrong"),
                "method": text(
                    "how answers are scored: parse the generated text, pick the most likely "
                    "choice by log-likelihood (choice benchmarks), or both",
                    choices=("generate", "loglikelihood", "both"),
                ),
            }
        ),
        "impact": Section(
            {
                "small_n": integer(
                    "rows with fewer paired examples are flagged small_n", minimum=1
                ),
                "top_n_plot": integer("words per language in the top-N plots", minimum=1),
                "bootstrap_samples": integer("bootstrap resamples of each delta", minimum=1),
            }
        ),
        "report": Section(
            {
                "top_words": integer("words per language in the forest plot", minimum=1),
                "examples_per_benchmark": integer(
                    "wrong answers on perturbed prompts shown per benchmark", minimum=0
                ),
            }
        ),
        "annotation": Section(
            {
                "min_kappa": number("agreement below this fails", minimum=-1.0, maximum=1.0),
                "target_kappa": number("agreement aimed for", minimum=-1.0, maximum=1.0),
                "min_confidence": probability("annotations below this confidence are dropped"),
                "context_window": integer("dialogue turns shown", minimum=0),
                "merge_method": text(
                    "how ratings merge", choices=("weighted_average", "median", "majority")
                ),
                "bootstrap_samples": integer("bootstrap resamples", minimum=1),
                "confidence_level": number("interval level", minimum=0.0, maximum=1.0),
                "max_item_range": integer("largest score span on an axis", minimum=0),
                "min_annotators": integer("fewest human annotators per item", minimum=1),
                "outlier_bias": number("mean offset that flags an annotator", minimum=0.0),
                "min_pair_overlap": integer(
                    "pairs sharing fewer items stay out of the headline kappa", minimum=1
                ),
                "max_consistency_rate": probability(
                    "quality gate: largest share of annotations breaking a consistency rule"
                ),
                "require_qualification": boolean(
                    "web app: annotators pass the qualification test before the real queue"
                ),
                "monitor_window_days": integer(
                    "agreement-over-time window in days (7 = ISO weeks)", minimum=1
                ),
                "tasks_per_benchmark": integer(
                    "model outputs per benchmark turned into tasks", minimum=1, nullable=True
                ),
                "variants": text(
                    "which outputs may become tasks", choices=("original", "perturbed", "all")
                ),
                "benchmarks": list_of(text("benchmark name"), "benchmarks", nullable=True),
                "model": text(
                    "whose outputs become tasks: a slug of `models` (null: the first)",
                    nullable=True,
                ),
                "dialogues": list_of(
                    text("JSONL path or 'sample'"), "dialogue files", nullable=True
                ),
                "overlap": integer("annotators per task", minimum=1),
            }
        ),
        "judge": Section(
            {
                "model": text("judge model name or hub id"),
                "temperature": number("sampling temperature", minimum=0.0, maximum=5.0),
                "max_tokens": integer("new tokens per rating", minimum=1),
                **_engine_keys(),
            }
        ),
    }
)


def _type_ok(spec: Value, value: Any) -> bool:
    if spec.kind == "any":
        return True
    if spec.kind == "bool":
        return isinstance(value, bool)
    if isinstance(value, bool):  # YAML true is not the integer 1 here
        return False
    if spec.kind == "int":
        return isinstance(value, int)
    if spec.kind == "number":
        return isinstance(value, int | float) and not math.isnan(value)
    if spec.kind == "str":
        return isinstance(value, str)
    return isinstance(value, list)


def _describe(value: Any) -> str:
    kind = {str: "a string", bool: "a boolean", list: "a list", dict: "a mapping"}.get(
        type(value), type(value).__name__
    )
    return f"{value!r} ({kind})"


def _check_value(spec: Value, value: Any, dotted: str, source: str, errors: list[str]) -> None:
    if value is None:
        if not spec.nullable:
            errors.append(f"{source}: {dotted} must be {spec.expected()}, found null")
        return
    bad = not _type_ok(spec, value)
    if not bad and spec.choices is not None:
        bad = value not in spec.choices
    if not bad and spec.kind in ("int", "number"):
        bad = (spec.minimum is not None and value < spec.minimum) or (
            spec.maximum is not None and value > spec.maximum
        )
    if bad:
        errors.append(f"{source}: {dotted} must be {spec.expected()}, found {_describe(value)}")
        return
    if spec.kind == "list" and spec.item is not None:
        for i, element in enumerate(value):
            _check_value(spec.item, element, f"{dotted}[{i}]", source, errors)


def _check_section(spec: Section, value: Any, dotted: str, source: str, errors: list[str]) -> None:
    where = dotted or "the top level"
    if value is None:
        if not spec.nullable and dotted:
            errors.append(f"{source}: {where} must be {spec.expected()}, found null")
        return
    if not isinstance(value, Mapping):
        errors.append(f"{source}: {where} must be {spec.expected()}, found {_describe(value)}")
        return
    before = len(errors)
    for key, child_value in value.items():
        child_dotted = f"{dotted}.{key}" if dotted else str(key)
        child = spec.each if spec.each is not None else spec.keys.get(str(key))
        if child is None:
            errors.append(_unknown(spec, str(key), child_dotted, dotted, source))
        elif isinstance(child, Section):
            _check_section(child, child_value, child_dotted, source, errors)
        else:
            _check_value(child, child_value, child_dotted, source, errors)
    if spec.check is not None and len(errors) == before:
        try:
            spec.check(value, source)
        except InputError as exc:
            errors.append(str(exc))


def _unknown(spec: Section, key: str, dotted: str, parent: str, source: str) -> str:
    known = sorted(spec.keys)
    close = difflib.get_close_matches(key, known, n=1, cutoff=0.6)
    hint = f" (did you mean '{f'{parent}.' if parent else ''}{close[0]}'?)" if close else ""
    return (
        f"{source}: unknown key '{dotted}'{hint}; {parent or 'the top level'} takes "
        f"{', '.join(known)}. A new key is declared in src/evalpipe/params_schema.py"
    )


def validate_params(params: Mapping[str, Any], *, source: str = "params.yaml") -> None:
    """Check every key of a params mapping against ``SCHEMA``.

    Parameters
    ----------
    params : the parsed params file.
    source : the file name used in messages.

    Raises
    ------
    InputError listing every problem, one per line: an unknown key (with the closest known key
    and the keys its section takes), a value of the wrong type or outside its range (with what
    was expected and what was found), or a section rule that fails (e.g. typo probabilities that
    sum above 1).

    Examples
    --------
    >>> validate_params({"annotation": {"min_kappa": 0.6}})
    >>> try:
    ...     validate_params({"annotation": {"min_kapa": 0.6}})
    ... except InputError as exc:
    ...     print(str(exc).split(";")[0])
    params.yaml: unknown key 'annotation.min_kapa' (did you mean 'annotation.min_kappa'?)
    """
    errors: list[str] = []
    _check_section(SCHEMA, params, "", source, errors)
    if errors:
        raise InputError("\n".join(errors))
