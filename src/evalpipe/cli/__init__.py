"""The `evalpipe` console script: the tools a person runs by hand.

    evalpipe annotate serve | add-annotator | export | ...   # web app, accounts, spreadsheets
    evalpipe quality kappa | merge | check                   # agreement, consensus, quality gate
    evalpipe evaluate --gold G.jsonl --pred P.jsonl          # score predictions made elsewhere
    evalpipe report compare --a main --b workspace           # two revisions side by side
    evalpipe generate                                        # every model at once, then dvc repro
    evalpipe plan --pilot data/scored/MODEL --effect -0.02   # examples and draws a study needs

The DVC pipeline's stages are not here: they live in ``stages/`` and run through ``dvc repro``.
Each tool group is imported when it is called, so ``evalpipe --help`` and every stage that
shares :mod:`evalpipe.commands` stay quick to start.
"""

from __future__ import annotations

import importlib

import click

from evalpipe.commands import configure_logging

# name -> (module, attribute, one-line help shown by `evalpipe --help`)
TOOLS: dict[str, tuple[str, str, str]] = {
    "annotate": (
        "evalpipe.cli.annotation_app",
        "main",
        "Annotation web app, accounts, export, backup and spreadsheets.",
    ),
    "quality": (
        "evalpipe.cli.quality",
        "cli",
        "Annotation agreement (kappa), consensus (merge) and the quality gate (check).",
    ),
    "evaluate": (
        "evalpipe.cli.evaluate",
        "main",
        "Score predictions made elsewhere against a gold file.",
    ),
    "report": ("evalpipe.cli.compare", "main", "Compare the report of two revisions."),
    "generate": (
        "evalpipe.cli.generate",
        "main",
        "Every model's generate stage at once, each on its own GPUs, then dvc repro.",
    ),
    "plan": (
        "evalpipe.cli.plan",
        "main",
        "Examples and typo draws needed to see a given accuracy change (power).",
    ),
}


class _Tools(click.Group):
    """A group whose subcommands are imported on first use."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(TOOLS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in TOOLS:
            return None
        module, attr, _ = TOOLS[cmd_name]
        return getattr(importlib.import_module(module), attr)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        # the one-line help without importing every tool
        with formatter.section("Commands"):
            formatter.write_dl([(name, TOOLS[name][2]) for name in self.list_commands(ctx)])


@click.group(cls=_Tools)
@click.version_option(package_name="evalpipe")
def main() -> None:
    """evalpipe's tools for people: annotation, quality gate, evaluator, report comparison.

    The pipeline itself runs with `dvc repro` (README.md); `evalpipe COMMAND --help` shows a
    tool's options.
    """
    configure_logging()
