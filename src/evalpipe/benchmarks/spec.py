"""What a benchmark spec is: the dataclasses a spec file becomes.

A spec (``specs/<name>.yaml``; a local one in ``data/raw/benchmarks/<name>/spec.yaml``) says
where the data comes from (``sources``: Hub id and splits, the publisher's files with the reader
that parses them, the bundled sample), how a raw row becomes an example (``mapper`` or a
declarative ``mapping``), which fields may get typos and which spans never do, the prompt
templates per style, the answer type (-> parser and gold normaliser), the metric, the generation
budget and stop sequences per prompt style, and the dataset version. docs/benchmarks.md
describes every key.

The modules of the spec, bottom first: this one (the data model), :mod:`.spec_files` (reading a
spec file and merging its ``include:`` bases), :mod:`.spec_build` (validating a merged spec into
a :class:`BenchmarkSpec`), :mod:`.registry` (the built-in and local specs by name).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jinja2 import StrictUndefined, Template
from jinja2.sandbox import SandboxedEnvironment

from evalpipe.answers.types import AnswerType, get_answer_type
from evalpipe.errors import InputError
from evalpipe.params_schema import PROMPT_STYLES

STYLES = PROMPT_STYLES  # the params' prompt.style choices: a spec has a template for each
FEWSHOT_POOL = 8  # few-shot candidates kept per subtask (per benchmark when there is none)

# Every template of a spec (prompts, log-likelihood choices) is compiled in this sandbox: an
# undefined variable is an error, never an empty string.
TEMPLATE_ENV = SandboxedEnvironment(undefined=StrictUndefined, keep_trailing_newline=True)


@dataclass(frozen=True)
class HubSource:
    """Where a benchmark lives on the Hugging Face Hub.

    ``configs`` are loaded one after the other (BBH: one config per subtask). ``fewshot_split``
    is None when the dataset has only the evaluated split; then ``fewshot_holdout`` examples per
    config are taken out of the evaluated split and never evaluated.
    """

    dataset: str
    configs: tuple[str | None, ...]
    split: str
    fewshot_split: str | None
    fewshot_holdout: int = 0
    size: int | None = None  # rows of the evaluated split, for `--list` (None: not known offline)
    mapper: str | None = None  # a mapper for this source's raw schema; None: the spec's
    version: str | None = None
    # {split: file pattern in the repository}: load only these files, so that a config's other
    # splits are never built (cais/mmlu "all" would also build its 161 MB auxiliary_train)
    data_files: Mapping[str, str] | None = None


@dataclass(frozen=True)
class RawHubSource:
    """A Hub copy that keeps the publisher's raw schema (``benchmarks.source: hub_raw``), read
    through the mapper of the publisher reader ``reader`` (``evalpipe.benchmarks.readers``), so
    it gives the same examples as the publisher's files. ``options`` go to that mapper (e.g.
    ``label_names``: the copy's ClassLabel names, in order)."""

    hub: HubSource
    reader: str
    options: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class FilesSource:
    """Files read from a folder: the publisher's files (``benchmarks.source: files``, folder
    ``data/raw/benchmarks/<name>/``) or a local benchmark's own files (its spec's folder).

    ``reader`` names a reader of ``evalpipe.benchmarks.readers.READERS``: a publisher's (it knows
    its files, version and mapper) or a generic one (``json``), which reads the files ``test`` / ``fewshot`` list (glob patterns relative to the
    folder) and maps them with ``mapper`` (default: the spec's).
    """

    reader: str
    test: tuple[str, ...]
    fewshot: tuple[str, ...] = ()
    fewshot_holdout: int = 0
    mapper: str | None = None
    version: str | None = None
    options: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class SampleSource:
    """The bundled sample: JSONL files under ``evalpipe/benchmarks/samples/`` in the Hub schema,
    or (``folder``) the publisher's own files bundled there, read by the spec's files reader."""

    test: str | None
    fewshot: str | None
    mapper: str | None = None
    folder: str | None = None


@dataclass(frozen=True)
class LoglikelihoodSetup:
    """How a benchmark is scored by log-likelihood (spec key ``loglikelihood``).

    The context is the raw prompt followed by ``cue``; each choice's continuation is
    ``separator`` followed by the rendered ``choice`` template, so that it continues the prompt
    the way its demonstrations do (``"Answer:" + " B"``, ``"### 応答:\n" + "entailment"``).
    ``not_applicable`` declares why the benchmark cannot be scored so (BBH).

    Attributes
    ----------
    separator : text between the context and the choice (lm-eval's ``target_delimiter``).
    cue : text appended to the prompt before the separator (IMDB: ``"\nSentiment:"``).
    choice : Jinja template of one choice's text; variables ``label``, ``index`` (0-based) and
        ``choice`` (the row's choice text, when the caller passes the choices).
    not_applicable : the reason log-likelihood scoring does not apply, or None.
    """

    separator: str = " "
    cue: str = ""
    choice: str = "{{ label }}"
    not_applicable: str | None = None
    template: Template | None = field(default=None, compare=False, repr=False)

    def render_choice(self, label: str, index: int, choice: str | None = None) -> str:
        """The text scored for one choice (without the separator). Without the row's choice
        text, ``choice`` is undefined, so a template that needs it fails instead of scoring
        "None"."""
        template = self.template or TEMPLATE_ENV.from_string(self.choice)
        values: dict[str, Any] = {"label": label, "index": index}
        if choice is not None:
            values["choice"] = choice
        return template.render(values)


