"""The report stage on files laid out as the pipeline writes them, and the comparison of two
revisions in a real Git + DVC repository (checked against `dvc metrics diff` itself)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner

from evalpipe import atomic
from evalpipe.cli.compare import main as report_tool
from evalpipe.paths import ProjectPaths
from evalpipe.report.compare import diff_metrics
from evalpipe.report.html import slug as html_slug
from evalpipe.scoring.summaries import HEADLINE_KEYS
from evalpipe.sycophancy.study import json_safe, run_study
from stages.report import main as report_stage
from tests.conftest import project_env
from tests.report_fixtures import (
    classification,
    html_table,
    kappa_report,
    pairs_frame,
    robustness,
    scored_frame,
    section_body,
    section_ids,
    words_frame,
)
from tests.test_sycophancy_study import planted, settings

PARAMS = (
    "seed: 42\nprompt: {style: zero_shot}\nmodels: {tiny-random: {name: tiny-random}}\n"
    "benchmarks: {suites: {jnli: japanese, gsm8k: english}}\n"
    "report: {top_words: 5}\n"
)
M = "tiny-random"


def write_robustness(paths: ProjectPaths, figures: dict) -> None:
    """As score@<model> writes them: every figure in the details file, headline keys in metrics."""
    atomic.write_json(paths.scored_details("robustness", M), figures)
    for bench, stats in figures.items():
        headline = {short: stats.get(key) for short, key in HEADLINE_KEYS.items()}
        atomic.write_json(paths.headline_metrics(bench, M), headline)


def lay_out(root: Path, *, words: bool = True, params: bool = True) -> ProjectPaths:
    """The report's inputs as the pipeline lays them out (plus a params.yaml unless told not)."""
    paths = ProjectPaths(root)
    if params:
        (root / "params.yaml").write_text(PARAMS, encoding="utf-8")
    write_robustness(paths, robustness())
    atomic.write_json(paths.scored_details("classification", M), classification())
    atomic.write_json(paths.quality_reports / "agreement.json", {"annotators": 2})
    for axis, kappa in (("social", 0.9078), ("self", 0.62)):
        headline = {"n": 30, "kappa": kappa, "alpha": 0.88 if axis == "social" else 0.6}
        atomic.write_json(paths.metrics / "agreement" / f"{axis}.json", headline)
    atomic.write_json(paths.quality_reports / "kappa_report.json", kappa_report())
    atomic.write_jsonl(paths.rejected, [{"id": "sample_008", "reasons": ["span 2 > 1"]}])
    # As the score stage writes them: the view (with the edits and field texts) and its pairs.
    scored = scored_frame()
    atomic.write_parquet(paths.scored("jnli", M), scored)
    atomic.write_parquet(paths.scored_dir(M) / "pairs.parquet", pairs_frame(scored.assign(model=M)))
    if words:
        # as the impact stage writes it: the slug names the model
        atomic.write_parquet(paths.impact("words"), words_frame().assign(model=M))
    return paths


def write_sycophancy_study(paths: ProjectPaths) -> None:
    """The sycophancy stage's outputs the report reads, from a planted study."""
    replies, ratings, humans, _ = planted(n_dialogues=40)
    lengths = dict(zip(replies["task_id"], replies["reply_chars"], strict=True))
    result = run_study(
        replies,
        ratings,
        humans,
        lengths,
        settings({"judge0": "acme/calm-13b"}, sample_batches=False),
        prompt_version="v",
    )
    atomic.write_parquet(paths.sycophancy / "estimates.parquet", result.estimates)
    atomic.write_parquet(paths.sycophancy / "differences.parquet", result.differences)
    atomic.write_parquet(paths.sycophancy / "arm_changes.parquet", result.arm_changes)
    atomic.write_json(paths.sycophancy / "judge_validity.json", json_safe(result.validity))


def run(*args: str) -> tuple[int, str]:
    """`python -m stages.report build ...` or `evalpipe report compare ...`, in process."""
    command = report_tool if args[0] == "compare" else report_stage
    result = CliRunner().invoke(command, list(args), catch_exceptions=False)
    return result.exit_code, result.output


