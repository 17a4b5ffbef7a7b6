"""Format variants of a choice benchmark: the same examples with the options in another order,
under another label set, or asking for an incorrect option (params ``formats``).

A variant is a pure rewrite of the rows and of the prompt's labels; the answers are parsed by the
benchmark's own parser (in the variant's label space for a label variant) and mapped back to the
original option through :func:`original_choice`. Every variant keeps the benchmark's
instruction and layout, so what differs between two arms is the format alone:

- **order** (``orders: cyclic``): option ``j`` is shown at position ``(j + s) mod k`` for every
  shift ``s = 1..k-1``, so the gold visits every position across the arms; ``orders: all``:
  every permutation but the identity, at most :data:`ALL_CAP` of them, chosen in hashed order.
  The gold (``answer``/``answers``) is rewritten to the label now at the gold option.
- **labels** (``labels: [digits, circled, ...]``, :data:`evalpipe.arms.FORMAT_LABELS`): the
  options in their order under another label set, in the body (where the spec renders
  ``labels``) and in the instruction (every standalone mention of the benchmark's labels is
  replaced, in order). A spec whose body does not render ``labels`` (JCommonsenseQA numbers
  its options itself) gets no label arm; ``katakana`` and ``circled`` only apply to Japanese.
- **incorrect** (``incorrect: true``): one sentence after the instruction asks for one option
  that is *not* correct; every option but the gold is accepted (``answers``), so a model that
  reads the question scores as it would on the plain prompt.
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

import pandas as pd

from evalpipe.arms import FORMAT_LABELS, FormatVariant
from evalpipe.benchmarks.prompts import Example, render
from evalpipe.benchmarks.rows import hash_key
from evalpipe.benchmarks.spec import BenchmarkSpec
from evalpipe.errors import InputError

ORDERS = ("none", "cyclic", "all")
ALL_CAP = 24  # orders: all: at most this many permutations besides the identity
JAPANESE_ONLY = ("katakana", "circled")
INCORRECT = {
    "english": "Note: this time, choose one option that is NOT correct, and answer with its label.",
    "japanese": "ただし今回は、正しくない選択肢を1つ選んで回答してください。",
}


def check_config(cfg: Mapping[str, Any], *, source: str) -> None:
    """Reject an unknown order mode or label set, naming the key."""
    if cfg["orders"] not in ORDERS:
        raise InputError(
            f"{source}: formats.orders: expected one of {', '.join(ORDERS)}, got {cfg['orders']!r}"
        )
    for name in cfg["labels"] or []:
        if name not in FORMAT_LABELS:
            raise InputError(
                f"{source}: formats.labels: unknown label set {name!r}; expected some of "
                f"{', '.join(FORMAT_LABELS)}"
            )


def enabled(cfg: Mapping[str, Any]) -> bool:
    """Whether ``formats`` asks for any arm."""
    return cfg["orders"] != "none" or bool(cfg["labels"]) or bool(cfg["incorrect"])


def applies(spec: BenchmarkSpec) -> bool:
    """Format arms apply to benchmarks with options and a label space (``task_type: mc``)."""
    return spec.task_type == "mc" and bool(spec.labels) and spec.answer.classification


def _orders(k: int, mode: str, name: str) -> list[tuple[int, ...]]:
    identity = tuple(range(k))
    if mode == "cyclic":
        # shift s shows original option i at position (i + s) mod k
        return [tuple((j - s) % k for j in range(k)) for s in range(1, k)]
    if mode == "all":
        others = [p for p in itertools.permutations(range(k)) if p != identity]
        others.sort(key=lambda p: hash_key("formats", name, "-".join(map(str, p))))
        return sorted(others[:ALL_CAP])
    return []


def _probe(spec: BenchmarkSpec, fields: Mapping[str, str]) -> bool:
    """Whether the body shows a label set it is given (rendered on one example's fields)."""
    k = len(spec.labels or [])
    probe = replace(spec, labels=[f"<<{i}>>" for i in range(k)])
    example = Example(fields=dict(fields), choices=[f"c{i}" for i in range(k)], subtask=None)
    try:
        text = render(probe, example, [], style="zero_shot")
    except InputError:
        return False
    return all(f"<<{i}>>" in text for i in range(k))


def example_fields(rows: pd.DataFrame) -> dict[str, str]:
    """The first row's fields (what :func:`variants` renders its probe with)."""
    if rows.empty:
        return {}
    value = rows["fields"].iloc[0]
    parsed = json.loads(value) if isinstance(value, str) else dict(value)
    return {str(k): str(v) for k, v in parsed.items()}


def variants(
    spec: BenchmarkSpec, cfg: Mapping[str, Any], *, fields: Mapping[str, str]
) -> list[FormatVariant]:
    """The format arms ``cfg`` (params ``formats``) asks of one benchmark ([] where none apply);
    ``fields``: one example's, to check that the body renders ``labels``."""
    if not applies(spec):
        return []
    labels = list(spec.labels or [])
    k = len(labels)
    out = [
        FormatVariant("order=" + "-".join(map(str, p)), "order", p)
        for p in _orders(k, cfg["orders"], spec.name)
    ]
    identity = tuple(range(k))
    if cfg["labels"] and _probe(spec, fields):
        for name in cfg["labels"]:
            shown = FORMAT_LABELS[name][:k]
            if name in JAPANESE_ONLY and spec.language != "japanese":
                continue
            if len(shown) < k or list(shown) == labels:
                continue
            out.append(FormatVariant(f"labels={name}", "labels", identity, tuple(shown)))
    if cfg["incorrect"] and k >= 2:
        out.append(FormatVariant("incorrect", "incorrect", identity, asks_incorrect=True))
    return out


def gold_index(spec: BenchmarkSpec, answer: Any) -> int | None:
    """The original option a gold answer names (None when it names none)."""
    if answer is None or (isinstance(answer, float) and answer != answer):
        return None
    options = spec.parser_options(None)
    canonical = spec.answer.normalise_gold(str(answer), **options)
    labels = [str(x) for x in spec.labels or []]
    return labels.index(canonical) if canonical in labels else None


def variant_rows(spec: BenchmarkSpec, rows: pd.DataFrame, variant: FormatVariant) -> pd.DataFrame:
    """``rows`` rewritten for ``variant``: choices reordered, the gold relabelled (in the
    benchmark's label space for an order or incorrect arm, in the variant's for a label arm),
    ``condition`` the variant's."""
    labels = list(variant.labels or spec.labels or [])
    order = variant.order
    out = rows.copy()
    choices, answers, golds = [], [], []
    for i, rec in enumerate(rows.to_dict("records")):
        opts = rec.get("choices")
        if opts is None or len(opts) != len(order):
            n = 0 if opts is None else len(opts)
            raise InputError(
                f"{spec.name}, row {i + 1} ({rec['example_id']}): formats: expected "
                f"{len(order)} choices (the benchmark's labels), got {n}"
            )
        choices.append([opts[j] for j in order])
        gold = gold_index(spec, rec.get("answer"))
        if gold is None:
            raise InputError(
                f"{spec.name}, row {i + 1} ({rec['example_id']}): formats: the gold answer "
                f"{rec.get('answer')!r} names none of the labels {', '.join(spec.labels or [])}"
            )
        at = order.index(gold)
        if variant.asks_incorrect:
            accepted = [labels[j] for j in range(len(order)) if j != at]
        else:
            accepted = [labels[at]]
        golds.append(accepted[0])
        answers.append(accepted)
    out["choices"] = choices
    out["answer"] = golds
    out["answers"] = answers
    out["condition"] = variant.condition
    return out


class _Instruction:
    """A spec's instruction template, then the variant's rewrite of its text."""

    def __init__(self, template: Any, old: Sequence[str], new: Sequence[str] | None, tail: str):
        self.template, self.old, self.new, self.tail = template, list(old), new, tail

    def render(self, context: Mapping[str, Any]) -> str:
        text = self.template.render(context)
        if self.new:
            text = relabel(text, self.old, self.new)
        return f"{text} {self.tail}".strip() if self.tail else text


def relabel(text: str, old: Sequence[str], new: Sequence[str]) -> str:
    """Every standalone mention of a label in ``old`` replaced by the one at its place in ``new``
    (standalone: not inside a word, so the "A" of "Answer" stays).

    >>> relabel("Answer with the letter (A, B, C or D).", "ABCD", ["①", "②", "③", "④"])
    'Answer with the letter (①, ②, ③ or ④).'
    """
    table = dict(zip(old, new, strict=False))
    pattern = re.compile(
        r"(?<![0-9A-Za-z])(" + "|".join(re.escape(x) for x in old) + r")(?![0-9A-Za-z])"
    )
    return pattern.sub(lambda m: table[m.group(1)], text)


def variant_spec(spec: BenchmarkSpec, variant: FormatVariant) -> BenchmarkSpec:
    """The spec whose prompts show ``variant``: its labels in the body and instruction, and the
    incorrect-option sentence after the instruction."""
    if variant.labels is None and not variant.asks_incorrect:
        return spec
    tail = INCORRECT.get(spec.language, INCORRECT["english"]) if variant.asks_incorrect else ""
    old = list(spec.labels or [])
    instruction = {
        style: _Instruction(t, old, variant.labels, tail)
        for style, t in spec.prompt["instruction"].items()
    }
    prompt = {**spec.prompt, "instruction": instruction}
    labels = list(variant.labels) if variant.labels else spec.labels
    return replace(spec, prompt=prompt, labels=labels)


def variant_fewshot(
    spec: BenchmarkSpec, fewshot: pd.DataFrame | None, variant: FormatVariant
) -> pd.DataFrame | None:
    """The few-shot pool of a label arm with its answers in the variant's labels (a
    demonstration's target equal to its answer follows it); other arms' pool unchanged (their
    demonstrations keep their options in place)."""
    if fewshot is None or variant.labels is None or "answer" not in fewshot.columns:
        return fewshot
    out = fewshot.copy()
    answers, targets = [], []
    has_target = "target" in out.columns
    for rec in out.to_dict("records"):
        gold = gold_index(spec, rec.get("answer"))
        new = variant.labels[gold] if gold is not None else rec.get("answer")
        answers.append(new)
        if has_target:
            target = rec.get("target")
            targets.append(new if target == rec.get("answer") else target)
    out["answer"] = answers
    if has_target:
        out["target"] = targets
    return out
