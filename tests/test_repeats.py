"""sampling.repeats and prompt.fewshot_draws: the replicates' arms and seeds, the few-shot
selections per draw, the spread figures on tiny frames, and the settings' errors."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from evalpipe.arms import FEWSHOT_DRAW, ORIGINAL, REPEAT, TYPO
from evalpipe.benchmarks import build_prompts, get_spec, load_benchmark
from evalpipe.errors import InputError
from evalpipe.inference.plan import BenchmarkInput, Sampling, plan_benchmark
from evalpipe.params import load_params
from evalpipe.paths import ProjectPaths
from evalpipe.scoring.defences import arms as defence_arms
from evalpipe.studies.repeats.generate import generation, repeat_seed, settings
from evalpipe.studies.repeats.score import source_figures, spread_figures
from tests.conftest import TEST_PARAMS


@pytest.fixture(scope="module")
def gsm8k() -> tuple[pd.DataFrame, pd.DataFrame]:
    return load_benchmark(get_spec("gsm8k"), source="sample", max_samples=3)


def _perturbed(examples: pd.DataFrame) -> pd.DataFrame:
    """Each example's clean row and two typo draws of one word (the text is the clean one: the
    arms copy rows, they never read the typos)."""
    rows = []
    for rec in examples.to_dict("records"):
        rows.append({**rec, "variant": ORIGINAL, "word_rank": 0, "draw": 0, "condition": TYPO})
        for draw in (0, 1):
            rows.append({**rec, "variant": "the", "word_rank": 1, "draw": draw, "condition": TYPO})
    return pd.DataFrame(rows).astype({"draw": "int32", "word_rank": "int64"})


def _params(**changes: object) -> dict:
    params = load_params(str(TEST_PARAMS))
    for dotted, value in changes.items():
        section, key = dotted.split("__")
        params[section][key] = value
    return params


def _bench(examples, fewshot, *, style="few_shot") -> BenchmarkInput:
    rows = _perturbed(examples)
    return BenchmarkInput("gsm8k", Path("gsm8k.parquet"), rows, get_spec("gsm8k"), fewshot,
                          style, 2, "english")  # fmt: skip


def _plan(bench: BenchmarkInput, params: dict, *, seed: int | None):
    part = generation(params, ProjectPaths(Path(".")), slug="m", source="params.yaml")
    sampling = Sampling(float(params["sampling"]["temperature"]), None, seed, "generate")
    return part, plan_benchmark(bench, sampling=sampling, studies=[part] if part.enabled else [])


def test_the_defaults_add_no_arm_and_keep_every_request(gsm8k) -> None:
    bench = _bench(*gsm8k)
    part, plan = _plan(bench, _params(), seed=None)
    assert not part.enabled
    assert plan.prompts == bench.prompts(bench.rows)
    assert plan.prompts == build_prompts(bench.spec, bench.rows, bench.fewshot, style="few_shot",
                                         n_shots=2)  # fmt: skip
    assert {r.seed for r in plan.generate} == {None}


def test_repeats_add_every_pair_again_at_its_own_seed_and_the_clean_prompt_again(gsm8k) -> None:
    bench = _bench(*gsm8k)
    params = _params(sampling__temperature=0.7, sampling__seed=11, sampling__repeats=3,
                     perturb__draws=2)  # fmt: skip
    _, plan = _plan(bench, params, seed=11)
    rows = plan.rows.assign(seed=[r.seed for r in plan.generate], prompt=plan.prompts)
    typo = rows.loc[(rows["condition"] == TYPO) & (rows["variant"] != ORIGINAL)]
    # draw = typo draw + 2 * repeat: every replicate one more pair of its example
    assert sorted(typo["draw"].unique()) == [0, 1, 2, 3, 4, 5]
    seeds = {0: 11, 1: repeat_seed(11, 1), 2: repeat_seed(11, 2)}
    assert len(set(seeds.values())) == 3 and all(0 <= s < 2**31 for s in seeds.values())
    assert (typo["seed"] == typo["draw"].floordiv(2).map(seeds)).all()
    # the clean row is answered once in the typo arm; the repeat arm has it and two reseeded copies
    assert ((rows["condition"] == TYPO) & (rows["variant"] == ORIGINAL)).sum() == 3
    again = rows.loc[rows["condition"] == REPEAT]
    assert again.groupby("example_id").size().tolist() == [3, 3, 3]
    assert set(again.loc[again["variant"] == ORIGINAL, "seed"]) == {11}
    reseeded = again.loc[again["variant"] == REPEAT]
    assert (reseeded["seed"] == reseeded["draw"].map(seeds)).all()
    assert again.groupby("example_id")["prompt"].nunique().eq(1).all()  # one prompt, 3 seeds
    keys = ["example_id", "word_rank", "draw", "condition"]
    assert not rows.duplicated(keys).any()  # the outputs' row key stays unique


def test_fewshot_draws_choose_other_demonstrations_per_example(gsm8k) -> None:
    examples, fewshot = gsm8k
    assert len(fewshot) > 2
    bench = _bench(examples, fewshot)
    params = _params(prompt__style="few_shot", prompt__n_shots=2, prompt__fewshot_draws=3,
                     perturb__draws=2)  # fmt: skip
    _, plan = _plan(bench, params, seed=None)
    rows = plan.rows.assign(prompt=plan.prompts)
    typo = rows.loc[(rows["condition"] == TYPO) & (rows["variant"] != ORIGINAL)]
    assert sorted(typo["draw"].unique()) == [0, 1, 2, 3, 4, 5]
    by_draw = typo.groupby(typo["draw"] // 2)["prompt"].apply(tuple)
    assert by_draw[0] != by_draw[1] or by_draw[0] != by_draw[2]  # other demonstrations
    drawn = rows.loc[rows["condition"] == FEWSHOT_DRAW]
    assert drawn.groupby("example_id")["prompt"].nunique().max() > 1
    # the same draw renders the same demonstrations again (hashed, not random)
    again = bench.prompts(bench.rows, shots_draw=2)
    assert again == bench.prompts(bench.rows, shots_draw=2)
    assert bench.prompts(bench.rows, shots_draw=0) == bench.prompts(bench.rows)


def test_settings_that_cannot_give_a_spread_are_refused() -> None:
    with pytest.raises(InputError, match=r"sampling.repeats: 3 repeats need sampling.temperature"):
        settings(_params(sampling__repeats=3, sampling__seed=1), source="params.yaml")
    with pytest.raises(InputError, match=r"need sampling.seed"):
        settings(_params(sampling__repeats=2, sampling__temperature=0.5), source="params.yaml")
    with pytest.raises(
        InputError, match=r"prompt.fewshot_draws: 2 draws need prompt.style few_shot"
    ):
        settings(_params(prompt__fewshot_draws=2), source="params.yaml")
    assert settings(_params(), source="params.yaml") == (1, 1)


def _pairs(source: str, original, perturbed, clusters, before=None, after=None) -> pd.DataFrame:
    n = len(original)
    return pd.DataFrame({
        "view": "v", "condition": source, "cluster": clusters,
        "correct_original": original, "correct_perturbed": perturbed,
        "prediction_original": before if before is not None else ["A"] * n,
        "prediction_perturbed": after if after is not None else ["A"] * n,
    })  # fmt: skip


def test_spread_figures_set_each_source_beside_the_typo_effect() -> None:
    typo = _pairs(TYPO, [True] * 4, [False, True, False, True], [0, 0, 1, 1],
                  after=["B", "A", "B", "A"])  # fmt: skip
    rerun = _pairs(REPEAT, [True, True, False], [True, False, False], [0, 1, 2],
                   before=["A", "A", None], after=["A", "B", None])  # fmt: skip
    figures = spread_figures(pd.concat([typo, rerun]), level=0.95, repeats=2, fewshot_draws=1)
    view = figures["views"]["v"]
    assert set(view) == {TYPO, REPEAT}
    assert view[TYPO]["delta"] == -0.5 and view[TYPO]["n_examples"] == 2
    assert view[TYPO]["answer_change"] == 0.5
    assert view[REPEAT]["delta"] == pytest.approx(-1 / 3)
    assert view[REPEAT]["answer_change"] == pytest.approx(1 / 3)  # both unparsed: no change
    for f in view.values():
        assert f["ci_low"] <= f["delta"] <= f["ci_high"]
        assert f["answer_change_low"] <= f["answer_change"] <= f["answer_change_high"]


def test_answer_change_interval_counts_examples_not_pairs() -> None:
    # 3 examples x 4 replicates, all of one example changed: the cluster interval is wide
    clusters = np.repeat([0, 1, 2], 4)
    after = ["B"] * 4 + ["A"] * 8
    clustered = source_figures(_pairs(REPEAT, [True] * 12, [True] * 12, clusters, after=after),
                               level=0.95)  # fmt: skip
    independent = source_figures(
        _pairs(REPEAT, [True] * 12, [True] * 12, np.arange(12), after=after), level=0.95
    )
    assert clustered["answer_change"] == independent["answer_change"] == pytest.approx(1 / 3)
    width = clustered["answer_change_high"] - clustered["answer_change_low"]
    assert width > independent["answer_change_high"] - independent["answer_change_low"]


def test_the_spread_arms_are_not_defences() -> None:
    pairs = pd.DataFrame({"condition": [TYPO, REPEAT, FEWSHOT_DRAW, "warned"]})
    assert defence_arms(pairs) == ["warned"]


def test_the_report_sets_the_spread_beside_the_typo_effect() -> None:
    import evalpipe.report  # noqa: F401  (the report package first: it lists the parts)
    from evalpipe.studies.repeats.report import spread_section

    assert spread_section({}) is None  # no repeats.json: no section
    figures = {"delta": -0.1, "ci_low": -0.2, "ci_high": 0.0, "n": 12, "n_examples": 4,
               "answer_change": 0.25, "answer_change_low": 0.1, "answer_change_high": 0.4}  # fmt: skip
    rerun = {**figures, "delta": 0.0, "ci_low": -0.05, "ci_high": 0.05, "answer_change": 0.05,
             "answer_change_low": 0.0, "answer_change_high": 0.12}  # fmt: skip
    html = spread_section({"m": {"views": {"imdb": {TYPO: figures, REPEAT: rerun}}}})
    assert html is not None and "repeats-table" in html
    table = html[html.index("<table") :]
    assert table.index("typos (every replicate)") < table.index("rerun at another seed")
    assert "[-0.200, 0.000]" in html and "[0.000, 0.120]" in html