def test_build_writes_the_report_and_figures_byte_identically(tmp_path):
    paths = lay_out(tmp_path)
    params = str(tmp_path / "params.yaml")
    code, out = run("build", "--root", str(tmp_path), "--params", params)
    assert code == 0, out
    assert "1 benchmarks, 8 word rows, 3 missing inputs" in out  # operations, scripts, typo counts
    page = paths.report_html.read_text(encoding="utf-8")
    first = paths.report_html.read_bytes()
    assert "tiny-random@ae468db6d094" in page and "zero_shot" in page
    assert "data/impact/operations.parquet" in page  # named as missing
    assert "not recorded" in page  # no commit under DVC
    md5 = __import__("hashlib").md5(paths.scored("jnli", M).read_bytes()).hexdigest()[:12]
    assert md5 in page  # the data version of the scored file
    # the answer first, provenance (params, content hashes) last
    ids = section_ids(page)
    assert ids[0] == "answer" and ids[-1] == "provenance"
    assert md5 in section_body(page, "provenance") and md5 not in section_body(page, "answer")
    _, words, _ = html_table(page, "answer-words-english-" + html_slug(M, "wordfreq"))
    assert words[0]["word"] == "of" and words[0]["p Holm"] == "0.010"
    _, bench, _ = html_table(page, "answer-benchmarks-japanese-" + html_slug(M))
    assert (
        bench[0]["benchmark"] == "jnli" and bench[0]["unparsed: original / perturbed"] == "50% / 0%"
    )
    # the language comes from the pairs, not from params.yaml benchmarks.suites (gsm8k has none)
    _, headline, _ = html_table(page, "headline-table")
    assert {r["benchmark"]: r["language"] for r in headline} == {"gsm8k": "n/a", "jnli": "japanese"}
    figures = sorted(p.name for p in paths.report_figures.iterdir())
    assert figures == ["accuracy.svg", "agreement.svg", "words_english.svg", "words_japanese.svg"]
    svgs = {p.name: p.read_bytes() for p in paths.report_figures.iterdir()}
    code, _ = run("build", "--root", str(tmp_path), "--params", params)
    assert code == 0
    assert paths.report_html.read_bytes() == first
    assert {p.name: p.read_bytes() for p in paths.report_figures.iterdir()} == svgs


def test_build_without_impact_tables_says_what_is_missing(tmp_path):
    paths = lay_out(tmp_path, words=False)
    code, out = run("build", "--root", str(tmp_path), "--params", str(tmp_path / "params.yaml"))
    assert code == 0, out
    assert "data/impact/words.parquet is missing" in paths.report_html.read_text(encoding="utf-8")
    assert "no per-word impact rows" in (paths.report_figures / "words_english.svg").read_text()


def test_a_broken_metrics_file_stops_the_stage_naming_the_file(tmp_path):
    paths = lay_out(tmp_path)
    paths.scored_details("robustness", M).write_text("{not json", encoding="utf-8")
    code, out = run("build", "--root", str(tmp_path), "--params", str(tmp_path / "params.yaml"))
    assert code == 2
    assert f"data/scored/{M}/robustness_details.json: not valid UTF-8 JSON" in out
    assert not paths.report_html.exists()


def _sh(root: Path, *args: str) -> str:
    proc = subprocess.run(
        list(args), cwd=root, env=project_env(), text=True, capture_output=True, check=True
    )
    return proc.stdout


@pytest.fixture
def two_revisions(tmp_path) -> Path:
    """A Git + DVC repository whose HEAD has one set of metrics and whose workspace another."""
    root = tmp_path / "repo"
    root.mkdir()
    lay_out(root)
    (root / "dvc.yaml").write_text(
        f"metrics:\n  - metrics/{M}\n  - metrics/agreement\n", encoding="utf-8"
    )
    _sh(root, "git", "init", "-q")
    _sh(root, "git", "config", "user.email", "t@example.org")
    _sh(root, "git", "config", "user.name", "t")
    _sh(root, "dvc", "init", "-q")
    _sh(root, "git", "add", "-A")
    _sh(root, "git", "commit", "-qm", "v1")
    changed = robustness()
    changed["jnli"] = {**changed["jnli"], "delta": -0.05, "accuracy_perturbed": 0.55}
    write_robustness(ProjectPaths(root), changed)
    words = words_frame().assign(model=M)
    words.loc[words["word"] == "and", "delta"] = -0.35
    atomic.write_parquet(ProjectPaths(root).impact("words"), words)
    return root


