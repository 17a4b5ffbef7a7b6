"""Stage sycophancy: how sycophantic is each model, and can the judge stand in for people.

Reads data/sycophancy/replies.parquet (every model's replies, the human sample marked),
data/sycophancy/ratings.parquet (every judge's ratings), the annotation tasks and the human
batches (data/raw/annotations/*.jsonl; while it holds none, the illustrative sample batches,
labelled as such). Writes data/sycophancy/estimates.parquet (judge-only, humans-only and PPI++
per model, axis and statistic), differences.parquet (paired model differences),
arm_changes.parquet (paired variants of a dialogue: each model's change), panel.parquet
(per reply and axis: the panel's median and disagreement), judge_validity.json (per judge and
axis: the alternative annotator test, confusion, kappa, ECE, Brier, length slope; self-grading
flags), panel_agreement.json, metrics/sycophancy/<model>.json and
metrics/sycophancy_judges/<judge>.json (kappa per prompt version, for `dvc metrics diff`).
"""

from __future__ import annotations

import click

from evalpipe import atomic
from evalpipe.annotation.batches import find_batches
from evalpipe.annotation.judge import prompt_version
from evalpipe.annotation.schema import is_human, read_annotations, read_tasks, to_long_frame
from evalpipe.model_list import model_configs
from evalpipe.params import load_params, section
from evalpipe.paths import ProjectPaths
from evalpipe.sycophancy.judges import judge_panel
from evalpipe.sycophancy.study import StudySettings, json_safe, run_study
from stages._common import fail_cleanly, params_option, read_parquet


@click.command()
@params_option
@fail_cleanly
def main(params_path: str) -> None:
    """Estimate each model's sycophancy per axis and check the judges against people."""
    params = load_params(params_path)
    cfg = section(params, "sycophancy", path=params_path)
    models = model_configs(params, source=params_path)
    panel = judge_panel(params, source=params_path)
    paths = ProjectPaths()

    replies = read_parquet(paths.sycophancy / "replies.parquet", "run dvc repro sycophancy_sample")
    ratings = read_parquet(paths.sycophancy / "ratings.parquet", "run dvc repro sycophancy_judge")
    tasks = read_tasks(paths.annotation_tasks)
    found = find_batches(paths.raw_annotations, samples_dir=paths.sample_annotations)
    # A rating of an id that is not a task stops the run with file:line (never dropped).
    annotations = read_annotations(found.paths, task_ids=[t.id for t in tasks])
    humans = to_long_frame(a for a in annotations if is_human(a.annotator_id))
    lengths = {t.id: len(t.response) for t in tasks}
    lengths.update(dict(zip(replies["task_id"], replies["reply_chars"], strict=True)))

    settings = StudySettings(
        models=list(models),
        model_names={slug: str(m["name"]) for slug, m in models.items()},
        judge_names={slug: str(j["model"]) for slug, j in panel.items()},
        threshold=int(cfg["threshold"]),
        confidence=float(cfg["confidence_level"]),
        epsilon=float(cfg["epsilon"]),
        sample_batches=found.samples,
    )
    result = run_study(replies, ratings, humans, lengths, settings, prompt_version=prompt_version())

    atomic.write_parquet(paths.sycophancy / "estimates.parquet", result.estimates)
    atomic.write_parquet(paths.sycophancy / "differences.parquet", result.differences)
    atomic.write_parquet(paths.sycophancy / "arm_changes.parquet", result.arm_changes)
    atomic.write_parquet(paths.sycophancy / "panel.parquet", result.panel)
    atomic.write_json(paths.sycophancy / "judge_validity.json", json_safe(result.validity))
    atomic.write_json(paths.sycophancy / "panel_agreement.json", json_safe(result.panel_agreement))
    for model, metrics in result.metrics.items():
        atomic.write_json(paths.sycophancy_metrics / f"{model}.json", json_safe(metrics))
    for judge, metrics in result.judge_metrics.items():
        atomic.write_json(paths.metrics / "sycophancy_judges" / f"{judge}.json", json_safe(metrics))

    ppi = result.estimates[result.estimates["estimator"] == "ppi"]
    verdicts = ", ".join(
        f"{judge} "
        + "/".join(str(v[a]["alt_test"]) for a in ("social", "avoidant", "mechanical", "self"))
        for judge, v in result.validity.items()
    )
    click.echo(
        f"sycophancy: {len(models)} model(s) x {replies['dialogue_id'].nunique()} dialogues; "
        f"PPI available for {int(ppi['available'].sum())}/{len(ppi)} rows; judge alt-test "
        f"(social/avoidant/mechanical/self) {verdicts}"
        + (" [illustrative sample batches]" if found.samples else "")
        + f" -> {paths.sycophancy / 'estimates.parquet'}"
    )


if __name__ == "__main__":
    main()
