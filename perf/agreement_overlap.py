"""The headline kappa on designs with unequal pair overlap, next to alpha and reference packages.

    python perf/agreement_overlap.py

Prints, for each design, the plain-mean headline (unweighted mean of the defined pairwise kappas,
computed with sklearn), the headline evalpipe reports (pair-size-weighted mean over pairs with at
least ``min_pair_overlap`` shared items), the same over all pairs, Krippendorff's alpha (ours and
the ``krippendorff`` package), and the largest difference between evalpipe's pairwise kappas and
``sklearn.metrics.cohen_kappa_score(..., labels=[1..5], weights="quadratic")``.
Deterministic (fixed seeds); no timings.
"""

from __future__ import annotations

import warnings

import krippendorff
import numpy as np
import pandas as pd
from sklearn.metrics import cohen_kappa_score

from evalpipe.annotation.agreement import DEFAULT_MIN_PAIR_OVERLAP, agreement_report

LABELS = [1, 2, 3, 4, 5]


def to_long(values: np.ndarray) -> pd.DataFrame:
    rows = [
        (f"i{i:05d}", f"r{r}", "social", int(v), 0.9)
        for i, row in enumerate(values)
        for r, v in enumerate(row)
        if v > 0
    ]
    return pd.DataFrame(rows, columns=["id", "annotator_id", "axis", "score", "confidence"])


def sklearn_pairs(values: np.ndarray) -> list[tuple[int, int, float, int]]:
    out = []
    for a in range(values.shape[1]):
        for b in range(a + 1, values.shape[1]):
            both = (values[:, a] > 0) & (values[:, b] > 0)
            if not both.any():
                continue
            with warnings.catch_warnings(), np.errstate(divide="ignore", invalid="ignore"):
                warnings.simplefilter("ignore")  # sklearn warns and returns NaN when undefined
                k = cohen_kappa_score(
                    values[both, a], values[both, b], labels=LABELS, weights="quadratic"
                )
            out.append((a, b, float(k), int(both.sum())))
    return out


def designs() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    out = {}
    truth = rng.integers(1, 6, size=200)
    v = np.zeros((202, 3), dtype=int)
    v[:200, 0] = v[:200, 1] = truth
    v[200:, 0], v[200:, 2] = [1, 5], [5, 1]
    out["a-b agree on 200, a-c opposite on 2"] = v

    rng = np.random.default_rng(1)
    truth = rng.integers(1, 6, size=60)
    base = np.clip(truth[:, None] + rng.choice([-1, 0, 1], (60, 3), p=[0.1, 0.8, 0.1]), 1, 5)
    base[:5] = np.arange(1, 6)[:, None]
    out["3 annotators x 60 items"] = base
    grown = np.zeros((60, 4), dtype=int)
    grown[:, :3] = base
    grown[:2, 3] = 6 - base[:2, 0]
    out["  + newcomer rating 2 items, far off"] = grown

    rng = np.random.default_rng(2)
    truth = rng.integers(1, 6, size=300)
    v = np.clip(truth[:, None] + rng.integers(-1, 2, size=(300, 5)), 1, 5)
    coverage = np.array([1.0, 0.8, 0.4, 0.1, 0.03])
    out["5 annotators covering 100/80/40/10/3% of 300"] = np.where(
        rng.random((300, 5)) < coverage, v, 0
    )
    return out


def main() -> None:
    header = (
        f"{'design':48s} {'plain':>8s} {'headline':>8s} {'all, n-w':>8s} "
        f"{'alpha':>7s} {'kripp.':>7s} {'max|pair-sklearn|':>17s}"
    )
    print(f"min_pair_overlap = {DEFAULT_MIN_PAIR_OVERLAP}")
    print(header)
    for name, values in designs().items():
        long = to_long(values)
        rep = agreement_report(long, axes=["social"], n_boot=0)["axes"]["social"]
        allp = agreement_report(long, axes=["social"], n_boot=0, min_pair_overlap=1)["axes"][
            "social"
        ]
        ref = sklearn_pairs(values)
        old = np.mean([k for *_, k, _ in ref if not np.isnan(k)])
        ours = {(p["a"], p["b"]): p["kappa"] for p in rep["pairs"]}
        diffs = [
            abs(ours[(f"r{a}", f"r{b}")] - k)
            for a, b, k, _ in ref
            if ours.get((f"r{a}", f"r{b}")) is not None
        ]
        kripp = krippendorff.alpha(
            np.where(values > 0, values, np.nan).T.astype(float),
            level_of_measurement="ordinal",
            value_domain=LABELS,
        )
        print(
            f"{name:48s} {old:8.3f} {rep['kappa']:8.3f} {allp['kappa']:8.3f} "
            f"{rep['alpha']:7.3f} {kripp:7.3f} {max(diffs):17.1e}"
        )


if __name__ == "__main__":
    main()
