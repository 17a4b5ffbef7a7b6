"""Prompt templates (``prompt.templates``): every bundled spec declares at least five for its
language, each renders in every style and keeps the answer format; a selected template is an
arm of the pairs table beside the typo effect."""

from __future__ import annotations

import pandas as pd
import pytest

from evalpipe.benchmarks import build_prompts, get_spec
from evalpipe.benchmarks.registry import list_specs
from evalpipe.benchmarks.prompts import template_names
from evalpipe.benchmarks.spec import STYLES
from evalpipe.errors import InputError

# what each family's answer format needs the instruction to say (the parser reads it)
FORMAT_CUES = {
    "gsm8k": "####",
    "mmlu": "A, B, C",
    "jcommonsenseqa": "番号",
    "lawqa": "a",
    "lawqa_orders": "a",
    "jnli": "entailment",
    "jamp": "entailment",
}

BUNDLED = [spec.name for spec in list_specs() if spec.kind == "builtin"]


def _row(spec) -> pd.DataFrame:
    fields = {name: "テキスト text" for name in spec.perturbable}
    for name in ("question", "context", "text", "premise", "hypothesis"):
        fields.setdefault(name, "x")
    choices = ["one", "two", "three", "four"] if spec.task_type in ("mc",) else None
    subtask = next(iter(spec.subtasks), None)
    return pd.DataFrame(
        [{"example_id": f"{spec.name}/0", "fields": fields, "choices": choices, "subtask": subtask}]
    )


@pytest.mark.parametrize("name", BUNDLED)
def test_bundled_spec_declares_five_templates_that_render(name):
    spec = get_spec(name)
    names = template_names(spec)
    assert len(names) >= 5, f"{name} ({spec.language}) declares {len(names)} templates"
    row = _row(spec)
    for style in STYLES:
        own = build_prompts(spec, row, None, style=style, n_shots=0)[0]
        rendered = {
            t: build_prompts(spec, row, None, style=style, n_shots=0, template=t)[0] for t in names
        }
        assert len(set(rendered.values())) == len(names), "templates must differ"
        for t, text in rendered.items():
            assert text != own
            # the layout around the instruction is the spec's own (body, cues)
            assert text.endswith(own[-10:]), (name, t, style)
            if style != "cot" and name in FORMAT_CUES:
                assert FORMAT_CUES[name] in text, (name, t)


def test_default_prompts_unchanged_and_unknown_template_named():
    spec = get_spec("gsm8k")
    row = _row(spec)
    assert build_prompts(spec, row, None, style="zero_shot", n_shots=0)[0].startswith(
        "Solve the following grade-school math problem."
    )
    with pytest.raises(InputError, match=r"prompt\.templates.*'nope'.*plain"):
        build_prompts(spec, row, None, style="zero_shot", n_shots=0, template="nope")
