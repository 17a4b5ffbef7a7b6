"""The replicates of every prompt (``sampling.repeats`` x ``prompt.fewshot_draws``) as arms of
generation: each replicate of the perturbed rows, and the clean prompt again per repeat and per
few-shot draw (arms :data:`~evalpipe.arms.REPEAT`, :data:`~evalpipe.arms.FEWSHOT_DRAW`); and
the clean prompt under each selected instruction template (``prompt.templates``, arms
``template:<name>``)."""

from __future__ import annotations

from functools import partial

import pandas as pd

from evalpipe.arms import FEWSHOT_DRAW, ORIGINAL, REPEAT, TYPO, template_arm
from evalpipe.errors import InputError
from evalpipe.inference.plan import Arm, BenchmarkInput, GenerationPart
from evalpipe.paths import ProjectPaths
from evalpipe.seeding import hashed_seed

NAME = "repeats"
SEED_RANGE = 2**31  # every server takes a 32-bit signed seed


def repeat_seed(seed: int | None, repeat: int) -> int | None:
    """The sampling seed of repeat ``repeat``: the run's own seed for repeat 0 (so the first
    repeat is the run without repeats), a hashed one below 2**31 after it.

    >>> repeat_seed(7, 0), repeat_seed(7, 1) == repeat_seed(7, 1), repeat_seed(7, 1) != repeat_seed(7, 2)
    (7, True, True)
    """
    if repeat == 0:
        return seed
    if seed is None:
        raise ValueError("repeats after the first need a base seed")
    return hashed_seed(seed, "repeat", repeat) % SEED_RANGE


def replicate_arms(
    bench: BenchmarkInput,
    plain: list[str],
    *,
    repeats: int,
    fewshot_draws: int,
    typo_draws: int,
    seed: int | None,
) -> list[Arm]:
    """Every replicate but the first of the perturbed rows, then the spread arms.

    Replicate ``j = repeat * fewshot_draws + shots_draw`` of a perturbed row keeps its keys but
    ``draw`` (``draw + typo_draws * j``), so it is one more pair of its example; the clean row
    is answered once in the typo arm (every replicate pairs with it, as typo draws do). The
    ``repeat`` arm holds the clean row (the run's seed, first demonstrations) and, per repeat r
    >= 1, the clean prompt at repeat r's seed (``draw`` r); the ``fewshot_draw`` arm the same
    over the selections of demonstrations (``draw`` d, the run's seed).

    Parameters
    ----------
    bench : the benchmark's input (its perturbed rows and how prompts are rendered).
    plain : the plain rows' prompts (replicate 0).
    repeats, fewshot_draws : ``sampling.repeats``, ``prompt.fewshot_draws``.
    typo_draws : ``perturb.draws`` (the rows' ``draw`` is below it).
    seed : ``sampling.seed`` (an integer whenever ``repeats`` > 1).

    Returns
    -------
    list of Arm, each with its seed.
    """
    rows = bench.rows
    if len(rows) and int(rows["draw"].max()) >= typo_draws:
        raise InputError(
            f"{bench.path}: column 'draw': expected values below perturb.draws ({typo_draws}), "
            f"got {int(rows['draw'].max())}; rerun perturb@{bench.name}"
        )
    is_original = (rows["variant"] == ORIGINAL).to_numpy()
    is_clean = is_original & (rows["condition"] == TYPO).to_numpy()
    perturbed, clean = rows.loc[~is_original], rows.loc[is_clean]
    clean_prompts = [p for p, keep in zip(plain, is_clean, strict=True) if keep]
    arms: list[Arm] = []
    prompts_of = {0: [p for p, o in zip(plain, is_original, strict=True) if not o]}
    for repeat in range(repeats):
        for shots in range(fewshot_draws):
            j = repeat * fewshot_draws + shots
            if j == 0:
                continue
            if shots not in prompts_of:
                prompts_of[shots] = bench.prompts(perturbed, shots_draw=shots)
            copy = perturbed.assign(draw=(perturbed["draw"] + typo_draws * j).astype("int32"))
            arms.append(Arm(copy, prompts_of[shots], repeat_seed(seed, repeat), reseeded=True))

    def spread(arm: str, count: int) -> list[Arm]:
        if count < 2:
            return []
        out = [Arm(clean.assign(condition=arm), clean_prompts, seed, reseeded=True)]
        for k in range(1, count):
            again = clean.assign(condition=arm, variant=arm, draw=pd.Series(k, index=clean.index))
            again = again.astype({"draw": "int32"})
            shots = k if arm == FEWSHOT_DRAW else 0
            prompts = bench.prompts(clean, shots_draw=shots) if shots else clean_prompts
            reseed = repeat_seed(seed, k) if arm == REPEAT else seed
            out.append(Arm(again, prompts, reseed, reseeded=True))
        return out

    return arms + spread(REPEAT, repeats) + spread(FEWSHOT_DRAW, fewshot_draws)


