"""Building a :class:`~evalpipe.benchmarks.spec.BenchmarkSpec` from a spec file: every key
validated, with errors naming the spec file, the key and what was expected.

:func:`load_spec` reads a file with its includes merged (:mod:`.spec_files`) and
:func:`build_spec` turns the merged mapping into the spec, one part at a time: the answer, the
mapping from raw rows, the generation settings, the prompt templates and the sources.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from jinja2 import Template, TemplateError

from evalpipe.answers.types import METRICS, AnswerType, get_answer_type
from evalpipe.benchmarks.mapping import check_local_mapping
from evalpipe.benchmarks.readers import get_mapper
from evalpipe.benchmarks.spec import (
    FEWSHOT_POOL,
    STYLES,
    TEMPLATE_ENV,
    BenchmarkSpec,
    FilesSource,
    HubSource,
    LoglikelihoodSetup,
    RawHubSource,
    SampleSource,
)
from evalpipe.benchmarks.spec_files import LOCAL_SPEC, resolve
from evalpipe.errors import InputError
from evalpipe.languages import LANGUAGES

# Spec keys a template sees as variables besides the prompt section's own (docs/benchmarks.md).
_PROMPT_KEYS = ("template", "instruction", "body", "templates")
TEMPLATE_NAME = re.compile(r"^[a-z0-9_]+$")  # a template's name is part of an arm's condition
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


def _compile(source: Any, where: str) -> Template:
    if not isinstance(source, str):
        raise InputError(f"{where}: expected a template string, got {type(source).__name__}")
    try:
        return TEMPLATE_ENV.from_string(source)
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
    data : the spec with includes merged (:func:`~evalpipe.benchmarks.spec_files.resolve`).
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
    _check_keys(data, where)
    language = data["language"]
    if language not in LANGUAGES:
        raise InputError(
            f"{where}: language: expected one of {', '.join(LANGUAGES)}, got {language!r}"
        )
    labels = _labels(data.get("labels"), where)
    answer_type, options = _answer(data["answer"], labels, where)
    metric = data["metric"]
    if metric not in METRICS:
        raise InputError(f"{where}: metric: expected one of {', '.join(METRICS)}, got {metric!r}")
    subtasks, subtask_answers = _subtasks(data.get("subtasks"), answer_type, options, where)
    mapper_name, mapping_cfg, perturbable, protected = _row_mapping(data, where)
    budgets, stops, json_schema = _generation(data["generation"], where)
    prompt = _prompt(data["prompt"], where)
    sources = _sources(data.get("sources"), where, subtasks=subtasks, name=name, kind=kind)
    loglikelihood = _loglikelihood(data.get("loglikelihood"), f"{where}: loglikelihood")
    fewshot_cfg = data.get("fewshot") or {}
    pool = (
        int(fewshot_cfg.get("pool", FEWSHOT_POOL))
        if isinstance(fewshot_cfg, Mapping)
        else FEWSHOT_POOL
    )
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
        json_schema=json_schema,
        perturbable=perturbable,
        protected=protected,
        mapper_name=mapper_name,
        mapping=mapping_cfg,
        prompt=prompt,
        subtasks=subtasks,
        subtask_answers=subtask_answers,
        hub=sources["hub"],
        files=sources["files"],
        sample=sources["sample"],
        hub_raw=sources["hub_raw"],
        path=path,
        fewshot_pool=pool,
        kind=kind,
        loglikelihood=loglikelihood,
    )


def _check_keys(data: Mapping[str, Any], where: str) -> None:
    unknown = sorted(set(data) - _TOP_KEYS)
    if unknown:
        raise InputError(f"{where}: unknown key(s) {unknown}; expected some of {sorted(_TOP_KEYS)}")
    for key in ("language", "task_type", "answer", "metric", "prompt", "generation"):
        if data.get(key) in (None, "", [], {}):
            raise InputError(f"{where}: missing key {key!r}")


def _labels(labels: Any, where: str) -> list[str] | None:
    if labels is None:
        return None
    if not isinstance(labels, list) or not labels:
        raise InputError(f"{where}: labels: expected a non-empty list, got {labels!r}")
    return [str(x) for x in labels]


def _answer(answer: Any, labels: list[str] | None, where: str) -> tuple[AnswerType, dict[str, Any]]:
    """``answer:`` -> (its answer type, the parser options it declares)."""
    if not isinstance(answer, Mapping) or "type" not in answer:
        raise InputError(f"{where}: answer: expected a mapping with `type`")
    answer_type = get_answer_type(answer["type"], where=where)
    options = answer_type.spec_options(answer, labels, where=where)
    if options.get("digit_map") == "one_based":
        # models often answer "2" for the second option: 1-based digits stand for the labels
        options["digit_map"] = {str(i + 1): label for i, label in enumerate(labels or [])}
    elif isinstance(options.get("digit_map"), Mapping):
        options["digit_map"] = {str(k): str(v) for k, v in options["digit_map"].items()}
    return answer_type, options


def _row_mapping(
    data: Mapping[str, Any], where: str
) -> tuple[str, dict[str, Any], tuple[str, ...], tuple[str, ...]]:
    """How a raw row becomes an example: (mapper name, declarative mapping, perturbable fields,
    protected spans)."""
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
    return mapper_name, mapping_cfg, perturbable, protected


def _generation(
    generation: Any, where: str
) -> tuple[dict[str, int], dict[str, tuple[str, ...]], dict[str, Any] | None]:
    """``generation:`` -> (budget per style, stop sequences per style, JSON schema or None)."""
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
    return budgets, stops, dict(json_schema) if json_schema is not None else None


def _prompt(raw: Mapping[str, Any], where: str) -> dict[str, Any]:
    """``prompt:`` -> the compiled templates per style, the example body, and the other keys
    (variables every template sees)."""
    prompt = dict(raw)
    templates = _per_style(prompt.get("template"), f"{where}: prompt.template", str)
    missing = [s for s in STYLES if s not in templates]
    if missing:
        raise InputError(f"{where}: prompt.template: no template for style(s) {missing}")
    instructions = _per_style(prompt.get("instruction", ""), f"{where}: prompt.instruction", str)
    if "body" not in prompt:
        raise InputError(f"{where}: prompt: missing key 'body' (the template of one example)")
    named = prompt.get("templates") or {}
    if not isinstance(named, Mapping):
        raise InputError(f"{where}: prompt.templates: expected a mapping of name -> instruction")
    for tname in named:
        if not isinstance(tname, str) or not TEMPLATE_NAME.match(tname):
            raise InputError(
                f"{where}: prompt.templates: expected names of lower-case letters, digits "
                f"and _, got {tname!r}"
            )
    return {
        "template": {s: _compile(t, f"{where}: prompt.template.{s}") for s, t in templates.items()},
        "instruction": {
            s: _compile(t, f"{where}: prompt.instruction.{s}") for s, t in instructions.items()
        },
        "body": _compile(prompt["body"], f"{where}: prompt.body"),
        # {name: {style: instruction}}: the instruction templates prompt.templates selects
        "templates": {
            tname: {
                s: _compile(t, f"{where}: prompt.templates.{tname}.{s}")
                for s, t in _per_style(text, f"{where}: prompt.templates.{tname}", str).items()
            }
            for tname, text in named.items()
        },
        "vars": {k: v for k, v in prompt.items() if k not in _PROMPT_KEYS},
    }


def _sources(
    sources: Any, where: str, *, subtasks: Mapping[str, str], name: str, kind: str
) -> dict[str, Any]:
    """``sources:`` -> ``{hub, files, sample, hub_raw: source or None}``."""
    sources = sources or {}
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
    return built


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


__all__ = ["PROTECTED_SOURCES", "build_spec", "load_spec"]
