"""One verdict per row at study scale: does any printed interval disagree with the p beside it?

Builds synthetic scored views with ``perf/pairs_scale.py``'s builder (11 benchmarks x examples x
target words; about 100,000 perturbed prompts by default) with planted word effects: a share of
the words harmful (an extra flip probability on originally correct answers, drawn per word, the
same in every benchmark of the language), the others harmless (flips both ways balanced), and
examples of random fragility (every flip probability of an example scaled by a log-normal
factor, so pairs of one example are correlated and the operation and script rows get design
effects > 1). Many rows then sit near the 0.05 boundary.

Then runs the real code path on a temporary project folder: the score stage's pairing and
groupings (``pairs_scale.run_score``: ``build_pairs``, ``build_reports``, the details, headline
metrics and plot tables it writes) and the impact stage itself (``stages/impact.py``: word,
operation and script tables with the adjusted columns, dose, token split, top words, model
comparison). It reads back every written table that prints an interval beside a p-value and
counts, per (interval, p column), the rows where "the interval excludes 0" and "p < 1 - level"
disagree, on the values as written (the score stage's tables are rounded to 4 decimals; the
impact tables are not). It also counts boundary rows: p within 1e-9 of 1 - level or an interval
limit within 1e-9 of 0 (the bisection's tolerance is far below), and, on rounded tables, rows
printed with p = 1 - level or a limit of 0.

Which p columns the interval inverts: ``mcnemar_p`` (the score test of Tango's interval) and
``adjusted_p`` (the t test of the adjusted effect's t interval). ``mcnemar_exact_p`` is another
test (exact, conservative) and ``p_holm`` / ``p_bh`` / ``adjusted_p_holm`` answer another question
(the family of rows): their disagreements are printed for reference, not as failures.

    python perf/verdict_agreement.py                          # ~100,000 perturbed prompts
    python perf/verdict_agreement.py --draws 4 --hit 0.045    # 4 typo draws per hit, same size
    python perf/verdict_agreement.py --examples 100 --keep /tmp/v  # keep the folder to inspect

Nothing is asserted; the figures go into docs/scoring.md ("One verdict per row").
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import click
import numpy as np
import pandas as pd

from evalpipe.scoring.verdicts import alpha_of

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "perf")]

import pairs_scale  # noqa: E402  (perf/pairs_scale.py: the study builder)

INVERTED = {"mcnemar_p", "adjusted_p"}
BOUNDARY = 1e-9
LEVEL = 0.95  # pairs_scale.run_score scores at the params' default confidence level


def planted_flips(
    *,
    words: int,
    examples: int,
    harmful: float,
    harm: float,
    base: float,
    fragility: float,
    accuracy: float = 0.6,
    seed: int = 31,
) -> tuple[Callable[..., np.ndarray], int]:
    """The ``flips`` hook of :func:`pairs_scale.make_views` with planted word effects, and the
    number of harmful words.

    A harmless word flips an originally correct answer with probability ``base / (2 accuracy)``
    and a wrong one with ``base / (2 (1 - accuracy))``, so both directions are equally frequent
    (delta 0); a harmful word (share ``harmful``) adds an extra flip probability drawn uniformly
    in ``[0, 2 harm]`` to the correct ones. Every probability of an example is scaled by its
    fragility, log-normal with log-sd ``fragility`` and mean 1 in each benchmark.
    """
    rng = np.random.default_rng(seed)
    extra = np.where(rng.random(words) < harmful, rng.uniform(0.0, 2.0 * harm, words), 0.0)

    def flips(view_rng, benchmark, example, word, correct):
        factor = np.random.default_rng([seed, benchmark]).lognormal(0.0, fragility, examples)
        factor /= factor.mean()
        right = base / (2.0 * accuracy) + extra[word]
        wrong = base / (2.0 * (1.0 - accuracy))
        chance = np.clip(np.where(correct, right, wrong) * factor[example], 0.0, 1.0)
        return view_rng.random(example.size) < chance

    return flips, int((extra > 0).sum())


def _frame_of_details(path: Path) -> pd.DataFrame:
    details = json.loads(path.read_text(encoding="utf-8"))
    return pd.DataFrame([{"view": view, **stats} for view, stats in sorted(details.items())])


def tables(folder: Path) -> list[tuple[str, pd.DataFrame, int | None]]:
    """Every written table that prints an interval beside a p-value: (name, frame, decimals
    it was rounded to, None when not rounded)."""
    from evalpipe.paths import ProjectPaths
    from evalpipe.scoring.names import POOLED

    paths = ProjectPaths(folder)
    model = pairs_scale.MODEL
    out: list[tuple[str, pd.DataFrame, int | None]] = [
        ("robustness details (per view)",
         _frame_of_details(paths.scored_details("robustness", model)), 4),
        ("word_accuracy_drop.csv (view x word)",
         pd.read_csv(paths.model_plots(model) / "word_accuracy_drop.csv"), 4),
    ]  # fmt: skip
    for kind in ("words", "operations", "scripts"):
        frame = pd.read_parquet(paths.impact(kind))
        pooled = frame["scope"] == POOLED
        out.append((f"impact {kind}, pooled", frame.loc[pooled], None))
        out.append((f"impact {kind}, per benchmark", frame.loc[~pooled], None))
    for language in ("english", "japanese"):
        out.append((f"top_words_{language}.csv", pd.read_csv(paths.top_words_plot(language)), 4))
    out.append(("models.csv (model comparison)", pd.read_csv(paths.model_comparison), 4))
    return out


def interval_columns(frame: pd.DataFrame) -> list[tuple[str, str, list[str]]]:
    """(low, high, p columns printed beside them) of a table."""
    found = []
    for low, high, prefix in (("ci_low", "ci_high", ""), ("adjusted_ci_low", "adjusted_ci_high",
                                                          "adjusted_")):  # fmt: skip
        if low not in frame.columns:
            continue
        if prefix:
            ps = [c for c in ("adjusted_p", "adjusted_p_holm") if c in frame.columns]
        else:
            ps = [c for c in ("mcnemar_p", "mcnemar_exact_p", "p_holm", "p_bh")
                  if c in frame.columns]  # fmt: skip
        found.append((low, high, ps))
    return found


def count(
    frame: pd.DataFrame, low: str, high: str, p: str, *, alpha: float, decimals: int | None
) -> dict[str, int]:
    """Rows, interval excludes 0, p < alpha, disagreements, boundary rows and their
    disagreements."""
    values = frame[[low, high, p]].apply(pd.to_numeric, errors="coerce")
    values = values.loc[values.notna().all(axis=1)]
    lo, hi, pv = (values[c].to_numpy(dtype=float) for c in (low, high, p))
    excludes = (lo > 0) | (hi < 0)
    significant = pv < alpha
    disagree = excludes != significant
    tolerance = BOUNDARY if decimals is None else 0.5 * 10.0**-decimals
    near = (np.abs(pv - alpha) < tolerance) | (np.minimum(np.abs(lo), np.abs(hi)) < tolerance)
    return {
        "rows": int(lo.size),
        "excludes_0": int(excludes.sum()),
        "p_below": int(significant.sum()),
        "disagree": int(disagree.sum()),
        "boundary": int(near.sum()),
        "boundary_disagree": int((near & disagree).sum()),
    }


def printed_elsewhere(folder: Path, *, alpha: float) -> list[tuple[str, int, int]]:
    """The impact word, operation and script rows (unrounded) as other printers show them:
    rounded to the nearest 4 decimals (the score stage's and top-words tables without
    ``verdict_rounded``), and formatted for the HTML report (``fmt_ci`` / ``fmt_p``, 3 decimals)
    without and with the report's ``printed_verdicts``. (name, rows, disagreements between the
    interval and ``mcnemar_p`` as printed)."""
    from evalpipe.paths import ProjectPaths
    from evalpipe.report import html
    from evalpipe.report.data import ReportData, printed_verdicts

    paths = ProjectPaths(folder)
    frame = pd.concat(
        [pd.read_parquet(paths.impact(kind)) for kind in ("words", "operations", "scripts")]
    )
    frame = frame.loc[frame[["ci_low", "ci_high", "mcnemar_p"]].notna().all(axis=1)]
    kept = printed_verdicts(ReportData(words=frame)).words

    def report(rows: pd.DataFrame) -> list[np.ndarray]:
        lo, hi, p = (rows[c].to_numpy(dtype=float) for c in ("ci_low", "ci_high", "mcnemar_p"))
        shown = [s.strip("[]").split(", ") for s in map(html.fmt_ci, lo, hi)]
        return [
            np.array([float(s[0]) for s in shown]),
            np.array([float(s[1]) for s in shown]),
            np.array([float(html.fmt_p(v)) for v in p]),
        ]

    near = [np.round(frame[c].to_numpy(dtype=float), 4) + 0.0
            for c in ("ci_low", "ci_high", "mcnemar_p")]  # fmt: skip
    out = []
    for name, (a, b, c) in (
        ("nearest 4 decimals", near),
        ("report fmt_ci / fmt_p, rounded to the nearest", report(frame)),
        ("report fmt_ci / fmt_p after printed_verdicts", report(kept)),
    ):
        disagree = ((a > 0) | (b < 0)) != (c < alpha)
        out.append((name, int(a.size), int(disagree.sum())))
    return out


def run_stages(folder: Path) -> dict[str, float]:
    """The score stage's groupings and the impact stage, in this process; seconds of each."""
    from stages.impact import main as impact

    seconds = {}
    start = time.perf_counter()
    pairs_scale.run_score(folder)
    seconds["score"] = time.perf_counter() - start
    start = time.perf_counter()
    impact.main(
        ["--params", str(folder / "params.yaml"), "--root", str(folder)], standalone_mode=False
    )
    seconds["impact"] = time.perf_counter() - start
    return seconds