def template_arms(bench: BenchmarkInput, plain: list[str], *, templates: list[str]) -> list[Arm]:
    """Per selected template, its arm ``template:<name>``: the example's clean row with the
    spec's instruction (variant original, the typo arm's clean prompt) and the same row with the template's instruction (variant ``template:<name>``,
    draw 0), at the run's seed. Paired on the example, the arm measures what rewording the
    instruction alone does to an answer.

    Parameters
    ----------
    bench : the benchmark's input.
    plain : the plain rows' prompts.
    templates : ``prompt.templates`` (names of the spec's ``prompt.templates``).

    Returns
    -------
    list of Arm, two per template.
    """
    rows = bench.rows
    is_clean = ((rows["variant"] == ORIGINAL) & (rows["condition"] == TYPO)).to_numpy()
    clean = rows.loc[is_clean]
    clean_prompts = [p for p, keep in zip(plain, is_clean, strict=True) if keep]
    arms: list[Arm] = []
    for name in templates:
        arm = template_arm(name)
        worded = clean.assign(condition=arm, variant=arm, draw=pd.Series(0, index=clean.index))
        worded = worded.astype({"draw": "int32"})
        arms.append(Arm(clean.assign(condition=arm), clean_prompts))
        arms.append(Arm(worded, bench.prompts(clean, template=name)))
    return arms


def settings(params: dict, *, source: str) -> tuple[int, int]:
    """``(repeats, fewshot_draws)``, checked against the sampling and prompt settings."""
    repeats = int(params["sampling"]["repeats"])
    draws = int(params["prompt"]["fewshot_draws"])
    if repeats > 1 and float(params["sampling"]["temperature"]) <= 0:
        raise InputError(
            f"{source}: sampling.repeats: {repeats} repeats need sampling.temperature > 0 "
            "(at 0 every repeat gives the same greedy answer); got 0"
        )
    if repeats > 1 and params["sampling"]["seed"] is None:
        raise InputError(
            f"{source}: sampling.repeats: {repeats} repeats need sampling.seed (an integer): "
            "each repeat's seed is hashed from it, so a rerun gives the same answers"
        )
    if draws > 1 and (params["prompt"]["style"] != "few_shot" or not params["prompt"]["n_shots"]):
        raise InputError(
            f"{source}: prompt.fewshot_draws: {draws} draws need prompt.style few_shot and "
            f"prompt.n_shots > 0; got style {params['prompt']['style']!r}, "
            f"n_shots {params['prompt']['n_shots']!r}"
        )
    return repeats, draws


def generation(params: dict, paths: ProjectPaths, *, slug: str, source: str) -> GenerationPart:
    """The part of ``sampling.repeats``, ``prompt.fewshot_draws`` and ``prompt.templates``
    (off at 1, 1 and [])."""
    repeats, draws = settings(params, source=source)
    templates = [str(t) for t in params["prompt"]["templates"]]
    replicates = partial(
        replicate_arms,
        repeats=repeats,
        fewshot_draws=draws,
        typo_draws=int(params["perturb"]["draws"]),
        seed=params["sampling"]["seed"],
    )

    def arms(bench: BenchmarkInput, plain: list[str]) -> list[Arm]:
        replicated = replicates(bench, plain) if repeats > 1 or draws > 1 else []
        return replicated + template_arms(bench, plain, templates=templates)

    enabled = repeats > 1 or draws > 1 or bool(templates)
    return GenerationPart(NAME, enabled=enabled, arms=arms)