def test_our_metrics_diff_agrees_with_dvc_metrics_diff(two_revisions):
    root = two_revisions
    dvc = json.loads(_sh(root, "dvc", "metrics", "diff", "--json", "HEAD"))
    path = f"metrics/{M}/jnli.json"
    old = json.loads(_sh(root, "git", "show", f"HEAD:{path}"))
    new = json.loads((root / path).read_text())
    ours = diff_metrics({path: old}, {path: new})
    assert set(ours) == set(dvc) == {path}
    theirs = dvc[path]
    assert set(ours[path]) == set(theirs) == {"delta", "acc_pert"}
    for key, entry in ours[path].items():
        assert entry["old"] == theirs[key]["old"] and entry["new"] == theirs[key]["new"]
        assert entry["diff"] == pytest.approx(theirs[key]["diff"])


def test_compare_puts_head_and_workspace_side_by_side(two_revisions):
    root = two_revisions
    code, out = run(
        "compare",
        "--a",
        "HEAD",
        "--b",
        "workspace",
        "--root",
        str(root),
        "--params",
        str(root / "params.yaml"),
    )
    assert code == 0, out
    assert "2 changed metrics" in out  # jnli.delta, jnli.accuracy_perturbed
    page = ProjectPaths(root).report_compare_html.read_text(encoding="utf-8")
    assert "HEAD vs workspace" in page
    assert "dvc metrics diff --json HEAD" in page  # what dvc said, not our own diff
    assert "+0.100" in page  # delta -0.15 -> -0.05
    # per-word change read from the workspace; HEAD's words come from Git (tracked there)
    assert "-0.400" in page
    head = _sh(root, "git", "rev-parse", "HEAD").strip()
    assert head in page and f"{head} + uncommitted changes" in page


def test_loader_reads_the_agreement_summary_and_the_per_axis_headlines(tmp_path):
    from evalpipe.report.inputs import load_report_data, workspace_reader

    paths = lay_out(tmp_path)
    data = load_report_data(*workspace_reader(tmp_path), paths)
    assert data.agreement == {"annotators": 2}  # the full figures: a data file
    assert data.metrics["metrics/agreement/self.json"] == {"n": 30, "kappa": 0.62, "alpha": 0.6}
    assert "data/annotations/quality_reports/agreement.json" in data.provenance["inputs"]
    # Only what the built report shows is hashed into it (the headlines are not its deps).
    assert not any(p.startswith("metrics/agreement/") for p in data.provenance["inputs"])


def test_compare_takes_an_axis_kappa_from_its_headline_file_when_data_is_absent(two_revisions):
    """The per-axis metrics are in Git at every commit; the kappa report and summary are DVC
    data a teammate may not have pulled."""
    root = two_revisions
    paths = ProjectPaths(root)
    atomic.write_json(
        paths.metrics / "agreement" / "self.json", {"n": 40, "kappa": 0.7, "alpha": 0.6}
    )
    (paths.quality_reports / "kappa_report.json").unlink()
    (paths.quality_reports / "agreement.json").unlink()
    code, out = run(
        "compare", "--a", "HEAD", "--root", str(root), "--params", str(root / "params.yaml")
    )
    assert code == 0, out
    assert "4 changed metrics" in out  # jnli.delta, jnli.accuracy_perturbed; self: n, kappa
    dvc = json.loads(_sh(root, "dvc", "metrics", "diff", "--json", "HEAD"))
    assert dvc["metrics/agreement/self.json"]["kappa"]["new"] == 0.7
    page = paths.report_compare_html.read_text(encoding="utf-8")
    table = page[page.index('id="compare-agreement"') :]
    table = table[: table.index("</table>")]
    assert "0.620" in table and "0.700" in table and "+0.080" in table