@click.command()
@click.option("--benchmarks", default=11, show_default=True)
@click.option("--examples", default=200, show_default=True, help="examples per benchmark")
@click.option("--words", default=250, show_default=True, help="target words per benchmark")
@click.option("--hit", default=0.18, show_default=True, help="mean share of examples a word hits")
@click.option("--draws", default=1, show_default=True, help="typo draws per (example, word) hit")
@click.option("--harmful", default=0.3, show_default=True, help="share of harmful words")
@click.option(
    "--harm", default=0.08, show_default=True, help="mean extra flip probability of a harmful word"
)
@click.option("--base", default=0.1, show_default=True, help="flip rate of a harmless word")
@click.option("--fragility", default=0.7, show_default=True, help="log-sd of example fragility")
@click.option(
    "--keep",
    type=click.Path(path_type=Path),
    default=None,
    help="Project folder to write and keep (default: a temporary one).",
)
def main(benchmarks, examples, words, hit, draws, harmful, harm, base, fragility, keep) -> None:
    """Count rows whose interval and p-value disagree, through the score and impact stages."""
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        folder = keep or Path(tmp)
        flips, harmful_words = planted_flips(words=words, examples=examples, harmful=harmful, harm=harm,
                              base=base, fragility=fragility)  # fmt: skip
        n = pairs_scale.make_views(folder, benchmarks=benchmarks, examples=examples, words=words,
                                   hit=hit, draws=draws, flips=flips)  # fmt: skip
        made = time.perf_counter() - start
        seconds = run_stages(folder)
        alpha = alpha_of(LEVEL)  # 0.05, not 1 - 0.95 = 0.050000000000000044
        click.echo(
            f"study: {benchmarks} benchmarks x {examples} examples x {words} words, hit {hit}, "
            f"{draws} draw(s) -> {n} perturbed prompts; {harmful_words} harmful words "
            f"(extra flip up to {2 * harm:g}), base flip {base:g}, fragility {fragility:g}"
        )
        click.echo(
            f"seconds: views {made:.1f}, score groupings {seconds['score']:.1f}, "
            f"impact stage {seconds['impact']:.1f}"
        )
        header = (f"{'table':40s} {'interval':18s} {'p column':16s} {'inverts':7s} {'rows':>6s} "
                  f"{'excl0':>6s} {'p<a':>6s} {'disagree':>8s} {'bound':>5s} {'b.dis':>5s}")  # fmt: skip
        click.echo(header)
        click.echo("-" * len(header))
        failures = 0
        for name, frame, decimals in tables(folder):
            for low, high, ps in interval_columns(frame):
                for p in ps:
                    c = count(frame, low, high, p, alpha=alpha, decimals=decimals)
                    inverts = p in INVERTED
                    failures += c["disagree"] if inverts else 0
                    interval = low.replace("_low", "")
                    click.echo(
                        f"{name:40s} {interval:18s} {p:16s} {'yes' if inverts else 'no':7s} "
                        f"{c['rows']:6d} {c['excludes_0']:6d} {c['p_below']:6d} "
                        f"{c['disagree']:8d} {c['boundary']:5d} {c['boundary_disagree']:5d}"
                    )
        click.echo(
            "bound: p within 1e-9 of alpha or a limit within 1e-9 of 0 (rounded tables: printed "
            "as alpha or 0); b.dis: of those, disagreeing"
        )
        for label, rows, disagree in printed_elsewhere(folder, alpha=alpha):
            click.echo(
                f"impact rows printed with {label}: {disagree} of {rows} disagree "
                "(interval vs mcnemar_p as printed)"
            )
        click.echo(
            "intervals without a p beside them: impact dose and token_split (ci only), "
            "headline metrics (no interval)"
        )
        click.echo(
            f"disagreements between an interval and the p of the test it inverts: {failures} "
            f"(total {time.perf_counter() - start:.0f} s)"
        )


if __name__ == "__main__":
    main()
