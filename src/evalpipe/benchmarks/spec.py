"""The benchmark registry: one declarative YAML spec file per benchmark.

A spec (``specs/<name>.yaml``; a local one in ``data/raw/benchmarks/<name>/spec.yaml``) says
where the data comes from (``sources``: Hub id and splits, the publisher's files with the reader
that parses them, the bundled sample), how a raw row becomes an example (``mapper`` or a
declarative ``mapping``), which fields may get typos and which spans never do, the prompt
templates per style, the answer type (-> parser and gold normaliser), the metric, the generation
budget and stop sequences per prompt style, and the dataset version. Shared parts live in base
files that a spec pulls in with ``include:`` (later files and the spec itself win; mappings merge
key by key, anything else is replaced). docs/benchmarks.md describes every key.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import yaml
from jinja2 import StrictUndefined, Template, TemplateError
from jinja2.sandbox import SandboxedEnvironment

from evalpipe.answers.types import METRICS, AnswerType, get_answer_type
from evalpipe.benchmarks.mapping import check_local_mapping
from evalpipe.benchmarks.readers import get_mapper
from evalpipe.errors import InputError
from evalpipe.languages import LANGUAGES

STYLES = ("zero_shot", "few_shot", "cot")
LOCAL_SPEC = "spec.yaml"  # a local benchmark's spec: <local dir>/<name>/spec.yaml
# Spec keys a template sees as variables besides the prompt section's own (docs/benchmarks.md).
_PROMPT_KEYS = ("template", "instruction", "body")
_TOP_KEYS = {
    "include", "description", "language", "task_type", "version", "labels", "sources", "mapper",
    "mapping", "perturbable", "protected", "answer", "metric", "prompt", "generation",
    "subtasks", "fewshot", "loglikelihood",
}  # fmt: skip
_LOGLIKELIHOOD_KEYS = ("separator", "cue", "choice", "not_applicable")
_SOURCE_KEYS = {
    "hub": {"dataset", "configs", "per_subtask", "split", "fewshot_split", "fewshot_holdout",
            "size", "mapper", "version", "data_files"},
    "files": {"reader", "test", "fewshot", "fewshot_holdout", "mapper", "version", "json_field"},
    "sample": {"test", "fewshot", "mapper", "folder"},
    # a Hub copy in the publisher's raw schema, mapped by a publisher reader's mapper
    "hub_raw": {"dataset", "configs", "split", "fewshot_split", "size", "version", "data_files",
                "reader", "label_names"},
}  # fmt: skip
PROTECTED_SOURCES = ("answer", "answers")

_ENV = SandboxedEnvironment(undefined=StrictUndefined, keep_trailing_newline=True)


def specs_root() -> Path:
    """The folder of the built-in spec files (package data)."""
    return Path(str(resources.files("evalpipe.benchmarks") / "specs"))


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
        template = self.template or _ENV.from_string(self.choice)
        values: dict[str, Any] = {"label": label, "index": index}
        if choice is not None:
            values["choice"] = choice
        return template.render(values)


@dataclass(frozen=True)
class BenchmarkSpec:
    """One benchmark, as its spec file declares it.

    Attributes used by other stages (docs/architecture.md): ``name, language, task_type,
    answer_type, parser, parser_options, metric, labels, json_schema``, ``max_tokens(style)``,
    ``stop(style)``, ``answer_kwargs(row)``.
    """

    name: str
    language: str
    task_type: str
    answer_type: str
    answer_options: dict[str, Any]
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
    fewshot_pool: int = 8
    kind: str = "builtin"  # builtin | local
    loglikelihood: LoglikelihoodSetup = field(default_factory=LoglikelihoodSetup)

    @property
    def root(self) -> Path:
        """The spec file's folder (a local benchmark's files are read from there)."""
        return self.path.parent

    @property
    def max_new_tokens(self) -> int:
        """The zero-shot budget (kept for callers of the older attribute)."""
        return self.budgets["zero_shot"]

    @property
    def answer(self) -> AnswerType:
        """The answer type (parser, gold normaliser, classification or not)."""
        return get_answer_type(self.answer_type, where=str(self.path))

    @property
    def parser(self) -> str:
        """The parser's name (``evalpipe.answers.parsers.PARSERS``) behind the answer type."""
        return self.answer.parser

    @property
    def parser_options(self) -> dict[str, Any]:
        """Keyword arguments for the parser common to every row (labels, digit_map, ...)."""
        return dict(self.answer_options)

    def max_tokens(self, style: str) -> int:
        """New tokens an answer may take in prompt ``style`` (the spec's budget).

        Parameters
        ----------
        style : zero_shot | few_shot | cot

        Returns
        -------
        int
        """
        return self.budgets[_style(style)]

    def stop(self, style: str) -> tuple[str, ...]:
        """Stop sequences for prompt ``style`` (generation ends before them; may be empty)."""
        return self.stops.get(_style(style), ())

    def answer_kwargs(
        self, row: Mapping[str, Any] | None = None, *, scoring: Mapping[str, Any] | None = None
    ) -> dict[str, Any]:
        """Parser keyword arguments for one row: the spec's, its subtask's, scoring overrides.

        Parameters
        ----------
        row : the row's values, e.g. ``{"subtask": "navigate"}`` (BBH: the subtask's declared
            answer format is added).
        scoring : the ``scoring`` params section, or None.

        Returns
        -------
        dict
        """
        return self.answer.row_kwargs(
            self.answer_options, row=row, scoring=scoring, subtasks=self.subtask_answers
        )

    def parser_kwargs(self, subtask: str | None = None) -> dict[str, Any]:
        """``answer_kwargs({"subtask": subtask})``: the parser options of a row of ``subtask``."""
        return self.answer_kwargs({"subtask": subtask})