def test_compare_rejects_an_unknown_revision(two_revisions):
    code, out = run(
        "compare",
        "--a",
        "nope",
        "--root",
        str(two_revisions),
        "--params",
        str(two_revisions / "params.yaml"),
    )
    assert code == 2 and "'nope' is not a Git revision" in out


@pytest.mark.slow
@pytest.mark.e2e
@pytest.mark.timeout(900)
def test_dvc_repro_report_and_image_plots_across_commits(project):
    """`dvc repro` runs the report stage as dvc.yaml declares it; its SVG figures are image plots
    that `dvc plots show/diff` embed (no chart library), and `compare` reads main from Git."""
    root = project.root
    paths = lay_out(root, params=False)
    write_sycophancy_study(paths)  # dvc.yaml's report stage reads the study's files too
    project.dvc("repro", "--single-item", "report")
    page = paths.report_html.read_text(encoding="utf-8")
    assert "jnli" in page and "tiny-random" in page
    assert "reports/report.html" not in project.git("ls-files").stdout  # cached, not in Git
    shown = json.loads(project.dvc("plots", "show", "--json").stdout)["data"]
    for name in ("accuracy", "agreement", "words_english", "words_japanese"):
        entries = shown[f"plots/report/{name}.svg"]
        assert [e["type"] for e in entries] == ["image"], (name, entries)
    project.commit("report")
    assert "report" not in project.dvc("status", "report").stdout  # up to date

    changed = robustness()
    changed["jnli"] = {**changed["jnli"], "accuracy_perturbed": 0.2, "delta": -0.4}
    write_robustness(paths, changed)
    project.dvc("repro", "--single-item", "report")
    diff = json.loads(project.dvc("plots", "diff", "main", "--json").stdout)["data"]
    revisions = {e["revisions"][0] for e in diff["plots/report/accuracy.svg"]}
    assert revisions == {"main", "workspace"}
    project.run(
        "python", "-m", "evalpipe.cli", "report", "compare", "--a", "main", "--b", "workspace"
    )
    compare = paths.report_compare_html.read_text(encoding="utf-8")
    assert "main vs workspace" in compare and "-0.250" in compare  # delta -0.15 -> -0.40
    assert "dvc metrics diff --json main" in compare


