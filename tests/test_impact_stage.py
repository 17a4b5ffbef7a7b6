"""The impact stage on hand-made outputs and word-list files (no data/perturbed: impact reads the
score stage's pairs tables), and end to end under DVC: `dvc repro` of score + impact, then the
forest plot definition renders the top-N words."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest
import yaml
from click.testing import CliRunner

from evalpipe.scoring.adjusted import ADJUSTED_COLUMNS
from stages.impact import main as impact_main
from stages.score import main as score_main
from tests.conftest import TEST_PARAMS
from tests.scoring_fixtures import WORDS, make_outputs

REPO = Path(__file__).resolve().parents[1]
WORD_LISTS = {
    "english": pd.DataFrame({
        "rank": [1, 2, 3], "word": list(WORDS), "lemma": [None] * 3, "pos": [None] * 3,
        "score": [9.0, 8.0, 7.0], "freq_count": [None] * 3, "cd_count": [None] * 3,
        "source": ["wordfreq"] * 3,
    }),
    "japanese": pd.DataFrame({
        "rank": [1, 2, 3], "word": list(WORDS), "lemma": list(WORDS), "pos": ["名詞"] * 3,
        "score": [3.0, 2.0, 1.0], "freq_count": [None] * 3, "cd_count": [None] * 3,
        "source": ["bccwj"] * 3,
    }),
}  # fmt: skip


def _setup(
    root: Path,
    *,
    names=("mmlu", "gsm8k", "jnli"),
    p_flip: float = 0.3,
    models: dict[str, float] | None = None,
) -> Path:
    """Outputs of each model (slug -> its p_flip; default: the params' one model) and the word
    lists they share."""
    models = models or {"tiny-random": p_flip}
    (root / "data" / "words").mkdir(parents=True, exist_ok=True)
    for slug, flip in models.items():
        (root / "data" / "outputs" / slug).mkdir(parents=True, exist_ok=True)
        for k, name in enumerate(names):
            outputs = make_outputs(name, n_examples=24, seed=k, p_flip=flip).assign(model=slug)
            outputs.to_parquet(root / "data" / "outputs" / slug / f"{name}.parquet")
    for language, words in WORD_LISTS.items():
        words.to_parquet(root / "data" / "words" / f"{language}.parquet")
    params = yaml.safe_load(TEST_PARAMS.read_text(encoding="utf-8"))
    params["models"] = {slug: {"name": "tiny-random"} for slug in models}
    params["scoring"]["bootstrap_samples"] = 100
    params["impact"] = {"small_n": 10, "top_n_plot": 2, "bootstrap_samples": 200}
    (root / "params.yaml").write_text(yaml.safe_dump(params), encoding="utf-8")
    return root


def _invoke(command, root: Path):
    return CliRunner().invoke(command, ["--root", str(root), "--params", str(root / "params.yaml")])


def test_stage_writes_the_three_tables_and_top_words_per_language(tmp_path):
    root = _setup(tmp_path)
    assert _invoke(score_main, root).exit_code == 0
    result = _invoke(impact_main, root)
    assert result.exit_code == 0, result.output
    assert result.output.startswith("impact: 1 model(s), 3 benchmarks, 3 words")
    words = pd.read_parquet(root / "data" / "impact" / "words.parquet")
    assert set(words["scope"]) == {"pooled", "mmlu", "gsm8k", "jnli"}
    assert set(words["language"]) == {"english", "japanese"}
    assert words["model"].eq("tiny-random").all()
    english = words.loc[(words["language"] == "english") & (words["scope"] == "pooled")]
    assert sorted(english["word"]) == sorted(WORDS)
    # Pooled over mmlu and gsm8k, example-weighted: n is the sum of the benchmarks' n.
    per_benchmark = words.loc[words["scope"].isin(["mmlu", "gsm8k"])].groupby("word")["n"].sum()
    assert english.set_index("word")["n"].to_dict() == per_benchmark.to_dict()
    assert set(words.loc[words["language"] == "japanese", "source"]) == {"bccwj"}
    operations = pd.read_parquet(root / "data" / "impact" / "operations.parquet")
    scripts = pd.read_parquet(root / "data" / "impact" / "scripts.parquet")
    assert set(operations["op"]) <= {"replace", "insert", "delete", "mixed"}
    assert set(scripts["script"]) == {"latin", "hiragana"}  # the rows' own, as perturb wrote them
    for table in (operations, scripts):
        # beside the marginal rows, the kind's effect adjusted for word, example and benchmark
        assert list(table.columns[-len(ADJUSTED_COLUMNS) :]) == ADJUSTED_COLUMNS
        pooled = table.loc[table["scope"] == "pooled"].groupby("language")["n"].sum()
        assert pooled.to_dict() == english.groupby("language")["n"].sum().to_dict() | {
            "japanese": int(words.loc[words["scope"] == "jnli", "n"].sum())
        }
    top = pd.read_csv(root / "plots" / "top_words_english.csv")
    assert len(top) == 2
    reliable = english.loc[~english["small_n"]]
    assert top["word"].tolist() == (reliable["word"].tolist() + english["word"].tolist())[:2]
    assert {"label", "delta", "ci_low", "ci_high", "p_holm", "p_bh"} <= set(top.columns)
    assert (root / "plots" / "top_words_japanese.csv").exists()


def test_two_models_get_their_own_rows_and_a_comparison_table(tmp_path):
    root = _setup(tmp_path, names=("mmlu", "jnli"), models={"steady": 0.0, "shaky": 0.9})
    assert _invoke(score_main, root).exit_code == 0
    result = _invoke(impact_main, root)
    assert result.exit_code == 0, result.output
    words = pd.read_parquet(root / "data" / "impact" / "words.parquet")
    assert set(words["model"]) == {"steady", "shaky"}
    pooled = words.loc[words["scope"] == "pooled"].groupby("model")["delta"].mean()
    assert pooled["shaky"] < pooled["steady"]  # more flips, larger accuracy loss
    top = pd.read_csv(root / "plots" / "top_words_english.csv")
    assert set(top["model"]) == {"steady", "shaky"}
    assert top["label"].str.match(r"^(steady|shaky): ").all()  # several models: label names it
    table = pd.read_csv(root / "plots" / "models.csv")
    assert table[["benchmark", "model"]].values.tolist() == [
        ["jnli", "shaky"], ["jnli", "steady"], ["mmlu", "shaky"], ["mmlu", "steady"]
    ]  # fmt: skip
    assert set(table["method"]) == {"generate"}
    for slug in ("steady", "shaky"):
        details = json.loads(
            (root / "data" / "scored" / slug / "robustness_details.json").read_text()
        )
        row = table.loc[(table["model"] == slug) & (table["benchmark"] == "mmlu")].iloc[0]
        assert row["delta"] == details["mmlu"]["delta"] and row["n"] == details["mmlu"]["n"]
        assert row["label"] == f"mmlu (generate): {slug}"


def test_stage_rerun_is_byte_identical(tmp_path):
    root = _setup(tmp_path, names=("mmlu", "jnli"))
    assert _invoke(score_main, root).exit_code == 0
    assert _invoke(impact_main, root).exit_code == 0
    files = sorted((root / "data" / "impact").glob("*")) + sorted((root / "plots").glob("*.csv"))
    before = {p: p.read_bytes() for p in files}
    assert _invoke(impact_main, root).exit_code == 0
    assert {p: p.read_bytes() for p in files} == before


def test_missing_pairs_file_and_bad_language_are_input_errors(tmp_path):
    root = _setup(tmp_path, names=("mmlu",))
    assert _invoke(score_main, root).exit_code == 0
    path = root / "data" / "scored" / "tiny-random" / "pairs.parquet"
    frame = pd.read_parquet(path)
    frame.assign(language="klingon").to_parquet(path)
    result = _invoke(impact_main, root)
    assert result.exit_code == 2
    assert "pairs.parquet: column 'language'" in result.output and "klingon" in result.output
    path.unlink()
    result = _invoke(impact_main, root)
    assert result.exit_code == 2
    assert "tiny-random/pairs.parquet: missing" in result.output
    assert not (root / "data" / "impact" / "words.parquet").exists()


def test_help_names_the_stage():
    result = CliRunner().invoke(impact_main, ["--help"])
    assert result.exit_code == 0
    assert "accuracy" in result.output


@pytest.mark.slow
@pytest.mark.e2e
def test_dvc_repro_impact_and_forest_plot_render(project):
    root = project.root
    for stale in (root / "plots").glob("*"):
        shutil.rmtree(stale) if stale.is_dir() else stale.unlink()
    _setup(root, names=("mmlu", "jnli"))
    project.dvc("repro", "--single-item", "score@tiny-random")
    project.dvc("repro", "--single-item", "impact")
    assert "impact" in (root / "dvc.lock").read_text()
    shown = json.loads(project.dvc("plots", "show", "--json").stdout)["data"]
    plot = shown["top_words_english"][0]
    spec = plot["content"]
    assert [layer["mark"]["type"] for layer in spec["layer"]] == ["rule", "point"]
    assert spec["layer"][0]["encoding"]["x2"] == {"field": "ci_high"}
    values = spec["data"]["values"]
    assert len(values) == 2 and {"delta", "ci_low", "ci_high", "label"} <= set(values[0])
    assert not [name for name in shown if "word_accuracy_drop" in name]
    comparison = shown["models"][0]["content"]["data"]["values"]
    assert {v["benchmark"] for v in comparison} == {"mmlu", "jnli"}
    # A second run with nothing changed is a no-op for DVC.
    assert "didn't change" in project.dvc("repro", "--single-item", "impact").stdout


def test_loglikelihood_only_runs_pool_each_benchmark_once(tmp_path):
    """Under scoring.method loglikelihood, choice benchmarks have only .ll views and free-form
    ones only generated answers: the word tables take each benchmark once, from what exists."""
    from tests.test_scoring_stage import _with_loglikelihoods

    root = _setup(tmp_path, names=("mmlu", "gsm8k"))
    params = yaml.safe_load((root / "params.yaml").read_text(encoding="utf-8"))
    params["scoring"]["method"] = "loglikelihood"
    (root / "params.yaml").write_text(yaml.safe_dump(params), encoding="utf-8")
    _with_loglikelihoods(root, "mmlu")
    assert _invoke(score_main, root).exit_code == 0
    result = _invoke(impact_main, root)
    assert result.exit_code == 0, result.output
    words = pd.read_parquet(root / "data" / "impact" / "words.parquet")
    assert set(words["scope"]) == {"pooled", "mmlu", "gsm8k"}
    # the log-likelihood answers flip on every typo (see _with_loglikelihoods)
    mmlu = words.loc[words["scope"] == "mmlu"]
    assert (mmlu["accuracy_perturbed"] == 0).all() and (mmlu["accuracy_original"] == 1).all()
    rate = pd.read_csv(root / "plots" / "tiny-random" / "accuracy_by_rate.csv")
    scored = root / "data" / "scored" / "tiny-random"
    assert sorted(p.stem for p in scored.glob("*.parquet")) == [
        "gsm8k", "mmlu.ll", "mmlu.ll_norm", "pairs",
    ]  # fmt: skip
    once = sum(len(pd.read_parquet(scored / f"{v}.parquet")) for v in ("gsm8k", "mmlu.ll"))
    assert rate["n"].sum() == once  # each benchmark's rows once, not once per method
