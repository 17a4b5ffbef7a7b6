"""The one place that knows the project's folders. Everything is relative to a root directory
(the repository root when stages run under DVC), so library code never builds paths by hand."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


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

    def raw_words(self, language: str) -> Path:
        return self.raw / language

    def subtlex(self) -> Path:
        return self.raw / "english" / "SUBTLEX-US.xlsx"

    def bccwj(self) -> Path:
        return self.raw / "japanese" / "BCCWJ_frequencylist_suw_ver1_0.tsv"

    def words(self, language: str) -> Path:
        return self.data / "words" / f"{language}.parquet"

    def benchmark(self, name: str) -> Path:
        return self.data / "benchmarks" / f"{name}.parquet"

    def perturbed(self, name: str) -> Path:
        return self.data / "perturbed" / f"{name}.parquet"

    def outputs(self, name: str) -> Path:
        return self.data / "outputs" / f"{name}.parquet"

    @property
    def generation_cache(self) -> Path:
        return self.data / "cache" / "generations"

    def scored(self, name: str) -> Path:
        return self.data / "scored" / f"{name}.parquet"

    def errors_preview(self, name: str) -> Path:
        return self.data / "scored" / "errors" / f"{name}.jsonl"

    @property
    def raw_annotations(self) -> Path:
        return self.raw / "annotations"

    @property
    def annotation_tasks(self) -> Path:
        return self.data / "annotation" / "tasks.jsonl"

    @property
    def annotation_template(self) -> Path:
        return self.data / "annotation" / "template.xlsx"

    @property
    def annotations(self) -> Path:
        return self.data / "annotations"

    @property
    def judge_annotations(self) -> Path:
        return self.annotations / "judge.jsonl"

    @property
    def marker_annotations(self) -> Path:
        return self.annotations / "markers.jsonl"

    @property
    def consensus(self) -> Path:
        return self.annotations / "consensus.jsonl"

    @property
    def quality_reports(self) -> Path:
        return self.annotations / "quality_reports"

    @property
    def rejected(self) -> Path:
        return self.annotations / "rejected" / "low_agreement.jsonl"

    @property
    def model_cache(self) -> Path:
        """Where locally built models (tiny-random) live; outside data/ so DVC never tracks it."""
        return self.root / ".cache" / "models"


PATHS = ProjectPaths()
