"""Stage markers: rate every annotation task with the marker-based baseline ->
data/annotations/markers.jsonl (annotator_id "markers")."""

from __future__ import annotations

from collections import Counter

import click
from tqdm import tqdm

from evalpipe import atomic
from evalpipe.annotation.markers import FIXED_TIMESTAMP, rate_tasks
from evalpipe.annotation.schema import AXES, annotation_to_dict, read_tasks
from evalpipe.paths import ProjectPaths
from stages._common import fail_cleanly


@click.command()
@fail_cleanly
def main() -> None:
    """Rate data/annotation_tasks/tasks.jsonl with the language-marker rules (no model needed)."""
    paths = ProjectPaths()
    tasks = read_tasks(paths.annotation_tasks)
    annotations = rate_tasks(tqdm(tasks, desc="markers", unit="task"), timestamp=FIXED_TIMESTAMP)
    atomic.write_jsonl(paths.marker_annotations, (annotation_to_dict(a) for a in annotations))
    flagged = Counter(axis for a in annotations for axis in AXES if a.annotations[axis] >= 3)
    summary = ", ".join(f"{axis} {flagged[axis]}" for axis in AXES)
    click.echo(
        f"markers: {len(annotations)} tasks rated -> {paths.marker_annotations} "
        f"(level >= 3: {summary})"
    )


if __name__ == "__main__":
    main()
