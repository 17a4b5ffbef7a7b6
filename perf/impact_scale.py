"""The impact and report stages on a large pairs table: wall time, CPU seconds and peak memory of
each stage's process, and (with ``--reference``) whether another revision's code writes the same
bytes from the same inputs.

The inputs are the score stage's files for synthetic scored views (``perf/pairs_scale.py``'s
``make_views``: 11 benchmarks x ``--examples`` examples x 500 target words, about 1,000 perturbed
prompts per example, so ``--examples 10000`` is about 10,000,000), made one benchmark at a time
so that making them fits in memory at any size: each view is paired alone
(``evalpipe.scoring.pairs.build_pairs``) and appended to one ``pairs.parquet`` with one Arrow
writer, its examples numbered after those of the benchmarks before it (the ``cluster`` column
``build_pairs`` gives over the whole table), and its robustness and classification details come
from ``build_reports`` on that view alone (every figure in them is per view).

    python perf/impact_scale.py --examples 1000 --keep /tmp/impact1m          # about 1M pairs
    python perf/impact_scale.py --examples 1000 --keep /tmp/impact1m --reference main
    flock /tmp/evalpipe-bigmem.lock python perf/impact_scale.py --examples 10000 --keep /tmp/impact10m

``--keep`` keeps the folder (a second run reuses its inputs and reruns the stages only).
``--reference REV`` also runs the impact and report stages of Git revision REV (its ``src`` and
``stages`` exported with ``git archive``) on a copy of the inputs, then prints each output
file's size and whether its bytes are equal.

Each stage runs as ``python -m stages.<name>`` in its own process, as DVC runs it; its figures
are that process's (``wait4``): wall seconds, user + system CPU seconds, peak resident MB.
Nothing is asserted.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import click
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT))

from evalpipe import atomic  # noqa: E402
from evalpipe.paths import ProjectPaths  # noqa: E402
from evalpipe.scoring.pairs import build_pairs  # noqa: E402
from evalpipe.scoring.summaries import build_reports  # noqa: E402
from perf.pairs_scale import MODEL, make_views  # noqa: E402

# What the two stages write (relative to the project folder), compared with --reference.
OUTPUTS = ("data/impact", "plots", "reports")


def _nonnull_schema(table: pa.Table) -> pa.Schema:
    """The table's schema with an all-null column typed as text (a later part may hold text)."""
    fields = [f.with_type(pa.string()) if pa.types.is_null(f.type) else f for f in table.schema]
    return pa.schema(fields)


def make_inputs(folder: Path, *, examples: int) -> int:
    """The score stage's files for the synthetic views, one benchmark at a time; the pairs."""
    n = make_views(folder, benchmarks=11, examples=examples, words=500, hit=0.18)
    paths = ProjectPaths(folder)
    scored_dir = paths.scored_dir(MODEL)
    robustness, classification, headline = {}, {}, {}
    writer, schema, offset, total = None, None, 0, 0
    with atomic.atomic_path(paths.pairs(MODEL)) as tmp:
        for view in sorted(p.stem for p in scored_dir.glob("bench*.parquet")):
            frame = pd.read_parquet(scored_dir / f"{view}.parquet").drop(columns="perturbations")
            pairs = build_pairs({view: frame}, model=MODEL, source_dir=str(scored_dir))
            reports = build_reports(
                {view: frame}, pairs, classification={}, level=0.95, margin=0.02
            )
            robustness.update(reports.robustness)
            classification.update(reports.classification)
            headline.update(reports.headline)
            # the examples numbered over the whole table: after those of the views before
            pairs["cluster"] += offset
            offset = int(pairs["cluster"].max()) + 1
            table = pa.Table.from_pandas(pairs, preserve_index=False).replace_schema_metadata(None)
            if writer is None:
                schema = _nonnull_schema(table)
                writer = pq.ParquetWriter(tmp, schema, compression="zstd", write_statistics=True)
            writer.write_table(table.cast(schema))
            total += len(pairs)
            del frame, pairs, table
        writer.close()
    atomic.write_json(paths.scored_details("robustness", MODEL), robustness)
    atomic.write_json(paths.scored_details("classification", MODEL), classification)
    for name, figures in headline.items():
        atomic.write_json(paths.headline_metrics(name, MODEL), figures)
    (folder / "pairs.txt").write_text(f"{n} {total}")
    return total


