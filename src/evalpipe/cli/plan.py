"""`evalpipe plan`: how many examples and typo draws a study needs to see a given effect.

    evalpipe plan --pilot data/scored/tiny-random --effect -0.02
    evalpipe plan --accuracy 0.6 --discordance 0.1 --effect -0.02 --draws 1,2,4 --icc 0.3
    evalpipe plan --effect -0.05 --json

From a pilot run (its pairs table, ``data/scored/<model>/pairs.parquet``, or that folder) the
clean accuracy, the discordance and the within-example correlation of the typo draws are read per
view; or they are stated. For each draw count the answer is the fewest examples (per word row:
examples in which the word carries a typo) with which the tables' paired test finds the effect at
the level with the power asked, and the generations that costs. Details: docs/scoring.md, "Power
and the minimum detectable effect".
"""

from __future__ import annotations

import json
from pathlib import Path

import click
import pandas as pd
import yaml

from evalpipe.commands import fail_cleanly
from evalpipe.errors import InputError
from evalpipe.scoring.power import POWER
from evalpipe.scoring.power_plan import PILOT_COLUMNS, Rates, pilot_rates, plans, stated_rates

DEFAULT_DRAWS = "1,2,4,8"
DEFAULT_LEVEL = 0.95


def _draws(text: str) -> list[int]:
    try:
        values = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        values = []
    if not values or min(values) < 1:
        raise InputError(f"--draws: expected whole numbers >= 1 separated by commas, got {text!r}")
    return sorted(set(values))


def _level(level: float | None, params_path: str) -> float:
    """``--level``, else params ``scoring.confidence_level`` when the params file exists."""
    if level is not None:
        return level
    path = Path(params_path)
    if not path.is_file():
        return DEFAULT_LEVEL
    try:
        params = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as exc:
        raise InputError(f"{path}: not valid YAML: {exc}") from exc
    value = (params.get("scoring") or {}).get("confidence_level", DEFAULT_LEVEL)
    if not isinstance(value, int | float) or not 0 < value < 1:
        raise InputError(
            f"{path}: scoring.confidence_level: expected a value in (0, 1), got {value!r}"
        )
    return float(value)


def _read_pilot(pilot: str) -> pd.DataFrame:
    path = Path(pilot)
    if path.is_dir():
        path = path / "pairs.parquet"
    if not path.is_file():
        raise InputError(
            f"{path}: no pairs table here; pass a finished run's data/scored/<model>/pairs.parquet "
            "or its folder"
        )
    try:
        return pd.read_parquet(path, columns=PILOT_COLUMNS)
    except Exception as exc:  # pyarrow raises several kinds for a bad or foreign file
        raise InputError(
            f"{path}: cannot read the pairs table's columns {', '.join(PILOT_COLUMNS)}: {exc}"
        ) from exc


def _answer(rates: Rates, *, effect: float, draws: list[int], level: float, power: float) -> dict:
    rows = plans(rates, effect=effect, draws=draws, level=level, target_power=power)
    return {
        "source": rates.source,
        "accuracy": rates.accuracy,
        "discordance": max(rates.discordance, abs(effect)),
        "observed_effect": rates.effect,
        "icc": rates.icc,
        "icc_measured": rates.icc_measured,
        "pilot_pairs": rates.pairs or None,
        "plans": [
            {
                "draws": p.draws,
                "examples": p.examples,
                "design_effect": round(p.design_effect, 4),
                "power": None if p.power is None else round(p.power, 4),
                "generations": p.generations,
            }
            for p in rows
        ],
    }


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.1%}"


def _text(answer: dict, *, effect: float, level: float, power: float) -> str:
    lines = [
        f"{answer['source']}: clean accuracy {_pct(answer['accuracy'])}, discordance "
        f"{_pct(answer['discordance'])}"
        + (
            f", observed change {answer['observed_effect']:+.1%}"
            if answer["observed_effect"] is not None
            else ""
        )
        + f", within-example correlation of draws {answer['icc']:.3f}"
        + ("" if answer["icc_measured"] else " (not measured: pass --icc)"),
        f"  to see a change of {effect:+.1%} at level {level:g} with {power:.0%} power:",
        f"  {'draws':>6} {'examples':>10} {'design eff.':>12} {'generations':>12}",
    ]
    for row in answer["plans"]:
        examples = "unreachable" if row["examples"] is None else f"{row['examples']:,}"
        generations = "-" if row["generations"] is None else f"{row['generations']:,}"
        lines.append(
            f"  {row['draws']:>6} {examples:>10} {row['design_effect']:>12.3f} {generations:>12}"
        )
    best = [r for r in answer["plans"] if r["generations"] is not None]
    if best:
        cheapest = min(best, key=lambda r: (r["generations"], r["draws"]))
        lines.append(
            f"  fewest generations: {cheapest['examples']:,} examples x {cheapest['draws']} draw(s)"
        )
    return "\n".join(lines)


