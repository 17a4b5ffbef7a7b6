"""The score stage on hand-made outputs (the generate stage's contract), and end to end in a
temporary Git + DVC repository: metrics and plots diff across commits."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest
import yaml
from click.testing import CliRunner

from evalpipe.scoring.names import PAIR_COLUMNS
from evalpipe.scoring.summaries import HEADLINE_KEYS
from stages.score import main as score_main
from tests.conftest import TEST_PARAMS
from tests.scoring_fixtures import make_outputs

REPO = Path(__file__).resolve().parents[1]
NAMES = ("mmlu", "jcommonsenseqa", "jnli", "imdb", "gsm8k", "jsquad")
M = "tiny-random"  # the default params' one model slug


def headline(root: Path, name: str) -> dict:
    return json.loads((root / "metrics" / M / f"{name}.json").read_text())


def _setup(
    root: Path, *, p_flip: float = 0.3, strict: bool = True, names=NAMES, p_correct: float = 0.7
) -> Path:
    (root / "data" / "outputs" / M).mkdir(parents=True, exist_ok=True)
    for k, name in enumerate(names):
        make_outputs(name, seed=k, p_flip=p_flip, p_correct=p_correct).to_parquet(
            root / "data" / "outputs" / M / f"{name}.parquet"
        )
    params = yaml.safe_load(TEST_PARAMS.read_text(encoding="utf-8"))
    params["scoring"]["sentiment_strict"] = strict
    params["scoring"]["bootstrap_samples"] = 200
    (root / "params.yaml").write_text(yaml.safe_dump(params), encoding="utf-8")
    return root


def flatten(metrics: dict) -> dict:
    """``{"mmlu": {"delta": 1}}`` -> ``{"mmlu.delta": 1}``, as `dvc metrics show` names columns."""
    return {f"{name}.{key}": value for name, keys in metrics.items() for key, value in keys.items()}


def _run(root: Path):
    return CliRunner().invoke(
        score_main, ["--root", str(root), "--params", str(root / "params.yaml")]
    )


def test_stage_scores_every_row_and_counts_every_unparsed_output(tmp_path):
    root = _setup(tmp_path)
    result = _run(root)
    assert result.exit_code == 0, result.output
    assert "6 benchmarks" in result.output
    robustness = json.loads((root / "data" / "scored" / M / "robustness_details.json").read_text())
    classification = json.loads(
        (root / "data" / "scored" / M / "classification_details.json").read_text()
    )
    assert sorted(robustness) == sorted(NAMES)
    assert sorted(classification) == ["imdb", "jcommonsenseqa", "jnli", "mmlu"]
    for name in NAMES:
        outputs = pd.read_parquet(root / "data" / "outputs" / M / f"{name}.parquet")
        scored = pd.read_parquet(root / "data" / "scored" / M / f"{name}.parquet")
        assert len(scored) == len(outputs)
        assert {"prediction", "parse_status", "correct", "score"} <= set(scored.columns)
        unparsed = int((scored["parse_status"] == "unparsed").sum())
        assert robustness[name]["unparsed"] == unparsed
        assert not scored.loc[scored["parse_status"] == "unparsed", "correct"].any()
        originals = scored[scored["variant"] == "original"]
        assert robustness[name]["accuracy_base"] == pytest.approx(
            originals["correct"].mean(), abs=1e-4
        )
        errors = (
            (root / "data" / "scored" / M / "errors" / f"{name}.jsonl").read_text().splitlines()
        )
        wrong = int((~scored["correct"]).sum())
        assert len(errors) == min(20, wrong)
        assert {"output", "parse_status", "prediction"} <= set(json.loads(errors[0]))
    assert classification["mmlu"]["n"] == 12
    confusion = pd.read_csv(root / "plots" / M / "confusion.csv")
    assert list(confusion.columns[-2:]) == ["actual", "predicted"]
    assert len(confusion) == 4 * 12
    words = pd.read_csv(root / "plots" / M / "word_accuracy_drop.csv")
    assert len(words) == 6 * 3
    assert (
        words["accuracy_drop"]
        == (words["accuracy_original"] - words["accuracy_perturbed"]).round(4)
    ).all()
    rate = pd.read_csv(root / "plots" / M / "accuracy_by_rate.csv")
    assert rate["n"].sum() == sum(len(make_outputs(n)) for n in NAMES)


def test_stage_pairs_once_and_every_paired_figure_groups_the_pairs_table(tmp_path):
    root = _setup(tmp_path, names=("mmlu", "jnli"))
    summaries = {"mmlu": {"language": "english", "rows": 3}, "jnli": {"language": "japanese"}}
    (root / "data" / "outputs" / M / "perturbation.json").write_text(json.dumps(summaries))
    result = _run(root)
    assert result.exit_code == 0, result.output
    scored = root / "data" / "scored" / M
    pairs = pd.read_parquet(scored / "pairs.parquet")
    assert pairs.columns.tolist() == PAIR_COLUMNS
    assert set(pairs["model"]) == {M} and set(pairs["view"]) == {"mmlu", "jnli"}
    for name in ("mmlu", "jnli"):
        rows = pd.read_parquet(scored / f"{name}.parquet")
        mine = pairs.loc[pairs["view"] == name]
        assert len(mine) == int((rows["variant"] != "original").sum())
        details = json.loads((scored / "robustness_details.json").read_text())[name]
        assert details["n"] == len(mine)
        delta = mine["correct_perturbed"].mean() - mine["correct_original"].mean()
        assert details["delta"] == pytest.approx(delta, abs=1e-4)
    assert set(pairs.loc[pairs["view"] == "jnli", "language"]) == {"japanese"}
    # generate's perturbation summaries pass on unchanged: nothing later reads data/perturbed
    assert json.loads((scored / "perturbation.json").read_text()) == summaries


def test_metrics_files_hold_headline_keys_and_details_hold_the_rest(tmp_path):
    root = _setup(tmp_path)
    assert _run(root).exit_code == 0
    details = json.loads((root / "data" / "scored" / M / "robustness_details.json").read_text())
    files = sorted(p.name for p in (root / "metrics" / M).iterdir())
    assert files == sorted(f"{name}.json" for name in NAMES)
    for name in NAMES:
        metrics = headline(root, name)
        assert set(metrics) == set(HEADLINE_KEYS)
        assert metrics == {short: details[name][key] for short, key in HEADLINE_KEYS.items()}
        assert {"flip_c2i", "mcnemar_p", "n_words", "unparsed", "truncated"} <= set(details[name])
    class_details = json.loads(
        (root / "data" / "scored" / M / "classification_details.json").read_text()
    )
    for name in ("imdb", "jcommonsenseqa", "jnli", "mmlu"):
        assert {"per_class", "confusion", "n", "invalid", "f1_macro"} <= set(class_details[name])
    # `dvc metrics show` prints one row per file and one column per key over all files: the
    # the same twelve short keys everywhere keep the table narrow.
    keys = {k for name in NAMES for k in headline(root, name)}
    assert keys == set(HEADLINE_KEYS) and len(keys) == 12


def test_strict_accuracy_counts_only_strict_parses(tmp_path):
    root = _setup(tmp_path, names=("gsm8k",))
    path = root / "data" / "outputs" / M / "gsm8k.parquet"
    frame = pd.read_parquet(path)
    originals = (frame["variant"] == "original").to_numpy()
    # The first four originals answer right with an answer statement, the rest right by the
    # last number only: strict 4 / 12, flexible 12 / 12.
    cue = [f"Step one. The answer is {a}." for a in frame["answer"]]
    bare = [f"Step one gives 2, so {a}" for a in frame["answer"]]
    rank = frame.groupby("variant").cumcount().to_numpy()
    frame["output"] = [c if (o and r < 4) or not o else b
                       for c, b, o, r in zip(cue, bare, originals, rank, strict=True)]  # fmt: skip
    frame.to_parquet(path)
    assert _run(root).exit_code == 0
    summary = json.loads((root / "data" / "scored" / M / "robustness_details.json").read_text())[
        "gsm8k"
    ]
    assert summary["accuracy_flexible"] == 1.0
    assert summary["accuracy_strict"] == round(4 / 12, 4)
    scored = pd.read_parquet(root / "data" / "scored" / M / "gsm8k.parquet")
    assert (scored.loc[originals, "parse_status"] == "strict").sum() == 4


def test_truncated_outputs_are_counted_and_warned_about_above_five_percent(tmp_path):
    root = _setup(tmp_path, names=("gsm8k", "mmlu"))
    for name, cut in (("gsm8k", 5), ("mmlu", 1)):
        path = root / "data" / "outputs" / M / f"{name}.parquet"
        frame = pd.read_parquet(path)
        frame.loc[frame.index[:cut], "finish_reason"] = "length"
        frame.to_parquet(path)
    result = _run(root)
    assert result.exit_code == 0, result.output
    details = json.loads((root / "data" / "scored" / M / "robustness_details.json").read_text())
    rows = len(make_outputs("gsm8k"))
    assert details["gsm8k"]["truncated"] == 5 and details["mmlu"]["truncated"] == 1
    assert headline(root, "gsm8k")["truncated"] == round(5 / rows, 4)
    assert 5 / rows > 0.05 > 1 / rows
    assert "warning: gsm8k: 5 outputs" in result.output
    assert "warning: mmlu" not in result.output


def test_stage_rerun_is_byte_identical(tmp_path):
    root = _setup(tmp_path)
    assert _run(root).exit_code == 0
    files = sorted(
        p for d in ("metrics", "plots", "data/scored") for p in (root / d).rglob("*") if p.is_file()
    )
    before = {p: p.read_bytes() for p in files}
    assert _run(root).exit_code == 0
    assert {p: p.read_bytes() for p in files} == before


def test_non_strict_sentiment_reports_an_invalid_class(tmp_path):
    root = _setup(tmp_path, strict=False, names=("imdb",))
    assert _run(root).exit_code == 0
    details = root / "data" / "scored" / M / "classification_details.json"
    report = json.loads(details.read_text())["imdb"]
    assert "invalid" in report["per_class"]
    assert report["invalid"] == sum(row["invalid"] for row in report["confusion"].values())


def test_missing_column_names_file_and_column(tmp_path):
    root = _setup(tmp_path, names=("mmlu",))
    path = root / "data" / "outputs" / M / "mmlu.parquet"
    pd.read_parquet(path).drop(columns=["output"]).to_parquet(path)
    result = _run(root)
    assert result.exit_code == 2
    assert "mmlu.parquet" in result.output and "'output'" not in result.output
    assert "missing column(s) output" in result.output
    assert not (root / "metrics" / M).exists()


def test_unknown_benchmark_file_is_an_input_error(tmp_path):
    root = _setup(tmp_path, names=("mmlu",))
    shutil.copy(
        root / "data" / "outputs" / M / "mmlu.parquet",
        root / "data" / "outputs" / M / "nosuch.parquet",
    )
    result = _run(root)
    assert result.exit_code == 2
    assert "nosuch.parquet" in result.output and "known benchmarks" in result.output


def test_no_outputs_is_an_input_error(tmp_path):
    root = _setup(tmp_path, names=())
    result = _run(root)
    assert result.exit_code == 2
    assert "no *.parquet outputs" in result.output


@pytest.mark.slow
@pytest.mark.e2e
def test_metrics_and_plots_diff_across_commits(project):
    """Commit a scored run, change the outputs and a scoring param on a branch, re-run the stage
    with `dvc repro`, and see the change in `dvc metrics diff main` and `dvc plots diff main`."""
    root = project.root
    for name in ("plots", "metrics"):
        for stale in (root / name).glob("*"):
            shutil.rmtree(stale) if stale.is_dir() else stale.unlink()
    _setup(root, names=("mmlu", "imdb", "jsquad"))
    project.dvc("repro", "--single-item", f"score@{M}")
    assert (root / "dvc.lock").exists()
    project.commit("score a run")

    project.git("checkout", "-q", "-b", "more-typos")
    # Fewer right originals: the headline classification metrics change too.
    _setup(root, p_flip=0.8, strict=False, names=("mmlu", "imdb", "jsquad"), p_correct=0.3)
    status = project.dvc("status", f"score@{M}").stdout
    assert "changed deps" in status or "modified" in status
    project.dvc("repro", "--single-item", f"score@{M}")

    diff = json.loads(project.dvc("metrics", "diff", "main", "--json").stdout)
    for bench in ("mmlu", "imdb", "jsquad"):
        changed = diff[f"metrics/{M}/{bench}.json"]
        assert "acc_pert" in changed
        assert "delta" in changed or "acc_orig" in changed
    text = project.dvc("metrics", "diff", "main").stdout
    assert f"metrics/{M}/mmlu.json" in text and "acc_pert" in text
    # one short row per file (the headline keys, answer_change and the gate): a wide screen
    shown = project.dvc("metrics", "show").stdout
    assert max(len(line) for line in shown.splitlines()) <= 160, shown

    plots = json.loads(project.dvc("plots", "diff", "main", "--json").stdout)
    data = plots["data"]
    confusion, by_rate = f"plots/{M}/confusion.csv", f"plots/{M}/accuracy_by_rate.csv"
    assert {confusion, by_rate} <= set(data), sorted(data)
    for name in (confusion, by_rate):
        revisions = set(data[name][0]["revisions"])
        assert revisions == {"main", "workspace"}, (name, revisions)
    values = data[by_rate][0]["content"]["data"]["values"]
    by_rev = {rev: sorted((v["bin"], v["delta"]) for v in values if v["rev"] == rev)
              for rev in ("main", "workspace")}  # fmt: skip
    assert by_rev["main"] != by_rev["workspace"]
    # The per-benchmark word table (with Holm / BH) stays a Git-tracked CSV; the impact stage's
    # top-N forest plots draw the words.
    committed = project.git("show", f"main:plots/{M}/word_accuracy_drop.csv").stdout
    assert "p_holm" in committed.splitlines()[0]
    assert committed != (root / "plots" / M / "word_accuracy_drop.csv").read_text()


@pytest.mark.e2e
@pytest.mark.vllm
@pytest.mark.slow
def test_replace_prob_change_shows_in_metrics_and_plots_diff(project):
    """The full pipeline with the tiny local model: commit a `dvc repro`, raise
    perturb.replace_prob on a branch, `dvc repro` again and diff against main."""
    root = project.root
    params_path = root / "params.yaml"

    def set_params(**changes: object) -> None:
        params = yaml.safe_load(params_path.read_text(encoding="utf-8"))
        for dotted, value in changes.items():
            node = params
            *parents, leaf = dotted.split(".")
            for key in parents:
                node = node[key]
            node[leaf] = value
        params_path.write_text(
            yaml.safe_dump(params, allow_unicode=True, sort_keys=False), encoding="utf-8"
        )

    # Small enough for two engine runs on a CPU: 2 examples per benchmark, 2 target words.
    set_params(**{"benchmarks.max_samples": 2, "words.top_n": 2, "sampling.max_tokens": 8,
                  "scoring.bootstrap_samples": 200})  # fmt: skip
    project.dvc("repro", f"score@{M}", timeout=1500)
    project.commit("baseline run")
    before = sorted(p.name for p in (root / "metrics" / M).iterdir())

    project.git("checkout", "-q", "-b", "more-typos")
    set_params(**{"perturb.replace_prob": 0.6})
    project.dvc("repro", f"score@{M}", timeout=1500)
    after = sorted(p.name for p in (root / "metrics" / M).iterdir())
    assert after == before
    # Every output is counted: the tiny model's unparseable answers included.
    details = json.loads((root / "data" / "scored" / M / "robustness_details.json").read_text())
    for name, summary in details.items():
        scored = pd.read_parquet(root / "data" / "scored" / M / f"{name}.parquet")
        assert summary["unparsed"] == int((scored["parse_status"] == "unparsed").sum())
        assert summary["truncated"] == int((scored["finish_reason"] == "length").sum())

    diff = json.loads(project.dvc("metrics", "diff", "main", "--json").stdout)
    changed = {
        k: v for f, keys in diff.items() if f.startswith(f"metrics/{M}/") for k, v in keys.items()
    }
    assert changed, diff
    assert {"n", "unparsed"} & set(changed), changed
    plots = json.loads(project.dvc("plots", "diff", "main", "--json").stdout)["data"]
    by_rate = f"plots/{M}/accuracy_by_rate.csv"
    assert set(plots[by_rate][0]["revisions"]) == {"main", "workspace"}
    rates = {
        rev: sorted(
            (v["bin"], v["n"])
            for v in plots[by_rate][0]["content"]["data"]["values"]
            if v["rev"] == rev
        )
        for rev in ("main", "workspace")
    }
    assert rates["main"] != rates["workspace"]


def test_report_stage_reads_every_figure_from_the_details_files(tmp_path):
    from evalpipe.paths import ProjectPaths
    from evalpipe.report.inputs import load_report_data, workspace_reader

    root = _setup(tmp_path, names=("mmlu", "gsm8k"))
    assert _run(root).exit_code == 0
    data = load_report_data(*workspace_reader(root), ProjectPaths(root))
    assert "confusion" in data.classification[M]["mmlu"]
    assert {"mcnemar_p", "accuracy_strict", "truncated_rate"} <= set(data.robustness[M]["gsm8k"])
    assert f"data/scored/{M}/classification_details.json" in data.provenance["inputs"]


def _with_loglikelihoods(root: Path, name: str) -> pd.DataFrame:
    """Add the generate stage's ll_* columns: originals give the gold choice the highest
    log-probability, perturbed rows the next label (every typo flips the log-likelihood answer)."""
    from evalpipe.benchmarks import get_spec

    path = root / "data" / "outputs" / M / f"{name}.parquet"
    frame = pd.read_parquet(path)
    labels = list(get_spec(name).labels)
    picks = []
    for gold, variant in zip(frame["answer"], frame["variant"], strict=True):
        index = labels.index(str(gold))
        picks.append(index if variant == "original" else (index + 1) % len(labels))
    frame["ll_choices"] = [labels] * len(frame)
    frame["ll_continuations"] = [[" " + label for label in labels]] * len(frame)
    frame["ll_logprobs"] = [[-1.0 if j == p else -2.0 for j in range(len(labels))] for p in picks]
    frame["ll_tokens"] = [[1] * len(labels)] * len(frame)
    frame["ll_greedy"] = [[j == p for j in range(len(labels))] for p in picks]
    frame.to_parquet(path)
    return frame


@pytest.mark.parametrize("method", ["both", "loglikelihood"])
def test_loglikelihood_views_are_scored_beside_or_instead_of_the_generated_answers(
    tmp_path, method
):
    root = _setup(tmp_path, names=("mmlu", "jnli", "gsm8k"))
    params = yaml.safe_load((root / "params.yaml").read_text(encoding="utf-8"))
    params["scoring"]["method"] = method
    params["scoring"]["calibration"] = True
    (root / "params.yaml").write_text(yaml.safe_dump(params), encoding="utf-8")
    frames = {name: _with_loglikelihoods(root, name) for name in ("mmlu", "jnli")}
    result = _run(root)
    assert result.exit_code == 0, result.output
    files = sorted(p.stem for p in (root / "metrics" / M).glob("*.json"))
    ll_views = ["jnli.ll", "jnli.ll_norm", "mmlu.ll", "mmlu.ll_norm"]
    # gsm8k has no fixed choices: generated answers whatever the method
    generated = ["gsm8k", "jnli", "mmlu"] if method == "both" else ["gsm8k"]
    # scoring.calibration adds readouts.json beside the log-likelihood views
    assert files == sorted([*generated, *ll_views, "readouts"])
    readouts = json.loads((root / "metrics" / M / "readouts.json").read_text())["calibration"]
    assert sorted(readouts) == ll_views
    for view in ll_views:
        assert readouts[view]["accuracy_original"] == 1.0
        assert readouts[view]["accuracy_perturbed"] == 0.0
        assert readouts[view]["n"] == headline(root, view)["n"]
    details = json.loads((root / "data" / "scored" / M / "robustness_details.json").read_text())
    for name, frame in frames.items():
        for view in (f"{name}.ll", f"{name}.ll_norm"):
            figures = headline(root, view)
            assert figures["acc_orig"] == 1.0 and figures["acc_pert"] == 0.0
            assert figures["unparsed"] == 0.0 and figures["truncated"] == 0.0
            assert figures["n"] == details[view]["n"]
            scored = pd.read_parquet(root / "data" / "scored" / M / f"{view}.parquet")
            assert len(scored) == len(frame)  # every row scored, none dropped
        agreement = details[f"{name}.ll"].get("method_agreement")
        if method == "both":
            generate = pd.read_parquet(root / "data" / "scored" / M / f"{name}.parquet")
            ll = pd.read_parquet(root / "data" / "scored" / M / f"{name}.ll.parquet")
            same = (generate["prediction"] == ll["prediction"]) & (
                generate["parse_status"] != "unparsed"
            )
            assert agreement["n"] == len(frame)
            assert agreement["agreement"] == round(same.mean(), 4)
            assert f"{name}: generated and log-likelihood answers agree" in result.output
        else:
            assert agreement is None
    classification = json.loads(
        (root / "data" / "scored" / M / "classification_details.json").read_text()
    )
    assert classification["mmlu.ll"]["accuracy"] == 1.0
