"""params.yaml `models` over `model_defaults`, the model comparison table and scored views."""

from __future__ import annotations

import math

import pytest

from evalpipe.errors import InputError
from evalpipe.inference.tiny import tiny_random_seed
from evalpipe.model_list import model_benchmarks, model_config, model_configs
from evalpipe.params import load_params
from evalpipe.params_schema import engine_defaults
from evalpipe.scoring.comparison import model_comparison
from evalpipe.scoring.views import parse_view, primary_views, view_name


def test_entries_override_the_shared_defaults_in_file_order():
    params = {
        "model_defaults": {"backend": "vllm", "dtype": "auto", "max_model_len": 2048},
        "models": {
            "small": {"name": "tiny-random"},
            "big": {"name": "Qwen/Qwen2.5-7B-Instruct", "dtype": "bfloat16"},
        },
    }
    configs = model_configs(params)
    assert list(configs) == ["small", "big"]
    assert configs["small"] == {
        **engine_defaults(),
        "backend": "vllm", "dtype": "auto", "max_model_len": 2048, "name": "tiny-random",
    }  # fmt: skip
    assert configs["big"]["dtype"] == "bfloat16" and configs["big"]["max_model_len"] == 2048
    # the defaults are not changed by an entry
    assert params["model_defaults"]["dtype"] == "auto"


def test_missing_models_names_and_unknown_slugs_are_input_errors():
    with pytest.raises(InputError, match="models: expected a mapping with at least one model"):
        model_configs({"model_defaults": {"backend": "vllm"}})
    with pytest.raises(InputError, match=r"models.a.name: expected the model"):
        model_configs({"models": {"a": {"dtype": "auto"}}})
    with pytest.raises(InputError, match="no model 'c'; declared: a, b"):
        model_config({"models": {"a": {"name": "x"}, "b": {"name": "y"}}}, "c")
    with pytest.raises(InputError, match="expected a short slug"):
        model_configs({"models": {"Has Space": {"name": "x"}}})


SUITES = {"gsm8k": "english", "mmlu": "english", "jnli": "japanese"}


def test_a_model_runs_the_benchmarks_its_entry_lists_and_all_by_default(tmp_path):
    path = tmp_path / "params.yaml"
    path.write_text(
        "benchmarks:\n  suites: {gsm8k: english, mmlu: english, jnli: japanese}\n"
        "models:\n  api: {name: served, benchmarks: [jnli, gsm8k]}\n  local: {name: tiny-random}\n",
        encoding="utf-8",
    )
    params = load_params(path)
    configs = model_configs(params)
    suites = params["benchmarks"]["suites"]
    # in the suites' order, whatever the entry's
    assert model_benchmarks(configs["api"], suites, slug="api") == ("gsm8k", "jnli")
    assert model_benchmarks(configs["local"], suites, slug="local") == ("gsm8k", "mmlu", "jnli")


@pytest.mark.parametrize(
    ("chosen", "message"),
    [
        (["gsm8k", "squad"], r"models\.api\.benchmarks\[1\]: 'squad' is not in benchmarks\.suites; "
                             r"declared: gsm8k, mmlu, jnli"),
        (["mmlu", "mmlu"], r"models\.api\.benchmarks\[1\]: 'mmlu' is listed twice"),
        ([], r"models\.api\.benchmarks: expected a list of benchmarks of benchmarks\.suites"),
    ],
)  # fmt: skip
def test_a_model_benchmark_outside_the_suites_is_a_clear_error(chosen, message):
    with pytest.raises(InputError, match=message):
        model_benchmarks({"benchmarks": chosen}, SUITES, slug="api")


def test_tiny_random_revisions_name_weight_seeds():
    assert tiny_random_seed(None) == 0
    assert tiny_random_seed("seed12") == 12
    with pytest.raises(InputError, match="expected null or seed<N>"):
        tiny_random_seed("main")


def test_views_name_benchmark_and_method():
    assert view_name("jnli", "loglikelihood_norm") == "jnli.ll_norm"
    for method in ("generate", "loglikelihood", "loglikelihood_norm"):
        assert parse_view(view_name("ja_sentiment", method)) == ("ja_sentiment", method)
    # one view per benchmark for per-word tables: generated answers, else log-likelihood acc
    views = ["gsm8k", "jnli", "jnli.ll", "jnli.ll_norm", "mmlu.ll", "mmlu.ll_norm"]
    assert primary_views(views) == {"gsm8k": "gsm8k", "jnli": "jnli", "mmlu": "mmlu.ll"}


def test_comparison_has_one_row_per_model_benchmark_and_method():
    details = {
        "b-model": {
            "jnli": {"n": 10, "accuracy_original": 0.5, "accuracy_perturbed": 0.4, "delta": -0.1},
            "jnli.ll": {"n": 10, "accuracy_original": 0.6, "accuracy_perturbed": 0.6, "delta": 0.0},
        },
        "a-model": {"jnli": {"n": 10, "accuracy_original": 0.7, "delta": None, "pdr": 0.1}},
    }
    table = model_comparison(details)
    assert table[["benchmark", "method", "model"]].values.tolist() == [
        ["jnli", "generate", "a-model"],
        ["jnli", "generate", "b-model"],
        ["jnli", "loglikelihood", "b-model"],
    ]
    assert table["label"].tolist()[0] == "jnli (generate): a-model"
    assert math.isnan(table.loc[0, "delta"]) and table.loc[0, "pdr"] == 0.1
    assert table.loc[1, "delta"] == -0.1
    assert model_comparison({}).empty