@dataclass(frozen=True)
class BenchmarkSpec:
    """One benchmark, as its spec file declares it.

    Attributes used by other stages (docs/architecture.md): ``name, language, task_type,
    answer_type, parser, metric, labels, json_schema``, ``max_tokens(style)``, ``stop(style)``,
    ``parser_options(subtask, scoring=...)``. ``answer_options`` holds the parser options of the
    spec's ``answer:`` entry and ``subtask_answers`` those of each subtask; read them through
    :meth:`parser_options`, which adds the two and the scoring-param overrides.
    """

    name: str
    language: str
    task_type: str
    answer_type: str
    answer_options: dict[str, Any]  # the parser options of the spec's ``answer:`` entry
    metric: str
    labels: list[str] | None
    description: str
    version: str
    budgets: dict[str, int]
    stops: dict[str, tuple[str, ...]]
    json_schema: dict[str, Any] | None
    perturbable: tuple[str, ...]
    protected: tuple[str, ...]
    mapper_name: str
    mapping: dict[str, Any]
    prompt: dict[str, Any]
    subtasks: dict[str, str]
    hub: HubSource | None
    files: FilesSource | None
    sample: SampleSource | None
    path: Path
    hub_raw: RawHubSource | None = None
    # {subtask: parser options} from ``subtasks.<name>.answer`` (BBH: each subtask's format)
    subtask_answers: dict[str, dict[str, Any]] = field(default_factory=dict)
    fewshot_pool: int = FEWSHOT_POOL  # the spec's ``fewshot.pool``
    kind: str = "builtin"  # builtin | local
    loglikelihood: LoglikelihoodSetup = field(default_factory=LoglikelihoodSetup)

    @property
    def root(self) -> Path:
        """The spec file's folder (a local benchmark's files are read from there)."""
        return self.path.parent

    @property
    def answer(self) -> AnswerType:
        """The answer type (parser, gold normaliser, classification or not)."""
        return get_answer_type(self.answer_type, where=str(self.path))

    @property
    def parser(self) -> str:
        """The parser's name (``evalpipe.answers.parsers.PARSERS``) behind the answer type."""
        return self.answer.parser

    def max_tokens(self, style: str) -> int:
        """New tokens an answer may take in prompt ``style`` (the spec's budget).

        Parameters
        ----------
        style : zero_shot | few_shot | cot

        Returns
        -------
        int
        """
        return self.budgets[check_style(style)]

    def stop(self, style: str) -> tuple[str, ...]:
        """Stop sequences for prompt ``style`` (generation ends before them; may be empty)."""
        return self.stops.get(check_style(style), ())

    def parser_options(
        self, subtask: str | None = None, *, scoring: Mapping[str, Any] | None = None
    ) -> dict[str, Any]:
        """The parser options of a row of ``subtask``: the keyword arguments its answer is
        parsed and its gold normalised with (``self.answer.parse(text, **options)``).

        They are the options the spec's ``answer:`` declares (``answer_options``: labels,
        digit_map, ...), plus the ones its subtask declares (``subtask_answers``; BBH:
        ``format``, ``words``), plus the scoring params that override an option
        (``scoring.sentiment_strict`` -> ``json_label``'s ``strict``). "Parser options" is the
        one name of these keyword arguments throughout evalpipe (``score_frame(...,
        parser_options=...)``, ``AnswerType.parser_options``).

        Parameters
        ----------
        subtask : the row's subtask, or None (a subtask the spec does not list adds nothing).
        scoring : the ``scoring`` params section, or None (no overrides).

        Returns
        -------
        dict

        Examples
        --------
        >>> from evalpipe.benchmarks import get_spec
        >>> get_spec("bbh").parser_options("navigate")
        {'format': 'binary', 'words': ['Yes', 'No']}
        >>> get_spec("imdb").parser_options(scoring={"sentiment_strict": False})["strict"]
        False
        """
        return self.answer.parser_options(
            self.answer_options, subtask=subtask, scoring=scoring, subtasks=self.subtask_answers
        )


def check_style(style: str) -> str:
    """``style`` when it is one of ``STYLES``, else an InputError naming params.yaml's key."""
    if style not in STYLES:
        raise InputError(
            f"params.yaml: prompt.style: expected one of {', '.join(STYLES)}, got {style!r}"
        )
    return style