def _style(style: str) -> str:
    if style not in STYLES:
        raise InputError(
            f"params.yaml: prompt.style: expected one of {', '.join(STYLES)}, got {style!r}"
        )
    return style


# --- reading spec files ----------------------------------------------------------------------


def _read_yaml(path: Path) -> dict[str, Any]:
    if not path.is_file():
        raise InputError(f"{path}: spec file not found")
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        raise InputError(f"{path}: not valid YAML: {exc}") from exc
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise InputError(f"{path}: expected a mapping of spec keys at the top level")
    return data


def _include_path(name: str, base: Path, where: Path) -> Path:
    """An include names a file next to the including one, else a built-in base or spec."""
    if not isinstance(name, str) or not name:
        raise InputError(f"{where}: include: expected a file name or a list of them")
    candidates = []
    for folder in (base, specs_root() / "base", specs_root()):
        candidates += [folder / name, folder / f"{name}.yaml"]
    for path in candidates:
        if path.is_file():
            return path
    raise InputError(
        f"{where}: include: {name!r} not found next to the spec nor among the built-in bases "
        f"({', '.join(sorted(p.stem for p in (specs_root() / 'base').glob('*.yaml')))})"
    )


def merge(base: Mapping[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    """``over`` on top of ``base``: mappings merge key by key, anything else is replaced.

    Examples
    --------
    >>> merge({"a": {"x": 1, "y": 2}, "b": [1]}, {"a": {"y": 3}, "b": [2]})
    {'a': {'x': 1, 'y': 3}, 'b': [2]}
    """
    out = dict(base)
    for key, value in over.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            out[key] = merge(out[key], value)
        else:
            out[key] = value
    return out


def resolve(path: str | Path, *, _stack: tuple[Path, ...] = ()) -> dict[str, Any]:
    """The spec file at ``path`` with its includes merged in (without the ``include`` key).

    Parameters
    ----------
    path : a spec or base file.

    Returns
    -------
    dict : the merged spec.

    Raises
    ------
    InputError
        Unreadable YAML, a missing include, or an include cycle.
    """
    path = Path(path).resolve()
    if path in _stack:
        chain = " -> ".join(p.name for p in (*_stack, path))
        raise InputError(f"{path}: include cycle ({chain})")
    data = _read_yaml(path)
    includes = data.pop("include", None) or []
    if isinstance(includes, str):
        includes = [includes]
    if not isinstance(includes, list):
        raise InputError(f"{path}: include: expected a file name or a list of them")
    merged: dict[str, Any] = {}
    for name in includes:
        merged = merge(
            merged, resolve(_include_path(name, path.parent, path), _stack=(*_stack, path))
        )
    return merge(merged, data)


def _compile(source: Any, where: str) -> Template:
    if not isinstance(source, str):
        raise InputError(f"{where}: expected a template string, got {type(source).__name__}")
    try:
        return _ENV.from_string(source)
    except TemplateError as exc:
        raise InputError(f"{where}: not a valid template: {exc}") from exc


def _str_list(value: Any, where: str, *, allow_empty: bool = True) -> tuple[str, ...]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise InputError(f"{where}: expected a list of strings, got {value!r}")
    if not value and not allow_empty:
        raise InputError(f"{where}: expected at least one entry")
    return tuple(value)


def _per_style(value: Any, where: str, kind: type) -> dict[str, Any]:
    """``{zero_shot: x, few_shot: y, cot: z}``; a ``default`` key fills the missing styles."""
    if not isinstance(value, Mapping):
        value = {"default": value}
    unknown = sorted(set(value) - {*STYLES, "default"})
    if unknown:
        raise InputError(f"{where}: unknown style(s) {unknown}; expected {', '.join(STYLES)}")
    out = {}
    for style in STYLES:
        if style in value:
            out[style] = value[style]
        elif "default" in value:
            out[style] = value["default"]
    for style, v in out.items():
        if kind is int and (isinstance(v, bool) or not isinstance(v, int) or v < 1):
            raise InputError(f"{where}.{style}: expected an integer >= 1, got {v!r}")
    return out


def _source(kind: str, value: Any, where: str, subtasks: Mapping[str, str], name: str) -> Any:
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise InputError(f"{where}: expected a mapping")
    unknown = sorted(set(value) - _SOURCE_KEYS[kind])
    if unknown:
        raise InputError(
            f"{where}: unknown key(s) {unknown}; expected some of {sorted(_SOURCE_KEYS[kind])}"
        )
    if kind == "hub_raw":
        if not value.get("reader"):
            raise InputError(f"{where}: expected `reader` (the publisher reader whose mapper fits)")
        names = value.get("label_names")
        if names is not None and (not isinstance(names, list) or not names):
            raise InputError(f"{where}.label_names: expected a list of label names")
        hub = _source("hub", {k: v for k, v in value.items() if k in _SOURCE_KEYS["hub"]},
                      where, subtasks, name)  # fmt: skip
        options = {"label_names": [str(n) for n in names]} if names else {}
        return RawHubSource(hub=hub, reader=str(value["reader"]), options=options)
    if kind == "hub":
        if not value.get("dataset") or not value.get("split"):
            raise InputError(f"{where}: expected `dataset` and `split`")
        if value.get("per_subtask"):
            if not subtasks:
                raise InputError(f"{where}: per_subtask needs the spec's `subtasks`")
            configs: tuple[str | None, ...] = tuple(subtasks)
        else:
            raw = value.get("configs", [name])
            if not isinstance(raw, list) or not raw:
                raise InputError(f"{where}.configs: expected a list of config names (or null)")
            configs = tuple(None if c is None else str(c) for c in raw)
        return HubSource(
            dataset=str(value["dataset"]),
            configs=configs,
            split=str(value["split"]),
            fewshot_split=value.get("fewshot_split"),
            fewshot_holdout=int(value.get("fewshot_holdout") or 0),
            size=value.get("size"),
            mapper=value.get("mapper"),
            version=value.get("version"),
            data_files=dict(value["data_files"]) if value.get("data_files") else None,
        )
    if kind == "files":
        if not value.get("reader"):
            raise InputError(f"{where}: expected `reader` (the name of a file reader)")
        return FilesSource(
            reader=str(value["reader"]),
            test=_str_list(value.get("test") or [], f"{where}.test"),
            fewshot=_str_list(value.get("fewshot") or [], f"{where}.fewshot"),
            fewshot_holdout=int(value.get("fewshot_holdout") or 0),
            mapper=value.get("mapper"),
            version=value.get("version"),
            options={k: v for k, v in value.items() if k == "json_field"},
        )
    if value.get("folder"):
        return SampleSource(None, None, None, str(value["folder"]))
    if not value.get("test"):
        raise InputError(
            f"{where}: expected `test` (a file under the bundled samples) or `folder` (the "
            "publisher's files bundled there, read by sources.files.reader)"
        )
    return SampleSource(str(value["test"]), value.get("fewshot"), value.get("mapper"))


def _loglikelihood(value: Any, where: str) -> LoglikelihoodSetup:
    """The ``loglikelihood`` block, validated (absent: lm-eval's defaults)."""
    if value is None:
        value = {}
    if not isinstance(value, Mapping):
        raise InputError(
            f"{where}: expected a mapping with some of {', '.join(_LOGLIKELIHOOD_KEYS)}"
        )
    unknown = sorted(set(value) - set(_LOGLIKELIHOOD_KEYS))
    if unknown:
        raise InputError(
            f"{where}: unknown key(s) {unknown}; expected some of {list(_LOGLIKELIHOOD_KEYS)}"
        )
    out: dict[str, Any] = {}
    for key in ("separator", "cue", "choice"):
        if key in value:
            if not isinstance(value[key], str):
                raise InputError(f"{where}.{key}: expected a string, got {value[key]!r}")
            out[key] = value[key]
    reason = value.get("not_applicable")
    if reason is not None and (not isinstance(reason, str) or not reason.strip()):
        raise InputError(f"{where}.not_applicable: expected the reason as text, got {reason!r}")
    return LoglikelihoodSetup(
        **out,
        not_applicable=reason.strip() if reason else None,
        template=_compile(out.get("choice", LoglikelihoodSetup.choice), f"{where}.choice"),
    )


def _subtasks(
    raw: Any, answer_type: AnswerType, options: Mapping[str, Any], where: str
) -> tuple[dict[str, str], dict[str, dict[str, Any]]]:
    """``subtasks:`` -> ({name: description}, {name: parser options}).

    An entry is a name (in a list), ``name: description``, or ``name: {description, answer}``
    whose ``answer`` holds the answer type's per-subtask options (BBH: ``format``, ``words``).
    An answer type with required per-subtask options gets them from every entry.
    """
    raw = raw or {}
    if isinstance(raw, list):
        raw = {str(s): None for s in raw}
    if not isinstance(raw, Mapping):
        raise InputError(
            f"{where}: subtasks: expected a list of names or {{name: description}} or "
            "{name: {description, answer}}"
        )
    descriptions: dict[str, str] = {}
    answers: dict[str, dict[str, Any]] = {}
    for key, value in raw.items():
        name = str(key)
        answer = None
        if isinstance(value, Mapping):
            unknown = sorted(set(value) - {"description", "answer"})
            if unknown:
                raise InputError(
                    f"{where}: subtasks.{name}: unknown key(s) {unknown}; expected description, "
                    "answer"
                )
            answer = value.get("answer")
            value = value.get("description")
        descriptions[name] = "" if value is None else str(value)
        if answer is not None or answer_type.required_subtask_options:
            answers[name] = answer_type.subtask_spec_options(name, answer, options, where=where)
    return descriptions, answers


def build_spec(data: Mapping[str, Any], *, name: str, path: Path, kind: str) -> BenchmarkSpec:
    """Validate a resolved spec mapping and build the :class:`BenchmarkSpec`.

    Parameters
    ----------
    data : the spec with includes merged (:func:`resolve`).
    name : the benchmark name (the file's stem, or the local folder's name).
    path : the spec file (for messages, and the folder local files are read from).
    kind : builtin | local.

    Returns
    -------
    BenchmarkSpec

    Raises
    ------
    InputError
        Naming the spec file, the key and what was expected.
    """
    where = str(path)
    unknown = sorted(set(data) - _TOP_KEYS)
    if unknown:
        raise InputError(f"{where}: unknown key(s) {unknown}; expected some of {sorted(_TOP_KEYS)}")
    for key in ("language", "task_type", "answer", "metric", "prompt", "generation"):
        if data.get(key) in (None, "", [], {}):
            raise InputError(f"{where}: missing key {key!r}")
    language = data["language"]
    if language not in LANGUAGES:
        raise InputError(
            f"{where}: language: expected one of {', '.join(LANGUAGES)}, got {language!r}"
        )
    labels = data.get("labels")
    if labels is not None:
        if not isinstance(labels, list) or not labels:
            raise InputError(f"{where}: labels: expected a non-empty list, got {labels!r}")
        labels = [str(x) for x in labels]
    answer = data["answer"]
    if not isinstance(answer, Mapping) or "type" not in answer:
        raise InputError(f"{where}: answer: expected a mapping with `type`")
    answer_type = get_answer_type(answer["type"], where=where)
    options = answer_type.spec_options(answer, labels, where=where)
    if options.get("digit_map") == "one_based":
        # models often answer "2" for the second option: 1-based digits stand for the labels
        options["digit_map"] = {str(i + 1): label for i, label in enumerate(labels or [])}
    elif isinstance(options.get("digit_map"), Mapping):
        options["digit_map"] = {str(k): str(v) for k, v in options["digit_map"].items()}
    metric = data["metric"]
    if metric not in METRICS:
        raise InputError(f"{where}: metric: expected one of {', '.join(METRICS)}, got {metric!r}")
    subtasks, subtask_answers = _subtasks(data.get("subtasks"), answer_type, options, where)

    mapping_cfg = dict(data.get("mapping") or {})
    mapper_name = str(data.get("mapper") or ("local" if mapping_cfg else ""))
    if not mapper_name:
        raise InputError(f"{where}: missing key 'mapper' (or a declarative `mapping:`)")
    get_mapper(mapper_name, where=where)
    if mapper_name == "local":
        check_local_mapping(mapping_cfg, data.get("task_type"), where=f"{where}: mapping")
    perturbable = _str_list(
        data.get("perturbable") or list(mapping_cfg.get("fields") or {}),
        f"{where}: perturbable",
        allow_empty=False,
    )
    if mapper_name == "local":
        stray = [f for f in perturbable if f not in mapping_cfg["fields"]]
        if stray:
            raise InputError(
                f"{where}: perturbable: {stray} are not among mapping.fields {list(mapping_cfg['fields'])}"
            )
    protected = _str_list(data.get("protected") or [], f"{where}: protected")
    bad = [p for p in protected if p not in PROTECTED_SOURCES]
    if bad:
        raise InputError(f"{where}: protected: {bad}; expected some of {list(PROTECTED_SOURCES)}")

    generation = data["generation"]
    if not isinstance(generation, Mapping):
        raise InputError(f"{where}: generation: expected a mapping")
    budgets = _per_style(generation.get("max_tokens"), f"{where}: generation.max_tokens", int)
    missing = [s for s in STYLES if s not in budgets]
    if missing:
        raise InputError(f"{where}: generation.max_tokens: no budget for style(s) {missing}")
    stops_raw = generation.get("stop") or {}
    stops = {
        s: _str_list(v, f"{where}: generation.stop.{s}")
        for s, v in _per_style(stops_raw, f"{where}: generation.stop", list).items()
    }
    json_schema = generation.get("json_schema")
    if json_schema is not None and not isinstance(json_schema, Mapping):
        raise InputError(f"{where}: generation.json_schema: expected a JSON schema mapping")

    prompt = dict(data["prompt"])
    templates = _per_style(prompt.get("template"), f"{where}: prompt.template", str)
    missing = [s for s in STYLES if s not in templates]
    if missing:
        raise InputError(f"{where}: prompt.template: no template for style(s) {missing}")
    instructions = _per_style(prompt.get("instruction", ""), f"{where}: prompt.instruction", str)
    if "body" not in prompt:
        raise InputError(f"{where}: prompt: missing key 'body' (the template of one example)")
    compiled = {
        "template": {s: _compile(t, f"{where}: prompt.template.{s}") for s, t in templates.items()},
        "instruction": {
            s: _compile(t, f"{where}: prompt.instruction.{s}") for s, t in instructions.items()
        },
        "body": _compile(prompt["body"], f"{where}: prompt.body"),
        "vars": {k: v for k, v in prompt.items() if k not in _PROMPT_KEYS},
    }

    sources = data.get("sources") or {}
    if not isinstance(sources, Mapping) or set(sources) - set(_SOURCE_KEYS):
        raise InputError(f"{where}: sources: expected some of {sorted(_SOURCE_KEYS)}")
    built = {
        k: _source(k, sources.get(k), f"{where}: sources.{k}", subtasks, name) for k in _SOURCE_KEYS
    }
    for kind_name, src in built.items():
        if src is not None and getattr(src, "mapper", None):
            get_mapper(src.mapper, where=f"{where}: sources.{kind_name}.mapper")
    if kind == "local" and built["files"] is None:
        raise InputError(
            f"{where}: sources.files: a local benchmark reads its own files; expected `reader` and `test`"
        )
    loglikelihood = _loglikelihood(data.get("loglikelihood"), f"{where}: loglikelihood")
    fewshot_cfg = data.get("fewshot") or {}
    pool = int(fewshot_cfg.get("pool", 8)) if isinstance(fewshot_cfg, Mapping) else 8

    return BenchmarkSpec(
        name=name,
        language=language,
        task_type=str(data["task_type"]),
        answer_type=answer_type.name,
        answer_options=options,
        metric=metric,
        labels=labels,
        description=str(data.get("description") or "").strip(),
        version=str(data.get("version") or "").strip(),
        budgets=budgets,
        stops=stops,
        json_schema=dict(json_schema) if json_schema is not None else None,
        perturbable=perturbable,
        protected=protected,
        mapper_name=mapper_name,
        mapping=mapping_cfg,
        prompt=compiled,
        subtasks=subtasks,
        subtask_answers=subtask_answers,
        hub=built["hub"],
        files=built["files"],
        sample=built["sample"],
        hub_raw=built["hub_raw"],
        path=path,
        fewshot_pool=pool,
        kind=kind,
        loglikelihood=loglikelihood,
    )


def load_spec(path: str | Path, *, name: str | None = None, kind: str = "local") -> BenchmarkSpec:
    """Read one spec file (with its includes) into a :class:`BenchmarkSpec`.

    Parameters
    ----------
    path : the spec file.
    name : the benchmark's name; default: the file's stem (``spec.yaml``: its folder's name).
    kind : builtin | local.

    Returns
    -------
    BenchmarkSpec
    """
    path = Path(path)
    if name is None:
        name = path.parent.name if path.name == LOCAL_SPEC else path.stem
    return build_spec(resolve(path), name=name, path=path, kind=kind)


@functools.cache
def _builtin() -> dict[str, BenchmarkSpec]:
    paths = sorted(specs_root().glob("*.yaml"))
    specs = [load_spec(p, kind="builtin") for p in paths]
    order = {n: i for i, n in enumerate(BUILTIN_ORDER)}
    specs.sort(key=lambda s: (order.get(s.name, len(order)), s.name))
    return {s.name: s for s in specs}


# Display order of the built-ins (English, then Japanese); a new spec file sorts after them.
BUILTIN_ORDER = (
    "gsm8k",
    "bbh",
    "mmlu",
    "imdb",
    "jamp",
    "jnli",
    "niilc",
    "jsquad",
    "jcommonsenseqa",
)


class _Registry(Mapping[str, BenchmarkSpec]):
    """The built-in specs, read from their files on first use."""

    def __getitem__(self, name: str) -> BenchmarkSpec:
        return _builtin()[name]

    def __iter__(self):
        return iter(_builtin())

    def __len__(self) -> int:
        return len(_builtin())


REGISTRY: Mapping[str, BenchmarkSpec] = _Registry()


def _local_dirs(local: str | Path | Iterable[str | Path] | None) -> list[Path]:
    if local is None:
        return []
    if isinstance(local, str | Path):
        return [Path(local)]
    if isinstance(local, Mapping):
        raise InputError(
            "benchmarks.local is gone: a local benchmark is a spec file, "
            f"<data/raw/benchmarks>/<name>/{LOCAL_SPEC} (docs/benchmarks.md)"
        )
    return [Path(p) for p in local]


def local_names(local: str | Path | Iterable[str | Path] | None) -> list[str]:
    """Names of the local benchmarks: folders holding a ``spec.yaml`` under the local dirs."""
    names = set()
    for folder in _local_dirs(local):
        if folder.is_dir():
            names.update(p.parent.name for p in folder.glob(f"*/{LOCAL_SPEC}"))
    return sorted(names)


def list_specs(local: str | Path | Iterable[str | Path] | None = None) -> list[BenchmarkSpec]:
    """Every built-in benchmark, then the local ones found under ``local`` (sorted by name).

    Parameters
    ----------
    local : folder(s) holding local benchmarks (``<folder>/<name>/spec.yaml``), or None.

    Returns
    -------
    list of BenchmarkSpec

    Examples
    --------
    >>> [s.name for s in list_specs()][:3]
    ['gsm8k', 'bbh', 'mmlu']
    """
    return [*REGISTRY.values(), *(get_spec(n, local) for n in local_names(local))]


def get_spec(name: str, local: str | Path | Iterable[str | Path] | None = None) -> BenchmarkSpec:
    """The spec of benchmark ``name``: a built-in one, or a local ``<folder>/<name>/spec.yaml``.

    Parameters
    ----------
    name : benchmark name (``gsm8k``, ..., or a local benchmark's folder name).
    local : folder(s) holding local benchmarks (the stages pass ``data/raw/benchmarks``).

    Returns
    -------
    BenchmarkSpec

    Raises
    ------
    InputError
        When the name is unknown (the message lists the known names), or the spec is invalid.
    """
    if name in REGISTRY:
        for folder in _local_dirs(local):
            if (folder / name / LOCAL_SPEC).is_file():
                raise InputError(
                    f"{folder / name / LOCAL_SPEC}: name clashes with the built-in benchmark "
                    f"{name!r}; rename the folder"
                )
        return REGISTRY[name]
    for folder in _local_dirs(local):
        path = folder / name / LOCAL_SPEC
        if path.is_file():
            return load_spec(path, name=name, kind="local")
    known = [*REGISTRY, *local_names(local)]
    raise InputError(
        f"unknown benchmark {name!r}; known benchmarks: {', '.join(known)} "
        f"(a local benchmark is a folder data/raw/benchmarks/<name>/ holding {LOCAL_SPEC})"
    )


def subtasks_of(name: str) -> tuple[str, ...]:
    """The subtasks a built-in spec lists (BBH's 27, MMLU's 57 subjects)."""
    return tuple(REGISTRY[name].subtasks)


def validate_suites(
    suites: Any, *, local: Any = None, source: str = "params.yaml"
) -> dict[str, str]:
    """The ``benchmarks.suites`` declaration, checked: ``{benchmark: language of its words}``.

    Parameters
    ----------
    suites : the params value.
    local : folder(s) of local benchmarks.
    source : the params file, for messages.

    Returns
    -------
    dict

    Raises
    ------
    InputError
        Not a mapping, an unknown benchmark, or a language that is not a word list.
    """
    if not isinstance(suites, Mapping) or not suites:
        raise InputError(
            f"{source}: benchmarks.suites: expected a mapping {{benchmark: language}}, got {suites!r}"
        )
    out = {}
    for name, language in suites.items():
        if language not in LANGUAGES:
            raise InputError(
                f"{source}: benchmarks.suites.{name}: expected one of {', '.join(LANGUAGES)}, "
                f"got {language!r}"
            )
        spec = get_spec(str(name), local)
        if spec.language != language:
            raise InputError(
                f"{source}: benchmarks.suites.{name}: {language}, but its spec ({spec.path}) "
                f"says language {spec.language}; the target words follow the benchmark's language"
            )
        out[str(name)] = str(language)
    return out


__all__ = [
    "BUILTIN_ORDER",
    "LOCAL_SPEC",
    "REGISTRY",
    "STYLES",
    "BenchmarkSpec",
    "FilesSource",
    "HubSource",
    "LoglikelihoodSetup",
    "SampleSource",
    "build_spec",
    "get_spec",
    "list_specs",
    "load_spec",
    "local_names",
    "merge",
    "resolve",
    "specs_root",
    "subtasks_of",
    "validate_suites",
]


def __getattr__(name: str) -> tuple[str, ...]:
    # BBH's subtasks and MMLU's subjects are listed once, in their spec files.
    if name == "BBH_SUBTASKS":
        return subtasks_of("bbh")
    if name == "MMLU_SUBJECTS":
        return subtasks_of("mmlu")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
