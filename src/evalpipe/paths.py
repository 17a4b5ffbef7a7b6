"""The one place that knows the project's folders. Everything is relative to a root directory
(the repository root when stages run under DVC), so library code never builds paths by hand."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evalpipe.errors import InputError

# A model's slug names its stages (generate@<slug>) and folders (data/outputs/<slug>/, ...).
# A letter first: `dvc exp run -S models.7b.dtype=...` cannot parse a key starting with a digit.
SLUG = re.compile(r"[a-z][a-z0-9_-]{0,39}")
# Folder names already used next to the per-model ones under metrics/ and plots/.
RESERVED_SLUGS = frozenset({"agreement", "perturbation", "report", "models"})


def check_slug(slug: Any, *, where: str = "params.yaml: models") -> str:
    """The slug, or InputError saying what a slug may be.

    >>> check_slug("qwen2-7b")
    'qwen2-7b'
    """
    text = str(slug)
    if not SLUG.fullmatch(text):
        raise InputError(
            f"{where}: model key {text!r}: expected a short slug (a lower-case letter, then "
            "lower-case letters, digits, '-' or '_', at most 40 characters, e.g. qwen2-7b): it "
            "names the model's stages and folders"
        )
    if text in RESERVED_SLUGS:
        raise InputError(
            f"{where}: model key {text!r} is reserved (a folder of that name already exists "
            f"under metrics/ or plots/); choose another, e.g. {text}-model"
        )
    return text


@dataclass(frozen=True)
class ProjectPaths:
    root: Path = Path(".")

    @property
    def data(self) -> Path:
        return self.root / "data"

    @property
    def raw(self) -> Path:
        return self.data / "raw"

    @property
    def metrics(self) -> Path:
        return self.root / "metrics"

    @property
    def plots(self) -> Path:
        return self.root / "plots"

    @property
    def params(self) -> Path:
        return self.root / "params.yaml"

    @property
    def resolved_params(self) -> Path:
        """params.yaml with every key it leaves out set to the schema's default (the params
        stage): the file every other stage's DVC ``params`` name their keys in."""
        return self.data / "params.yaml"

    def raw_words(self, language: str) -> Path:
        return self.raw / language

    @property
    def raw_benchmarks(self) -> Path:
        """The publishers' files (``<name>/``) and local benchmarks (``<name>/spec.yaml``)."""
        return self.raw / "benchmarks"

    def words(self, language: str) -> Path:
        return self.data / "words" / f"{language}.parquet"

    def benchmark(self, name: str) -> Path:
        return self.data / "benchmarks" / f"{name}.parquet"

    def benchmark_fewshot(self, name: str) -> Path:
        return self.data / "benchmarks" / f"{name}.fewshot.parquet"

    def perturbed(self, name: str) -> Path:
        return self.data / "perturbed" / f"{name}.parquet"

    def perturbation_summary(self, name: str) -> Path:
        """Counts of what perturb@<name> changed (a cached data file next to its parquet)."""
        return self.data / "perturbed" / f"{name}.summary.json"

    def suite_files(self, name: str) -> tuple[Path, ...]:
        """What benchmarks@<name> and perturb@<name> write."""
        return (
            self.benchmark(name),
            self.benchmark_fewshot(name),
            self.perturbed(name),
            self.perturbation_summary(name),
        )

    def stale_suite_files(self, declared: Iterable[str]) -> list[Path]:
        """The benchmark and perturbed files of benchmarks no longer in ``benchmarks.suites``.

        DVC leaves a removed stage's outputs in place, and generate@<slug> tracks
        data/benchmarks and data/perturbed as folders: a file left there would be hashed into
        dvc.lock, and be missing (a changed dependency) in a fresh checkout.

        >>> import tempfile
        >>> paths = ProjectPaths(Path(tempfile.mkdtemp()))
        >>> for name in ("gsm8k", "jnli"):
        ...     paths.perturbed(name).parent.mkdir(parents=True, exist_ok=True)
        ...     _ = paths.perturbed(name).write_text("")
        >>> [p.name for p in paths.stale_suite_files(["gsm8k"])]
        ['jnli.parquet']
        """
        keep = {path for name in declared for path in self.suite_files(name)}
        found: list[Path] = []
        for folder, patterns in (
            (self.data / "benchmarks", ("*.parquet",)),
            (self.data / "perturbed", ("*.parquet", "*.summary.json")),
        ):
            if folder.is_dir():
                found += [p for pattern in patterns for p in folder.glob(pattern)]
        return sorted(p for p in set(found) if p not in keep and p.is_file())

    # The defend stage (docs/defences.md): every corrector's rows of every declared benchmark.

    @property
    def defended_dir(self) -> Path:
        return self.data / "defended"

    def defended(self, name: str) -> Path:
        """Rows of every corrector over perturb@<name>'s set (condition corrected:<corrector>)."""
        return self.defended_dir / f"{name}.parquet"

    def defended_summary(self) -> Path:
        """``{correctors, benchmarks: {benchmark: {corrector: counts}}}``: what the edits did."""
        return self.defended_dir / "summary.json"

    def correction_cache(self, model: str) -> Path:
        """Generation cache of an llm:<model> corrector (its own: generate@<model> owns
        data/cache/generations/<model>)."""
        return self.data / "cache" / "corrections" / model

    # Per model: every entry of params.yaml `models` (keyed by its slug) has its own outputs,
    # scores, headline metrics and plot tables, written by generate@<slug> and score@<slug>.

    def outputs_dir(self, model: str) -> Path:
        return self.data / "outputs" / model

    def outputs(self, name: str, model: str) -> Path:
        return self.outputs_dir(model) / f"{name}.parquet"

    def outputs_perturbation(self, model: str) -> Path:
        """What perturb did to the sets generate@<model> read: ``{benchmark: the
        perturbation_summary(benchmark) content}``, so nothing downstream reads data/perturbed."""
        return self.outputs_dir(model) / "perturbation.json"

    def outputs_corrections(self, model: str) -> Path:
        """The defend stage's counts of the benchmarks generate@<model> answered, passed on."""
        return self.outputs_dir(model) / "corrections.json"

    def generation_summary(self, model: str) -> Path:
        """Run counts of generate@<model> (prompts, cache hits, truncation per benchmark)."""
        return self.outputs_dir(model) / "generation.json"

    @property
    def generation_caches(self) -> Path:
        """Parent of every model's generation cache; each generate@<model> reads all of them
        (keys hold the model identity) and writes its own."""
        return self.data / "cache" / "generations"

    def generation_cache(self, model: str) -> Path:
        return self.generation_caches / model

    def scored_dir(self, model: str) -> Path:
        return self.data / "scored" / model

    def scored(self, name: str, model: str) -> Path:
        """Scored rows of one view: ``<benchmark>`` (generated answers) or
        ``<benchmark>.ll`` / ``<benchmark>.ll_norm`` (answers chosen by log-likelihood)."""
        return self.scored_dir(model) / f"{name}.parquet"

    def scored_details(self, kind: str, model: str) -> Path:
        """Every per-benchmark figure behind the headline metrics (a data file, not a metric)."""
        return self.scored_dir(model) / f"{kind}_details.json"

    def pairs(self, model: str) -> Path:
        """The model's pairs table (:mod:`evalpipe.scoring.pairs`): every arm's answer beside the
        clean prompt's, one row per (view, example, variant, word_rank, draw, condition)."""
        return self.scored_dir(model) / "pairs.parquet"

    def scored_perturbation(self, model: str) -> Path:
        """``{benchmark: perturbation summary}`` of the sets the model answered (the score stage's
        copy of generate's), so nothing after scoring reads data/perturbed."""
        return self.scored_dir(model) / "perturbation.json"

    def errors_preview(self, name: str, model: str) -> Path:
        return self.scored_dir(model) / "errors" / f"{name}.jsonl"

    def model_metrics(self, model: str) -> Path:
        """Headline metrics of one model: one small JSON per scored view, so that
        `dvc metrics show` prints one short row per (model, benchmark, method). A study's
        metrics file sits beside them, named in its package's ``paths`` module."""
        return self.metrics / model

    def headline_metrics(self, name: str, model: str) -> Path:
        return self.model_metrics(model) / f"{name}.json"

    def model_plots(self, model: str) -> Path:
        return self.plots / model

    @property
    def model_comparison(self) -> Path:
        """One row per (model, benchmark, method): the table that compares the models."""
        return self.plots / "models.csv"

    def impact(self, table: str) -> Path:
        """``words``, ``operations``, ``scripts``: the impact stage's tables; a study names its
        own in its package's ``paths`` module (e.g. ``evalpipe.studies.dose.paths``)."""
        return self.data / "impact" / f"{table}.parquet"

    def top_words_plot(self, language: str) -> Path:
        return self.plots / f"top_words_{language}.csv"

    @property
    def raw_annotations(self) -> Path:
        return self.raw / "annotations"

    @property
    def sample_annotations(self) -> Path:
        """Bundled illustrative batches, read only while ``raw_annotations`` holds none."""
        return self.data / "samples" / "annotations"

    @property
    def annotation_tasks(self) -> Path:
        return self.data / "annotation_tasks" / "tasks.jsonl"

    @property
    def annotation_template(self) -> Path:
        return self.data / "annotation_tasks" / "template.xlsx"

    @property
    def annotations(self) -> Path:
        return self.data / "annotations"

    @property
    def judge_annotations(self) -> Path:
        return self.annotations / "judge.jsonl"

    @property
    def judge_generation_cache(self) -> Path:
        """The judge's generation cache (same format as generate's; its own DVC output)."""
        return self.data / "cache" / "judge_generations"

    @property
    def judge_summary(self) -> Path:
        """Judge run counts (rated / repaired / unrated), model and prompt version."""
        return self.annotations / "judge_summary.json"

    @property
    def judge_details(self) -> Path:
        """Per task: judge status, reasoning, problems, raw output of unrated tasks."""
        return self.annotations / "judge_details.jsonl"

    @property
    def raw_dialogues(self) -> Path:
        """User-supplied dialogue JSONL files (the task format of :mod:`evalpipe.annotation.schema`) for annotation tasks."""
        return self.raw / "dialogues"

    @property
    def marker_annotations(self) -> Path:
        return self.annotations / "markers.jsonl"

    @property
    def consensus(self) -> Path:
        return self.annotations / "consensus.jsonl"

    @property
    def for_reannotation(self) -> Path:
        """Items to annotate again, with a priority and a strategy each."""
        return self.annotations / "for_reannotation.jsonl"

    @property
    def quality_reports(self) -> Path:
        return self.annotations / "quality_reports"

    @property
    def rejected(self) -> Path:
        return self.annotations / "rejected" / "low_agreement.jsonl"

    @property
    def annotation_db(self) -> Path:
        """The annotation web app's SQLite database (live data, not a pipeline artifact)."""
        return self.root / "annotation_db" / "annotations.sqlite"

    @property
    def report_html(self) -> Path:
        """The self-contained HTML report (a cached DVC output)."""
        return self.root / "reports" / "report.html"

    @property
    def report_compare_html(self) -> Path:
        """`evalpipe report compare` output (not a pipeline artifact; Git-ignored)."""
        return self.root / "reports" / "compare.html"

    @property
    def report_figures(self) -> Path:
        """The report's main figures as SVG image plots (in Git, drawn by `dvc plots`)."""
        return self.plots / "report"

    @property
    def sycophancy(self) -> Path:
        """The sycophancy study's data (docs/sycophancy.md)."""
        return self.data / "sycophancy"

    def sycophancy_replies(self, model: str) -> Path:
        """One model's replies to the sycophancy dialogues (sycophancy_replies@<model>)."""
        return self.sycophancy / "replies" / f"{check_slug(model)}.parquet"

    def sycophancy_generation_cache(self, model: str) -> Path:
        return self.data / "cache" / "sycophancy_generations" / check_slug(model)

    @property
    def sycophancy_judge_cache(self) -> Path:
        """Every panel judge's generation cache, one folder per judge slug."""
        return self.data / "cache" / "sycophancy_judges"

    @property
    def sycophancy_metrics(self) -> Path:
        """metrics/sycophancy/<model>.json, one per model."""
        return self.metrics / "sycophancy"

    @property
    def model_cache(self) -> Path:
        """Where locally built models (tiny-random) live; outside data/ so DVC never tracks it."""
        return self.root / ".cache" / "models"


PATHS = ProjectPaths()
