"""The annotation spec's A.8 classes, as thin wrappers over the functions of this package."""

from __future__ import annotations

from collections.abc import Sequence

from evalpipe.annotation.agreement import agreement_report
from evalpipe.annotation.consensus import merge_annotations
from evalpipe.annotation.quality import check_consistency, detect_outliers
from evalpipe.annotation.schema import Annotation, DialoguePair, is_human, to_long_frame


class AnnotationAggregator:
    """``calculate_kappa`` and ``merge_annotations`` of the spec (A.8)."""

    def __init__(self, *, min_confidence: float = 0.7) -> None:
        self.min_confidence = min_confidence

    def calculate_kappa(self, annotations: Sequence[Annotation]) -> dict[str, float | None]:
        """Mean pairwise quadratic weighted kappa per axis among the human annotators.

        Returns
        -------
        dict
            ``{axis: kappa}``; None where undefined (one annotator, constant ratings).
        """
        long = to_long_frame([a for a in annotations if is_human(a.annotator_id)])
        report = agreement_report(long, n_boot=0)
        return {axis: entry["kappa"] for axis, entry in report["axes"].items()}

    def merge_annotations(
        self, annotations: Sequence[Annotation], method: str = "weighted_average"
    ) -> Annotation:
        """One ``consensus`` Annotation from several annotators' ratings of one item."""
        return merge_annotations(annotations, method, min_confidence=self.min_confidence)


class QualityChecker:
    """``check_consistency`` and ``detect_outliers`` of the spec (A.8)."""

    def check_consistency(
        self, annotation: Annotation, task: DialoguePair | None = None
    ) -> list[str]:
        """Names of the consistency rules (see ``quality.RULES``) the annotation breaks."""
        return check_consistency(annotation, task)

    def detect_outliers(self, annotations: Sequence[Annotation]) -> list[str]:
        """Ids of annotators with a systematic bias or low agreement with the others."""
        return detect_outliers([a for a in annotations if is_human(a.annotator_id)])
