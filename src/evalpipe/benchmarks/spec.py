"""The benchmark registry: one declarative spec per benchmark.

A spec says where the data comes from (a Hugging Face dataset id, its configs and splits, or the
bundled sample files), how a raw row becomes an example of the common schema (``mapping``), which
parser and metric score it, and how many tokens an answer needs. Prompt wording lives in
``evalpipe.benchmarks.prompts``; loading in ``evalpipe.benchmarks.loading``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from evalpipe.benchmarks import mapping
from evalpipe.errors import InputError

LANGUAGES = ("english", "japanese")

NLI_LABELS = ["entailment", "contradiction", "neutral"]
SENTIMENT_LABELS = ["positive", "negative"]

IMDB_JSON_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "label": {"type": "string", "enum": list(SENTIMENT_LABELS)},
        "confidence": {"type": "number", "minimum": 0.0, "maximum": 1.0},
        "reason": {"type": "string"},
    },
    "required": ["label", "confidence", "reason"],
    "additionalProperties": False,
}

BBH_SUBTASKS = (
    "boolean_expressions",
    "causal_judgement",
    "date_understanding",
    "disambiguation_qa",
    "dyck_languages",
    "formal_fallacies",
    "geometric_shapes",
    "hyperbaton",
    "logical_deduction_five_objects",
    "logical_deduction_seven_objects",
    "logical_deduction_three_objects",
    "movie_recommendation",
    "multistep_arithmetic_two",
    "navigate",
    "object_counting",
    "penguins_in_a_table",
    "reasoning_about_colored_objects",
    "ruin_names",
    "salient_translation_error_detection",
    "snarks",
    "sports_understanding",
    "temporal_sequences",
    "tracking_shuffled_objects_five_objects",
    "tracking_shuffled_objects_seven_objects",
    "tracking_shuffled_objects_three_objects",
    "web_of_lies",
    "word_sorting",
)

MMLU_SUBJECTS = (
    "abstract_algebra", "anatomy", "astronomy", "business_ethics", "clinical_knowledge",
    "college_biology", "college_chemistry", "college_computer_science", "college_mathematics",
    "college_medicine", "college_physics", "computer_security", "conceptual_physics",
    "econometrics", "electrical_engineering", "elementary_mathematics", "formal_logic",
    "global_facts", "high_school_biology", "high_school_chemistry",
    "high_school_computer_science", "high_school_european_history", "high_school_geography",
    "high_school_government_and_politics", "high_school_macroeconomics",
    "high_school_mathematics", "high_school_microeconomics", "high_school_physics",
    "high_school_psychology", "high_school_statistics", "high_school_us_history",
    "high_school_world_history", "human_aging", "human_sexuality", "international_law",
    "jurisprudence", "logical_fallacies", "machine_learning", "management", "marketing",
    "medical_genetics", "miscellaneous", "moral_disputes", "moral_scenarios", "nutrition",
    "philosophy", "prehistory", "professional_accounting", "professional_law",
    "professional_medicine", "professional_psychology", "public_relations", "security_studies",
    "sociology", "us_foreign_policy", "virology", "world_religions",
)  # fmt: skip


@dataclass(frozen=True)
class HubSource:
    """Where a benchmark lives on the Hugging Face Hub.

    ``configs`` are loaded one after the other (BBH: one config per subtask). ``fewshot_split``
    is None when the dataset has only the evaluated split; then ``fewshot_holdout`` examples per
    subtask are taken out of the evaluated split and never evaluated.
    """

    dataset: str
    configs: tuple[str | None, ...]
    split: str
    fewshot_split: str | None
    fewshot_holdout: int = 0
    size: int | None = None  # rows of the evaluated split, for `--list` (None: not known offline)
    # {split: file pattern in the repository}: load only these files, so that a config's other
    # splits are never built (cais/mmlu "all" would also build its 161 MB auxiliary_train)
    data_files: Mapping[str, str] | None = None


@dataclass(frozen=True)
class BenchmarkSpec:
    """One benchmark: source, mapping to the common schema, scoring and generation settings.

    Attributes used by other stages (docs/architecture.md): ``name, language, task_type,
    max_new_tokens, parser, parser_options, metric, labels, json_schema``.
    """

    name: str
    language: str
    task_type: str
    max_new_tokens: int
    parser: str
    parser_options: dict[str, Any]
    metric: str
    labels: list[str] | None
    json_schema: dict[str, Any] | None
    description: str
    hub: HubSource | None
    mapper: mapping.Mapper
    cot_max_new_tokens: int = 512
    kind: str = "builtin"  # builtin | local
    local: dict[str, Any] | None = field(default=None, repr=False)

    def max_tokens(self, style: str) -> int:
        """Tokens an answer needs in prompt ``style``: chain of thought needs room to reason.

        Parameters
        ----------
        style : zero_shot | few_shot | cot

        Returns
        -------
        int
        """
        return self.cot_max_new_tokens if style == "cot" else self.max_new_tokens

    def parser_kwargs(self, subtask: str | None = None) -> dict[str, Any]:
        """Keyword arguments for ``parse_answer(spec.parser, text, **kwargs)`` for one row.

        BBH's parser dispatches on the subtask, which is per row, so it is added here.

        Parameters
        ----------
        subtask : the row's ``subtask`` (BBH subtask, MMLU subject) or None.

        Returns
        -------
        dict
        """
        kwargs = dict(self.parser_options)
        if self.parser == "bbh" and subtask:
            kwargs["subtask"] = subtask
        return kwargs


_LLM_JP_EVAL = "zenless-lab/llm-jp-eval"

_BUILTIN: tuple[BenchmarkSpec, ...] = (
    BenchmarkSpec(
        name="gsm8k",
        language="english",
        task_type="numeric",
        max_new_tokens=256,
        parser="numeric",
        parser_options={},
        metric="exact_match",
        labels=None,
        json_schema=None,
        description="Grade-school math word problems; gold is the number after '####'.",
        hub=HubSource("openai/gsm8k", ("main",), "test", "train", size=1319),
        mapper=mapping.gsm8k,
    ),
    BenchmarkSpec(
        name="bbh",
        language="english",
        task_type="bbh",
        max_new_tokens=32,
        parser="bbh",
        parser_options={},
        metric="exact_match",
        labels=None,
        json_schema=None,
        description="BIG-Bench Hard, 27 subtasks; 'Options:' blocks are kept out of the fields.",
        hub=HubSource("SaylorTwift/bbh", BBH_SUBTASKS, "test", None, fewshot_holdout=3, size=6511),
        mapper=mapping.bbh,
    ),
    BenchmarkSpec(
        name="mmlu",
        language="english",
        task_type="mc",
        max_new_tokens=32,
        parser="mc_letter",
        parser_options={"labels": ["A", "B", "C", "D"], "digit_map": None},
        metric="exact_match",
        labels=["A", "B", "C", "D"],
        json_schema=None,
        description="57-subject multiple choice (A-D); few-shot examples from the dev split.",
        hub=HubSource(
            "cais/mmlu",
            ("all",),
            "test",
            "dev",
            size=14042,
            data_files={"test": "all/test-*", "dev": "all/dev-*"},
        ),
        mapper=mapping.mmlu,
    ),
    BenchmarkSpec(
        name="imdb",
        language="english",
        task_type="sentiment",
        max_new_tokens=128,
        parser="json_label",
        parser_options={"labels": list(SENTIMENT_LABELS), "strict": True},
        metric="accuracy",
        labels=list(SENTIMENT_LABELS),
        json_schema=IMDB_JSON_SCHEMA,
        description="Movie-review sentiment, zero-shot with a JSON answer {label, confidence, reason}.",
        hub=HubSource("stanfordnlp/imdb", (None,), "test", "train", size=25000),
        mapper=mapping.imdb,
    ),
    BenchmarkSpec(
        name="jamp",
        language="japanese",
        task_type="nli",
        max_new_tokens=3,
        parser="nli",
        parser_options={"labels": list(NLI_LABELS)},
        metric="exact_match",
        labels=list(NLI_LABELS),
        json_schema=None,
        description="Temporal NLI (llm-jp-eval processed); 前提/仮説 -> entailment/contradiction/neutral.",
        hub=HubSource(_LLM_JP_EVAL, ("jamp",), "test", "train"),
        mapper=mapping.llm_jp_nli,
    ),
    BenchmarkSpec(
        name="jnli",
        language="japanese",
        task_type="nli",
        max_new_tokens=3,
        parser="nli",
        parser_options={"labels": list(NLI_LABELS)},
        metric="exact_match",
        labels=list(NLI_LABELS),
        json_schema=None,
        description="JGLUE JNLI v1.1 via llm-jp-eval (JGLUE valid as test).",
        hub=HubSource(_LLM_JP_EVAL, ("jnli",), "test", "train"),
        mapper=mapping.llm_jp_nli,
    ),
    BenchmarkSpec(
        name="niilc",
        language="japanese",
        task_type="open_qa",
        max_new_tokens=180,
        parser="extractive",
        parser_options={},
        metric="char_f1",
        labels=None,
        json_schema=None,
        description="NIILC encyclopaedic QA (llm-jp-eval); several answers joined by ','.",
        hub=HubSource(_LLM_JP_EVAL, ("niilc",), "test", "train"),
        mapper=mapping.niilc,
    ),
    BenchmarkSpec(
        name="jsquad",
        language="japanese",
        task_type="extractive_qa",
        max_new_tokens=25,
        parser="extractive",
        parser_options={},
        metric="char_f1",
        labels=None,
        json_schema=None,
        description="JGLUE JSQuAD v1.1 via llm-jp-eval; 文章 (title [SEP] text) + 質問.",
        hub=HubSource(_LLM_JP_EVAL, ("jsquad",), "test", "train"),
        mapper=mapping.jsquad,
    ),
    BenchmarkSpec(
        name="jcommonsenseqa",
        language="japanese",
        task_type="mc",
        max_new_tokens=1,
        parser="mc_index",
        parser_options={"labels": ["0", "1", "2", "3", "4"]},
        metric="exact_match",
        labels=["0", "1", "2", "3", "4"],
        json_schema=None,
        description="JGLUE JCommonsenseQA v1.1 via llm-jp-eval; five choices, gold '0'-'4'.",
        hub=HubSource(_LLM_JP_EVAL, ("jcommonsenseqa",), "test", "train"),
        mapper=mapping.jcommonsenseqa,
    ),
)

REGISTRY: dict[str, BenchmarkSpec] = {spec.name: spec for spec in _BUILTIN}


def list_specs(local: Mapping[str, Any] | None = None) -> list[BenchmarkSpec]:
    """Every built-in benchmark, then the local ones configured in params (sorted by name).

    Parameters
    ----------
    local : the ``benchmarks.local`` section of params.yaml, or None.

    Returns
    -------
    list of BenchmarkSpec

    Examples
    --------
    >>> [s.name for s in list_specs()][:3]
    ['gsm8k', 'bbh', 'mmlu']
    """
    specs = list(_BUILTIN)
    for name in sorted(local or {}):
        specs.append(local_spec(name, (local or {})[name]))
    return specs


def get_spec(name: str, local: Mapping[str, Any] | None = None) -> BenchmarkSpec:
    """The spec of benchmark ``name``: a built-in one, or one from ``benchmarks.local``.

    Parameters
    ----------
    name : benchmark name (``gsm8k``, ..., or a key of ``local``).
    local : the ``benchmarks.local`` section of params.yaml; needed only for local benchmarks.

    Returns
    -------
    BenchmarkSpec

    Raises
    ------
    InputError
        When the name is unknown; the message lists the known names.
    """
    if name in REGISTRY:
        return REGISTRY[name]
    if local and name in local:
        return local_spec(name, local[name])
    known = [*REGISTRY, *sorted(local or {})]
    raise InputError(
        f"unknown benchmark {name!r}; known benchmarks: {', '.join(known)} "
        "(local datasets are declared under benchmarks.local in params.yaml)"
    )


LOCAL_TASK_TYPES = ("mc", "classification")


def local_spec(name: str, config: Mapping[str, Any]) -> BenchmarkSpec:
    """Build the spec of a user's own JSON/JSONL dataset from its ``benchmarks.local`` entry.

    Parameters
    ----------
    name : the benchmark name (key under ``benchmarks.local``).
    config : mapping with ``path``, ``language``, ``task_type`` (mc | classification),
        ``fields`` ({field name: source key}), ``answer`` (source key), ``labels`` and, for mc,
        ``choices`` (a source key holding a list, or a list of source keys). Optional:
        ``perturbable``, ``id``, ``json_field``, ``fewshot_path``, ``instruction``,
        ``digit_map``, ``max_new_tokens``.

    Returns
    -------
    BenchmarkSpec

    Raises
    ------
    InputError
        When a required key is missing or has the wrong type.
    """
    where = f"params.yaml: benchmarks.local.{name}"
    if name in REGISTRY:
        raise InputError(f"{where}: name clashes with the built-in benchmark {name!r}")
    if not isinstance(config, Mapping):
        raise InputError(f"{where}: expected a mapping with path, language, fields, answer")
    for key in ("path", "language", "fields", "answer", "labels"):
        if key not in config or config[key] in (None, "", [], {}):
            raise InputError(f"{where}: missing key {key!r}")
    language = config["language"]
    if language not in LANGUAGES:
        raise InputError(
            f"{where}.language: expected one of {', '.join(LANGUAGES)}, got {language!r}"
        )
    task_type = config.get("task_type", "mc")
    if task_type not in LOCAL_TASK_TYPES:
        raise InputError(
            f"{where}.task_type: expected one of {', '.join(LOCAL_TASK_TYPES)}, got {task_type!r}"
        )
    fields = config["fields"]
    if not isinstance(fields, Mapping) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in fields.items()
    ):
        raise InputError(f"{where}.fields: expected a mapping {{field name: source key}}")
    labels = config["labels"]
    if not isinstance(labels, list) or not labels:
        raise InputError(f"{where}.labels: expected a non-empty list")
    labels = [str(label) for label in labels]
    perturbable = config.get("perturbable", list(fields))
    unknown = [f for f in perturbable if f not in fields]
    if unknown:
        raise InputError(f"{where}.perturbable: {unknown} are not among fields {list(fields)}")
    digit_map: dict[str, str] | None = None
    if task_type == "mc":
        if "choices" not in config:
            raise InputError(f"{where}: missing key 'choices' (required for task_type mc)")
        digit_map = config.get("digit_map")
        if digit_map is None:
            # Models often answer "2" for the second option; map 1-based digits onto the labels.
            digit_map = {str(i + 1): label for i, label in enumerate(labels)}
        digit_map = {str(k): str(v) for k, v in dict(digit_map).items()}
        parser, options = "mc_letter", {"labels": labels, "digit_map": digit_map}
        task = "mc"
    else:
        parser, options = "nli", {"labels": labels}
        task = "classification"
    max_new = int(config.get("max_new_tokens", 8))
    return BenchmarkSpec(
        name=name,
        language=language,
        task_type=task,
        max_new_tokens=max_new,
        parser=parser,
        parser_options=options,
        metric="exact_match",
        labels=labels,
        json_schema=None,
        description=f"Local dataset from {config['path']}",
        hub=None,
        mapper=mapping.local,
        cot_max_new_tokens=int(config.get("cot_max_new_tokens", 512)),
        kind="local",
        local={
            **dict(config),
            "perturbable": list(perturbable),
            "task_type": task,
            "labels": labels,
            "digit_map": digit_map,
        },
    )
