"""Prompt templates (``prompt.templates``): every bundled spec declares at least five for its
language, each renders in every style and keeps the answer format; a selected template is an
arm of the pairs table beside the typo effect."""

from __future__ import annotations

import pandas as pd
import pytest

from evalpipe.arms import ORIGINAL, TYPO, template_arm
from evalpipe.benchmarks import build_prompts, get_spec, load_benchmark
from evalpipe.benchmarks.prompts import template_names
from evalpipe.benchmarks.registry import list_specs
from evalpipe.benchmarks.spec import STYLES
from evalpipe.errors import InputError
from evalpipe.scoring.defences import arms as defence_arms
from evalpipe.studies.repeats.score import spread_figures

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


def test_selected_templates_are_arms_of_the_clean_prompt_paired_on_the_example() -> None:
    from tests.test_repeats import _bench, _params, _plan

    examples, fewshot = load_benchmark(get_spec("gsm8k"), source="sample", max_samples=3)
    bench = _bench(examples, fewshot, style="zero_shot")
    part, plain = _plan(bench, _params(), seed=None)
    assert not part.enabled  # the default: no template, the plain prompts only
    part, plan = _plan(bench, _params(prompt__templates=["terse", "teacher"]), seed=None)
    assert part.enabled
    rows = plan.rows.assign(prompt=plan.prompts)
    assert rows.loc[rows["condition"] == TYPO, "prompt"].tolist() == plain.prompts
    for name in ("terse", "teacher"):
        arm = rows.loc[rows["condition"] == template_arm(name)]
        assert arm.groupby("example_id").size().eq(2).all()  # its own clean row + the reworded one
        clean = arm.loc[arm["variant"] == ORIGINAL]
        worded = arm.loc[arm["variant"] == template_arm(name)]
        assert clean["prompt"].str.startswith("Solve the following").all()
        expected = build_prompts(bench.spec, clean, None, style="zero_shot", n_shots=0,
                                 template=name)  # fmt: skip
        assert worded["prompt"].tolist() == expected
        assert (worded["draw"] == 0).all()
    assert not rows.duplicated(["example_id", "word_rank", "draw", "condition", "variant"]).any()
    with pytest.raises(InputError, match="declares no template 'nope'"):
        _plan(bench, _params(prompt__templates=["nope"]), seed=None)


def test_template_figures_per_template_and_pooled_beside_the_typo_effect() -> None:
    from tests.test_repeats import _pairs

    typo = _pairs(TYPO, [True] * 4, [False, True, False, True], [0, 0, 1, 1],
                  after=["B", "A", "B", "A"])  # fmt: skip
    terse = _pairs(template_arm("terse"), [True, True, False], [False, False, False], [0, 1, 2],
                   after=["B", "B", "A"])  # fmt: skip
    plain = _pairs(template_arm("plain"), [True, True, False], [True, True, False], [0, 1, 2])
    figures = spread_figures(pd.concat([typo, terse, plain]), level=0.95, repeats=1,
                             fewshot_draws=1)  # fmt: skip
    view = figures["views"]["v"]
    assert set(view) == {TYPO, "template:plain", "template:terse", "templates"}
    assert view["template:terse"]["delta"] == pytest.approx(-2 / 3)
    assert view["template:terse"]["answer_change"] == pytest.approx(2 / 3)
    assert view["template:plain"]["delta"] == 0 and view["template:plain"]["answer_change"] == 0
    pooled = view["templates"]
    assert pooled["n"] == 6 and pooled["n_examples"] == 3  # one cluster per example
    assert pooled["delta"] == pytest.approx(-1 / 3)
    for f in view.values():
        assert f["ci_low"] <= f["delta"] <= f["ci_high"]

    pairs = pd.DataFrame({"condition": [TYPO, "template:terse", "warned"]})
    assert defence_arms(pairs) == ["warned"]  # a template is never a defence

    import evalpipe.report  # noqa: F401  (the report package first: it lists the parts)
    from evalpipe.studies.repeats.report import spread_section

    html = spread_section({"m": figures})
    assert html is not None
    table = html[html.index("<table") :]
    assert table.index("typos") < table.index("template plain") < table.index("every template")


def test_a_malformed_templates_entry_is_a_clear_error() -> None:
    import copy

    from evalpipe.benchmarks.spec_build import build_spec
    from evalpipe.benchmarks.spec_files import resolve, specs_root

    path = specs_root() / "gsm8k.yaml"
    data = resolve(path)
    cases = [
        (["terse"], "prompt.templates: expected a mapping"),
        ({"Terse!": "x"}, "prompt.templates: expected names of lower-case letters"),
        ({"terse": {"chat": "x"}}, "prompt.templates.terse: unknown style(s) ['chat']"),
        ({"terse": "{{ nope"}, "prompt.templates.terse"),
    ]
    for entry, needle in cases:
        broken = copy.deepcopy(data)
        broken["prompt"]["templates"] = entry
        with pytest.raises(InputError) as err:
            build_spec(broken, name="gsm8k", path=path, kind="builtin")
        assert needle in str(err.value) and "gsm8k.yaml" in str(err.value)
