"""The answer-type registry: what a benchmark's answer is, and how to parse and normalise it.

A benchmark spec names an answer type (``answer: {type: choice_letter, digit_map: null}``); this
registry maps the type to its parser in :mod:`evalpipe.answers.parsers`, the options the parser
accepts, the options a spec declares per subtask (BBH: each subtask's answer format), whether its predictions live in a
closed label space (classification metrics), and which scoring params override an option. Stages
and the scorer ask the registry; none of them dispatches on parser names.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from evalpipe.answers.parsers import ParseResult, normalise_gold, parse_answer
from evalpipe.errors import InputError
from evalpipe.registries import ANSWER_METRICS

# How a prediction is compared with the gold answers (a spec's `metric`; evalpipe.answers.metrics).
METRICS = ANSWER_METRICS.names


@dataclass(frozen=True)
class AnswerType:
    """One kind of answer.

    Attributes
    ----------
    name : the type's name in spec files.
    parser : the key of :data:`evalpipe.answers.parsers.PARSERS` that reads it.
    uses_labels : the parser takes the benchmark's ``labels`` as its label space.
    options : further options a spec may set under ``answer:`` (with their defaults).
    subtask_options : options a spec declares per subtask, under ``subtasks.<name>.answer``
        (BBH: ``format``, ``words``); a row gets its subtask's.
    required_subtask_options : of those, the ones every subtask must declare.
    classification : predictions live in the closed label space (confusion matrix, macro F1).
    scoring_params : ``{option: key of the scoring params}`` that override an option at scoring
        time (``json_label``'s ``strict`` follows ``scoring.sentiment_strict``).
    """

    name: str
    parser: str
    uses_labels: bool = False
    options: Mapping[str, Any] = field(default_factory=dict)
    subtask_options: tuple[str, ...] = ()
    required_subtask_options: tuple[str, ...] = ()
    classification: bool = False
    scoring_params: Mapping[str, str] = field(default_factory=dict)

    def spec_options(
        self, answer: Mapping[str, Any], labels: Sequence[str] | None, *, where: str
    ) -> dict[str, Any]:
        """The parser options a spec's ``answer:`` entry gives, validated (the keyword
        arguments of the parser and of :meth:`normalise_gold`; "parser options" throughout).

        Parameters
        ----------
        answer : the spec's ``answer`` mapping (``type`` plus options).
        labels : the spec's label space, or None.
        where : the spec file, for error messages.

        Returns
        -------
        dict : keyword arguments for the parser (``labels`` first when the type uses them).

        Raises
        ------
        InputError
            On an option the type does not take, or labels missing where they are needed.
        """
        unknown = sorted(set(answer) - {"type"} - set(self.options))
        if unknown:
            known = ", ".join(sorted(self.options)) or "none"
            raise InputError(
                f"{where}: answer: option(s) {unknown} are not options of answer type "
                f"{self.name!r} (its options: {known})"
            )
        out: dict[str, Any] = {}
        if self.uses_labels:
            if not labels:
                raise InputError(
                    f"{where}: answer type {self.name!r} needs `labels:` (the label space)"
                )
            out["labels"] = [str(label) for label in labels]
        for key, default in self.options.items():
            if key in answer:
                out[key] = answer[key]
            elif default is not None:
                out[key] = default
        return out

    def subtask_spec_options(
        self, subtask: str, answer: Any, base: Mapping[str, Any], *, where: str
    ) -> dict[str, Any]:
        """The parser options one subtask's ``answer:`` entry gives, validated.

        Parameters
        ----------
        subtask : the subtask's name.
        answer : its ``subtasks.<name>.answer`` mapping, or None when absent.
        base : the spec's own parser options (checked together with the subtask's).
        where : the spec file, for error messages.

        Returns
        -------
        dict : the subtask's options (added to ``base`` for its rows).

        Raises
        ------
        InputError
            On a missing required option, an option the type does not take per subtask, or a
            value the parser refuses (an unknown BBH format, binary without its words).
        """
        at = f"{where}: subtasks.{subtask}.answer"
        if answer is None:
            answer = {}
        if not isinstance(answer, Mapping):
            raise InputError(f"{at}: expected a mapping of answer options, got {answer!r}")
        unknown = sorted(set(answer) - set(self.subtask_options))
        if unknown:
            known = ", ".join(self.subtask_options) or "none"
            raise InputError(
                f"{at}: option(s) {unknown} are not per-subtask options of answer type "
                f"{self.name!r} (its per-subtask options: {known})"
            )
        missing = [k for k in self.required_subtask_options if answer.get(k) in (None, "")]
        if missing:
            raise InputError(
                f"{at}: missing {missing}: answer type {self.name!r} needs them for every subtask"
            )
        options = dict(answer)
        try:
            # an empty output exercises the options without parsing anything
            self.parse("", **base, **options)
        except InputError as exc:
            raise InputError(f"{at}: {exc}") from None
        return options

    def parser_options(
        self,
        options: Mapping[str, Any],
        *,
        subtask: str | None = None,
        scoring: Mapping[str, Any] | None = None,
        subtasks: Mapping[str, Mapping[str, Any]] | None = None,
    ) -> dict[str, Any]:
        """The parser options of one row: the spec's, plus its subtask's, plus scoring-param
        overrides (``BenchmarkSpec.parser_options`` calls this with the spec's own).

        Parameters
        ----------
        options : the parser options of the spec's ``answer:`` entry (``spec.answer_options``).
        subtask : the row's subtask; one the spec does not list adds nothing.
        scoring : the ``scoring`` params section, or None.
        subtasks : ``{subtask: parser options}`` the spec declares (``spec.subtask_answers``).

        Returns
        -------
        dict

        Examples
        --------
        >>> ANSWER_TYPES["json_label"].parser_options(
        ...     {"labels": ["positive", "negative"], "strict": True},
        ...     scoring={"sentiment_strict": False},
        ... )
        {'labels': ['positive', 'negative'], 'strict': False}
        """
        out = dict(options)
        if isinstance(subtask, str) and subtasks and subtask in subtasks:
            out.update(subtasks[subtask])
        for option, param in self.scoring_params.items():
            if scoring is not None and param in scoring:
                out[option] = scoring[param]
        return out

    def parse(self, text: str | None, **options: Any) -> ParseResult:
        """Parse a model output (see :func:`evalpipe.answers.parsers.parse_answer`)."""
        return parse_answer(self.parser, text, **options)

    def normalise_gold(self, gold: str | None, **options: Any) -> str | None:
        """The gold answer in the canonical form :meth:`parse` predicts."""
        return normalise_gold(self.parser, gold, **options)

    def has_invalid_class(self, options: Mapping[str, Any]) -> bool:
        """Whether out-of-label answers form their own "invalid" class (lenient json_label)."""
        return "strict" in self.options and not bool(options.get("strict", True))


ANSWER_TYPES: dict[str, AnswerType] = {
    t.name: t
    for t in (
        # a letter (or other label) naming one of the choices: MMLU A-D, a local set's a-d
        AnswerType(
            "choice_letter",
            "mc_letter",
            uses_labels=True,
            options={"digit_map": None},
            classification=True,
        ),
        # the 0-based index of a choice: JCommonsenseQA "0"-"4"
        AnswerType("choice_index", "mc_index", uses_labels=True, classification=True),
        # a number: GSM8K
        AnswerType("number", "numeric"),
        # BBH: multiple choice, yes/no, integers or free text; each subtask declares its format
        AnswerType(
            "bbh",
            "bbh",
            subtask_options=("format", "words"),
            required_subtask_options=("format",),
        ),
        # a word from a closed label set: NLI labels, a local classification set
        AnswerType(
            "label", "nli", uses_labels=True, options={"aliases": None}, classification=True
        ),
        # a JSON object {label, confidence, reason}: IMDB sentiment
        AnswerType(
            "json_label",
            "json_label",
            uses_labels=True,
            options={"strict": True},
            classification=True,
            scoring_params={"strict": "sentiment_strict"},
        ),
        # a short free-text answer: JSQuAD spans, NIILC answers
        AnswerType("span", "extractive"),
    )
}


def get_answer_type(name: str, *, where: str = "spec") -> AnswerType:
    """The answer type called ``name``.

    Parameters
    ----------
    name : a key of :data:`ANSWER_TYPES`.
    where : the spec file, for the error message.

    Returns
    -------
    AnswerType

    Raises
    ------
    InputError
        For an unknown name; the message lists the known ones.

    Examples
    --------
    >>> get_answer_type("choice_letter").parse("ANSWER: B", labels=["A", "B"]).prediction
    'B'
    """
    try:
        return ANSWER_TYPES[name]
    except (KeyError, TypeError):
        raise InputError(
            f"{where}: unknown answer type {name!r}; known types: {', '.join(ANSWER_TYPES)}"
        ) from None
