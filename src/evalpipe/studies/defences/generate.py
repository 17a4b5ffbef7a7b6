"""The defences' arms: every clean and typo'd row again behind the typo warning (``warned``) and
as each corrector corrected it (``corrected:<corrector>``, the defend stage's rows); the defend
stage's counts passed on as data/outputs/<model>/corrections.json."""

from __future__ import annotations

import json

import pandas as pd

from evalpipe import atomic
from evalpipe.arms import WARNED, corrected
from evalpipe.errors import InputError
from evalpipe.inference.generate import warned_prompts
from evalpipe.inference.plan import Arm, BenchmarkInput, GenerationPart
from evalpipe.paths import ProjectPaths

NAME = "defences"


def generation(params: dict, paths: ProjectPaths, *, slug: str, source: str) -> GenerationPart:
    """The part of ``defences`` settings (``warning_prompt``, ``correctors``)."""
    cfg = params["defences"]
    correctors = list(cfg["correctors"] or [])

    def arms(bench: BenchmarkInput, prompts: list[str]) -> list[Arm]:
        out = []
        if cfg["warning_prompt"]:
            preamble = _warning(cfg, bench.language, source)
            out.append(
                Arm(bench.rows.assign(condition=WARNED), warned_prompts(prompts, preamble=preamble))
            )
        for defended in _defended(paths, bench.name, correctors) if correctors else ():
            out.append(Arm(defended.drop(columns=["corrections"]), bench.prompts(defended)))
        return out

    def finish(names: list[str]) -> None:
        corrections = paths.outputs_corrections(slug)
        if correctors:  # the defend stage's counts of these benchmarks, passed on
            counts = _defend_summary(paths)
            atomic.write_json(corrections, {n: counts.get(n, {}) for n in sorted(names)})
        elif corrections.exists():
            corrections.unlink()

    return GenerationPart(
        NAME, enabled=bool(correctors or cfg["warning_prompt"]), arms=arms, finish=finish
    )


def _warning(defences: dict, language: str, source: str) -> str:
    """The typo warning of a benchmark's language (``defences.warning_text.<language>``)."""
    text = (defences.get("warning_text") or {}).get(language)
    if not text:
        raise InputError(
            f"{source}: defences.warning_text.{language}: expected the warning preamble of "
            f"{language} prompts (defences.warning_prompt is true)"
        )
    return str(text)


def _defended(paths: ProjectPaths, name: str, correctors: list[str]) -> list[pd.DataFrame]:
    """Each configured corrector's rows of one benchmark (data/defended/<name>.parquet)."""
    path = paths.defended(name)
    rows = _read_parquet(path)
    out = []
    for corrector in correctors:
        condition = corrected(corrector)
        arm = rows.loc[rows["condition"] == condition].reset_index(drop=True)
        if arm.empty:
            raise InputError(
                f"{path}: no rows of condition {condition!r}; rerun `dvc repro defend` "
                "(defences.correctors changed since it ran)"
            )
        out.append(arm)
    return out


def _read_parquet(path) -> pd.DataFrame:
    if not path.exists():
        raise InputError(f"{path}: not found (run `dvc repro defend`)")
    try:
        return pd.read_parquet(path)
    except Exception as exc:  # pyarrow raises several types for a damaged file
        raise InputError(f"{path}: not a readable Parquet file ({exc})") from exc


def _defend_summary(paths: ProjectPaths) -> dict:
    """The defend stage's ``{benchmark: {corrector: counts}}``."""
    path = paths.defended_summary()
    if not path.exists():
        raise InputError(f"{path}: not found (run `dvc repro defend`)")
    try:
        return json.loads(path.read_text(encoding="utf-8")).get("benchmarks", {})
    except json.JSONDecodeError as exc:
        raise InputError(f"{path}: not JSON ({exc.msg}); rerun `dvc repro defend`") from None
