"""Stage report: metrics, scored outputs, impact tables and annotation agreement -> one
self-contained HTML report (reports/report.html) and its main figures as SVG image plots
(plots/report/*.svg). Two revisions side by side: `evalpipe report compare`.

    python -m stages.report build                       # what `dvc repro report` runs
    python -m stages.report build --commit              # by hand: also show the Git commit
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import click

from evalpipe import atomic
from evalpipe.languages import LANGUAGES
from evalpipe.params import load_params
from evalpipe.paths import ProjectPaths
from evalpipe.report.assemble import build_figures, build_report
from evalpipe.report.inputs import (
    load_report_data,
    report_options,
    workspace_locator,
    workspace_reader,
)
from evalpipe.report.revisions import WORKSPACE, commit_label
from stages._common import fail_cleanly, html_out_option, params_option, root_option

# dvc.yaml declares one words_<language>.svg per language of evalpipe.languages.LANGUAGES.


@click.group()
def main() -> None:
    """Build the self-contained HTML report."""


@main.command()
@params_option
@root_option()
@html_out_option("reports/report.html")
@click.option(
    "--commit/--no-commit",
    default=False,
    show_default=True,
    help="Show the Git commit. Off under DVC: the commit changes with every commit while the "
    "inputs may not, and the report must depend on its inputs only.",
)
@fail_cleanly
def build(params_path: str, root: str, out: str | None, commit: bool) -> None:
    """Write reports/report.html and plots/report/*.svg from the current workspace."""
    base = Path(root)
    paths = ProjectPaths(base)
    options = report_options(load_params(params_path))
    read, ls = workspace_reader(base)
    data = load_report_data(read, ls, paths, locate=workspace_locator(base))
    if commit:
        data.provenance["commit"] = commit_label(base, WORKSPACE)
    target = Path(out) if out else paths.report_html
    atomic.write_text(target, build_report(data, options))
    figures = build_figures(data, options, languages=LANGUAGES)
    for name, svg in figures.items():
        atomic.write_text(paths.report_figures / name, svg + "\n")
    missing = len(data.missing)
    click.echo(
        f"report: {len(data.scored)} benchmarks, "
        f"{0 if data.words is None else len(data.words)} word rows, {missing} missing inputs -> "
        f"{target}, {len(figures)} figures in {paths.report_figures}"
    )


@main.command(context_settings={"ignore_unknown_options": True, "help_option_names": []})
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
def compare(args: tuple[str, ...]) -> None:
    """Deprecated (one release): `evalpipe report compare`."""
    # A new process rather than an import: the report stage's dvc.yaml deps then stay the
    # report's own modules, not the console script's.
    click.echo(
        "deprecated: `python -m stages.report compare` will be removed in the next release; "
        "use `evalpipe report compare`",
        err=True,
    )
    command = [sys.executable, "-m", "evalpipe.cli", "report", "compare", *args]
    raise SystemExit(subprocess.call(command))


if __name__ == "__main__":
    main()
