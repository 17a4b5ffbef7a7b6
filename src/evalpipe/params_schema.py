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
is allowed, and ``default=`` the value a stage uses when the file leaves the key out: this
table is the one place a default is written (``load_params`` fills them in, ``default_of`` reads
one for a library function's keyword default). A key without a default is optional: a stage
that needs it still reports it missing.
"""

from __future__ import annotations

import copy
import difflib
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from evalpipe.errors import InputError
from evalpipe.paths import check_slug


class _NoDefault:
    """Marks a key with no default (``None`` is a real default: "null")."""

    def __repr__(self) -> str:
        return "NO_DEFAULT"


NO_DEFAULT: Any = _NoDefault()


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
    default: Any = NO_DEFAULT

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
    doc: str,
    *,
    minimum: int | None = None,
    maximum: int | None = None,
    nullable: bool = False,
    default: Any = NO_DEFAULT,
) -> Value:
    return Value("int", doc, nullable, minimum, maximum, default=default)


def number(
    doc: str,
    *,
    minimum: float | None = None,
    maximum: float | None = None,
    nullable: bool = False,
    default: Any = NO_DEFAULT,
) -> Value:
    return Value("number", doc, nullable, minimum, maximum, default=default)


def probability(doc: str, *, nullable: bool = False, default: Any = NO_DEFAULT) -> Value:
    return Value("number", doc, nullable, 0.0, 1.0, default=default)


def boolean(doc: str, *, nullable: bool = False, default: Any = NO_DEFAULT) -> Value:
    return Value("bool", doc, nullable, default=default)


def text(
    doc: str,
    *,
    choices: tuple[str, ...] | None = None,
    nullable: bool = False,
    default: Any = NO_DEFAULT,
) -> Value:
    return Value("str", doc, nullable, choices=choices, default=default)


def list_of(item: Value, doc: str, *, nullable: bool = False, default: Any = NO_DEFAULT) -> Value:
    return Value("list", doc, nullable, item=item, default=default)


def anything(doc: str, *, default: Any = NO_DEFAULT) -> Value:
    return Value("any", doc, nullable=True, default=default)


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


# Where benchmark rows come from (evalpipe.benchmarks.loading reads each).
SOURCES = ("sample", "hub", "files", "hub_raw")


def validate_source(source: Any, *, where: str = "params.yaml: benchmarks.source") -> None:
    """Check a ``benchmarks.source`` value: one of ``SOURCES``, or a mapping of benchmark names
    (and ``default``) to one of them.

    Raises
    ------
    InputError
        Naming ``where``, the offending entry and the accepted values.
    """
    entries = source.items() if isinstance(source, Mapping) else [(None, source)]
    for key, value in entries:
        if not isinstance(value, str) or value not in SOURCES:
            at = f"{where}.{key}" if key is not None else where
            raise InputError(
                f"{at}: expected one of {', '.join(SOURCES)}"
                + ("" if key is not None else " or a mapping {default: ..., <benchmark>: ...}")
                + f", got {value!r}"
            )


def _benchmarks_check(cfg: Mapping[str, Any], source: str) -> None:
    if "source" in cfg:
        validate_source(cfg["source"], where=f"{source}: benchmarks.source")


def _models_check(cfg: Mapping[str, Any], source: str) -> None:
    for slug in cfg:
        check_slug(slug, where=f"{source}: models")


BACKENDS = ("vllm", "openai")


def _engine_keys() -> dict[str, Value]:
    """Keys of an inference engine, shared by ``model`` and ``judge``."""
    return {
        "backend": text("which engine runs the model", choices=BACKENDS, default="vllm"),
        "dtype": text("vLLM dtype, e.g. auto, bfloat16", default="auto"),
        "max_model_len": integer("context length in tokens", minimum=1, default=2048),
        "tensor_parallel_size": integer("GPUs per model", minimum=1, default=1),
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
                        choices=("english", "japanese"),
                    )
                ),
            },
            check=_benchmarks_check,
        ),
        "perturb": Section(
            {
                "model": text(
                    "how replaced / inserted characters are chosen",
                    choices=("uniform", "keyboard", "natural"),
                    default="uniform",
                ),
                # checked by evalpipe.perturb.eligibility.from_params
                "exclude": anything("occurrences never edited: auto or a list", default="auto"),
                "min_letters": anything("letters an English word needs: auto or n", default="auto"),
                "replace_prob": probability("chance an occurrence gets a replacement"),
                "insert_prob": probability("chance an occurrence gets an insertion"),
                "delete_prob": probability("chance an occurrence gets a deletion"),
                "transpose_prob": probability(
                    "chance two adjacent characters are swapped", default=0.0
                ),
                "conversion_prob": probability("chance of a homophone (Japanese)", default=0.0),
                "draws": integer(
                    "independent typo draws per (example, word)", minimum=1, default=1
                ),
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
            }
        ),
        "prompt": Section(
            {
                "style": text(
                    "prompt style", choices=("zero_shot", "few_shot", "cot"), default="zero_shot"
                ),
                "n_shots": integer("few-shot examples", minimum=0, nullable=True, default=3),
            }
        ),
        "scoring": Section(
            {
                # read by nothing since deltas get score intervals; accepted so that older
                # params files still load
                "bootstrap_samples": integer("ignored (was: bootstrap resamples)", minimum=1),
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
                # as scoring.bootstrap_samples: ignored, accepted for older params files
                "bootstrap_samples": integer("ignored (was: bootstrap resamples)", minimum=1),
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
                    choices=("weighted_average", "median", "majority"),
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
            }
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


def _section_defaults(spec: Section) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, child in spec.keys.items():
        if isinstance(child, Section):
            nested = _section_defaults(child)
            if nested:
                out[key] = nested
        elif child.default is not NO_DEFAULT:
            out[key] = copy.deepcopy(child.default)
    return out


def _fill(spec: Section, value: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(value)
    for key, child in spec.keys.items():
        if isinstance(child, Section):
            if key not in out:
                nested = _section_defaults(child)
                if nested:
                    out[key] = nested
            elif isinstance(out[key], Mapping):
                out[key] = _fill(child, out[key])
        elif key not in out and child.default is not NO_DEFAULT:
            out[key] = copy.deepcopy(child.default)
    return out


def with_defaults(params: Mapping[str, Any]) -> dict[str, Any]:
    """``params`` with every key the file leaves out set to its ``SCHEMA`` default.

    Sections whose keys the user names (``models``, ``benchmarks.suites``) get no entries; a
    key without a default stays absent. The input is not changed.

    Examples
    --------
    >>> filled = with_defaults({"annotation": {"min_kappa": 0.5}})
    >>> filled["annotation"]["min_kappa"], filled["annotation"]["context_window"], filled["seed"]
    (0.5, 7, 42)
    """
    return _fill(SCHEMA, params)


def _leaf(dotted: str) -> Value:
    node: Value | Section = SCHEMA
    for part in dotted.split("."):
        if not isinstance(node, Section) or part not in node.keys:
            raise KeyError(f"no key {dotted!r} in the params schema")
        node = node.keys[part]
    if not isinstance(node, Value):
        raise KeyError(f"{dotted!r} is a section, not a key")
    return node


def default_of(dotted: str) -> Any:
    """The default of one key, for a library function's keyword default.

    Examples
    --------
    >>> default_of("annotation.context_window")
    7
    >>> default_of("model_defaults.max_model_len")
    2048
    """
    value = _leaf(dotted).default
    if value is NO_DEFAULT:
        raise KeyError(f"{dotted!r} has no default in the params schema")
    return copy.deepcopy(value)


def engine_defaults() -> dict[str, Any]:
    """Every engine key's default (``model_defaults`` / ``judge``), for a partial model config."""
    keys = SCHEMA.keys["model_defaults"]
    assert isinstance(keys, Section)
    return {
        k: v for k, v in _section_defaults(keys).items() if k != "name" and k not in MODEL_LABELS
    }