def run(args: list[str], *, cwd: Path, pythonpath: str) -> tuple[float, float, float]:
    """Run a command; its wall seconds, CPU seconds and peak resident MB (this process alone)."""
    env = {**os.environ, "PYTHONPATH": pythonpath}
    start = time.perf_counter()
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(args, cwd=cwd, env=env, stdout=out, stderr=err)
        # wait4 gives the child's own usage (RUSAGE_CHILDREN would mix the stages)
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        wall = time.perf_counter() - start
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read().decode(), err.read().decode()
    if proc.returncode:
        raise click.ClickException(f"{' '.join(args)} failed:\n{stderr[-3000:]}")
    line = stdout.strip().splitlines()[-1:] or [""]
    click.echo(f"    {line[0][:200]}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024.0


def stages(folder: Path, *, code: Path, label: str) -> None:
    pythonpath = f"{code / 'src'}{os.pathsep}{code}"
    common = ["--params", str(folder / "params.yaml"), "--root", str(folder)]
    total_wall, total_cpu, peak = 0.0, 0.0, 0.0
    for name, args in (
        ("impact", [sys.executable, "-m", "stages.impact", *common]),
        ("report", [sys.executable, "-m", "stages.report", "build", *common]),
    ):
        wall, cpu, mb = run(args, cwd=code, pythonpath=pythonpath)
        total_wall, total_cpu, peak = total_wall + wall, total_cpu + cpu, max(peak, mb)
        click.echo(f"{label} {name:7s} {wall:7.1f} s  CPU {cpu:7.1f} s  peak {mb:7.0f} MB")
    click.echo(f"{label} total   {total_wall:7.1f} s  CPU {total_cpu:7.1f} s  peak {peak:7.0f} MB")


def digests(folder: Path) -> dict[str, tuple[int, str]]:
    out = {}
    for top in OUTPUTS:
        for path in sorted((folder / top).rglob("*")):
            if path.is_file():
                out[str(path.relative_to(folder))] = (
                    path.stat().st_size,
                    hashlib.md5(path.read_bytes()).hexdigest(),
                )
    return out


def reference_run(folder: Path, rev: str) -> None:
    """The stages of revision ``rev`` on a copy of the inputs; the outputs compared byte for byte."""
    with tempfile.TemporaryDirectory() as tmp:
        code, copy = Path(tmp) / "code", Path(tmp) / "project"
        code.mkdir()
        archive = subprocess.run(
            ["git", "archive", rev, "src", "stages"], cwd=ROOT, capture_output=True, check=True
        ).stdout
        subprocess.run(["tar", "-x", "-C", str(code)], input=archive, check=True)
        copy.mkdir()
        shutil.copy(folder / "params.yaml", copy / "params.yaml")
        # the inputs are read only: linked, not copied
        for part in ("data/scored", "data/words"):
            (copy / part).parent.mkdir(parents=True, exist_ok=True)
            (copy / part).symlink_to(folder / part)
        stages(copy, code=code, label=f"{rev[:10]:10s}")
        ours, theirs = digests(folder), digests(copy)
        same = 0
        for name in sorted(set(ours) | set(theirs)):
            a, b = ours.get(name), theirs.get(name)
            if a == b:
                same += 1
            else:
                click.echo(f"  DIFFERS {name}: this tree {a}, {rev} {b}")
        click.echo(f"  {same} of {len(set(ours) | set(theirs))} output files byte-identical")


@click.command()
@click.option("--examples", default=1000, show_default=True, help="examples per benchmark")
@click.option("--keep", type=click.Path(path_type=Path), default=None, help="Folder to keep.")
@click.option("--reference", default=None, help="Git revision whose stages to compare with.")
@click.option("--skip-stages", is_flag=True, help="Only run the reference (and compare).")
def main(examples: int, keep: Path | None, reference: str | None, skip_stages: bool) -> None:
    """Time the impact and report stages on a large pairs table."""
    with tempfile.TemporaryDirectory() as tmp:
        folder = (keep or Path(tmp)).resolve()
        if (folder / "pairs.txt").exists():
            prompts, pairs = (folder / "pairs.txt").read_text().split()
            click.echo(f"inputs: reusing {folder} ({prompts} perturbed prompts, {pairs} pairs)")
        else:
            start = time.perf_counter()
            total = make_inputs(folder, examples=examples)
            click.echo(f"inputs: {total} pairs in {time.perf_counter() - start:.0f} s")
        if not skip_stages:
            stages(folder, code=ROOT, label="this tree ")
        if reference:
            reference_run(folder, reference)


if __name__ == "__main__":
    main()