@pytest.mark.e2e
@pytest.mark.vllm
@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_dvc_repro_writes_the_report_from_the_whole_pipeline(project):
    """`dvc repro report` on the defaults (shrunk for a CPU) with two models (tiny-random and
    the same architecture with other random weights) scored by generation and log-likelihood:
    every upstream stage runs, each model gets its own outputs, scores and headline metrics,
    the comparison table and the report cover both, and forcing the report gives the same
    bytes."""
    import yaml

    root = project.root
    params_path = root / "params.yaml"
    params = yaml.safe_load(params_path.read_text(encoding="utf-8"))
    params["benchmarks"]["max_samples"] = 2
    params["words"]["top_n"] = 2
    params["sampling"]["max_tokens"] = 8
    params["scoring"]["bootstrap_samples"] = 100
    params["scoring"]["method"] = "both"
    params["impact"]["bootstrap_samples"] = 100
    params["models"]["tiny-b"] = {"name": "tiny-random", "revision": "seed1"}
    params_path.write_text(
        yaml.safe_dump(params, allow_unicode=True, sort_keys=False), encoding="utf-8"
    )
    proc = project.dvc("repro", "report", timeout=1700)
    assert "Running stage 'report'" in proc.stdout
    for stage in ("generate@tiny-random", "generate@tiny-b", "score@tiny-random", "score@tiny-b"):
        assert f"Running stage '{stage}'" in proc.stdout, stage
    paths = ProjectPaths(root)
    suites = list(params["benchmarks"]["suites"])
    ids = {}
    for slug in ("tiny-random", "tiny-b"):
        outputs = {p.stem for p in paths.outputs_dir(slug).glob("*.parquet")}
        assert outputs == set(suites), slug
        frame = pd.read_parquet(paths.outputs("jnli", slug))
        assert set(frame["model"]) == {slug}
        ids[slug] = set(frame["model_id"])
        assert {"ll_choices", "ll_logprobs"} <= set(frame.columns)
        # the chosen choice is the argmax of the stored log-probabilities
        ll = pd.read_parquet(paths.scored("jnli.ll", slug))
        best = [row[int(max(range(len(row)), key=row.__getitem__))] for row in
                frame["ll_logprobs"].map(list)]  # fmt: skip
        picked = [lp[list(ch).index(p)] for lp, ch, p in
                  zip(frame["ll_logprobs"], frame["ll_choices"], ll["prediction"], strict=True)]  # fmt: skip
        assert picked == best
        headlines = {p.stem for p in paths.model_metrics(slug).glob("*.json")}
        assert {"gsm8k", "jnli", "jnli.ll", "jnli.ll_norm", "mmlu.ll"} <= headlines
        assert "gsm8k.ll" not in headlines  # free-form: no fixed choices
    assert ids["tiny-random"] != ids["tiny-b"]  # two different models
    comparison = pd.read_csv(paths.model_comparison)
    assert set(comparison["model"]) == {"tiny-random", "tiny-b"}
    assert set(comparison["method"]) == {"generate", "loglikelihood", "loglikelihood_norm"}
    details = json.loads(paths.scored_details("robustness", "tiny-b").read_text())
    assert 0.0 <= details["jnli.ll"]["method_agreement"]["agreement"] <= 1.0
    shown = project.dvc("metrics", "show", "metrics/tiny-random", "metrics/tiny-b").stdout
    # one narrow row per metrics file: the headline keys and the gate
    assert max(len(line) for line in shown.splitlines()) <= 200, shown
    shown = project.dvc("metrics", "show").stdout
    assert "metrics/tiny-b/jnli.ll.json" in shown

    page = paths.report_html.read_text(encoding="utf-8")
    for slug in ("tiny-random", "tiny-b"):
        for gone in (
            f"data/scored/{slug}/robustness_details.json",
            f"data/scored/{slug}/*.parquet",
        ):
            assert f"{gone}: " not in page, gone  # not listed under "Missing inputs"
    assert "data/impact/words.parquet: " not in page
    assert "tiny-random@" in page and "tiny-b: tiny-random@" in page and '<del class="edit"' in page
    words = pd.read_parquet(paths.impact("words"))
    assert set(words["model"]) == {"tiny-random", "tiny-b"}
    for language in sorted(set(words["language"])):
        assert f'id="words-{language}-' in page, language
    first = paths.report_html.read_bytes()
    project.dvc("repro", "--force", "--single-item", "report")
    assert paths.report_html.read_bytes() == first
    assert "changed" not in project.dvc("status", "report").stdout

    # Another revision of one model re-runs only that model's stages (and what reads them all).
    params["models"]["tiny-b"]["revision"] = "seed2"
    params_path.write_text(
        yaml.safe_dump(params, allow_unicode=True, sort_keys=False), encoding="utf-8"
    )
    project.dvc("repro", "--single-item", "params")  # the edit reaches data/params.yaml
    status = project.dvc("status").stdout
    assert "generate@tiny-b" in status and "generate@tiny-random" not in status, status


def test_details_files_fill_what_the_headline_metrics_leave_out(tmp_path):
    """metrics/<model>/*.json hold headline keys only; data/scored/<model>/*_details.json have
    the confusion matrices and McNemar p the report shows."""
    paths = lay_out(tmp_path)
    code, out = run("build", "--root", str(tmp_path), "--params", str(tmp_path / "params.yaml"))
    assert code == 0, out
    page = paths.report_html.read_text(encoding="utf-8")
    assert "actual \\ predicted" in page  # the confusion matrix, from the details file
    assert ">0.041<" in page  # jnli McNemar p, only in the details file