@click.command()
@click.option(
    "--pilot",
    type=click.Path(),
    default=None,
    help="A finished run's pairs table (data/scored/<model>/pairs.parquet) or its folder: "
    "rates per view.",
)
@click.option("--accuracy", type=float, default=None, help="Stated clean accuracy (0-1).")
@click.option(
    "--discordance",
    type=float,
    default=None,
    help="Stated share of pairs whose correctness the typos change (0-1) [default: |effect|, "
    "every flip the effect's way].",
)
@click.option(
    "--effect",
    type=float,
    required=True,
    help="Target change of accuracy, perturbed - original (e.g. -0.02 for a 2-point loss).",
)
@click.option(
    "--draws",
    "draws_text",
    default=DEFAULT_DRAWS,
    show_default=True,
    help="Typo draws (pairs) per example to plan for, comma-separated.",
)
@click.option(
    "--icc",
    type=float,
    default=None,
    help="Within-example correlation of the draws' changes (0-1) [default: the pilot's, else 0].",
)
@click.option(
    "--level",
    type=float,
    default=None,
    help="Confidence level of the test [default: params scoring.confidence_level, else 0.95].",
)
@click.option("--power", type=float, default=POWER, show_default=True, help="Target power.")
@click.option("--view", "views", multiple=True, help="Only these views of the pilot (repeatable).")
@click.option(
    "--params",
    "params_path",
    default="params.yaml",
    show_default=True,
    type=click.Path(dir_okay=False),
    help="Where --level's default is read.",
)
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of text.")
@fail_cleanly
def main(
    pilot: str | None,
    accuracy: float | None,
    discordance: float | None,
    effect: float,
    draws_text: str,
    icc: float | None,
    level: float | None,
    power: float,
    views: tuple[str, ...],
    params_path: str,
    as_json: bool,
) -> None:
    """Examples and typo draws needed to see an accuracy change EFFECT at a level and power,
    from a pilot run's pairs table (--pilot) or from stated rates (--accuracy, --discordance)."""
    draws = _draws(draws_text)
    level = _level(level, params_path)
    if not 0 < level < 1:
        raise InputError(f"--level: expected a value in (0, 1), got {level}")
    if not 0 < power < 1:
        raise InputError(f"--power: expected a value in (0, 1), got {power}")
    if pilot is not None:
        if accuracy is not None or discordance is not None:
            raise InputError("--pilot reads the rates: drop --accuracy / --discordance, or --pilot")
        source = str(Path(pilot) / "pairs.parquet") if Path(pilot).is_dir() else pilot
        found = pilot_rates(_read_pilot(pilot), source=source)
        if views:
            unknown = sorted(set(views) - {r.source for r in found})
            if unknown:
                raise InputError(
                    f"{source}: no view {', '.join(unknown)}; it has "
                    f"{', '.join(r.source for r in found)}"
                )
            found = [r for r in found if r.source in views]
        if icc is not None:
            if not 0 <= icc <= 1:
                raise InputError(f"--icc: expected a share in [0, 1], got {icc}")
            found = [Rates(**{**vars(r), "icc": icc, "icc_measured": True}) for r in found]
    else:
        found = [
            stated_rates(accuracy=accuracy, discordance=discordance, effect=effect, icc=icc or 0.0)
        ]
    answers = [_answer(r, effect=effect, draws=draws, level=level, power=power) for r in found]
    if as_json:
        click.echo(
            json.dumps(
                {"effect": effect, "level": level, "power": power, "rates": answers}, indent=2
            )
        )
        return
    click.echo("\n".join(_text(a, effect=effect, level=level, power=power) for a in answers))
