"""The `evalpipe` console script: its declaration, `--help` on every command, and the old
`python -m stages.<tool>` commands that still run for one release after a deprecation line."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from evalpipe.cli import TOOLS, main
from tests.conftest import TEST_PARAMS

REPO = Path(__file__).resolve().parents[1]
FIXTURES = Path(__file__).parent / "fixtures" / "sentiment_eval"


def _commands(group: click.Group, ctx: click.Context, path: tuple[str, ...]):
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        assert command is not None, f"{' '.join(path)} {name}: listed but not found"
        yield (*path, name), command
        if isinstance(command, click.Group):
            yield from _commands(command, click.Context(command, parent=ctx), (*path, name))


def _every_command() -> list[tuple[str, ...]]:
    return [path for path, _ in _commands(main, click.Context(main), ())]


def _run(*args: str, cwd: Path = REPO) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO / "src"), str(REPO)]))
    return subprocess.run(
        [sys.executable, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=120
    )


def test_pyproject_declares_the_evalpipe_script() -> None:
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    module, _, attr = project["scripts"]["evalpipe"].partition(":")
    assert (module, attr) == ("evalpipe.cli", "main")
    assert "pytest-xdist" in " ".join(project["optional-dependencies"]["dev"])


def test_top_level_help_lists_each_tool_with_its_summary() -> None:
    result = CliRunner().invoke(main, ["--help"], prog_name="evalpipe")
    assert result.exit_code == 0, result.output
    assert result.output.startswith("Usage: evalpipe [OPTIONS] COMMAND")
    for name, (_, _, summary) in TOOLS.items():
        assert f"{name}  " in result.output and summary.split()[0] in result.output
    unknown = CliRunner().invoke(main, ["annotation"], prog_name="evalpipe")
    assert unknown.exit_code == 2 and "No such command 'annotation'" in unknown.output


def test_the_tools_a_person_runs_are_all_there() -> None:
    commands = {" ".join(path) for path in _every_command()}
    for expected in (
        "annotate serve",
        "annotate add-annotator",
        "annotate users",
        "annotate export",
        "annotate export-qualification",
        "annotate waive-qualification",
        "annotate backup",
        "annotate template",
        "annotate import",
        "quality kappa",
        "quality merge",
        "quality check",
        "evaluate",
        "report compare",
        "plan",
    ):
        assert expected in commands


@pytest.mark.parametrize("path", _every_command(), ids=" ".join)
def test_every_command_has_help(path: tuple[str, ...]) -> None:
    result = CliRunner().invoke(main, [*path, "--help"], prog_name="evalpipe")
    assert result.exit_code == 0, result.output
    assert result.output.startswith(f"Usage: evalpipe {' '.join(path)} ")
    assert "Options:" in result.output and "--help" in result.output


def test_module_entry_point_runs_a_tool(tmp_path: Path) -> None:
    """`python -m evalpipe.cli` is the script without installing it (what the tests run)."""
    proc = _run(
        "-m",
        "evalpipe.cli",
        "evaluate",
        "--gold",
        str(FIXTURES / "sample_dev.jsonl"),
        "--pred",
        str(FIXTURES / "predictions.jsonl"),
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout.partition("# Errors")[0])["accuracy"] == pytest.approx(0.5)
    assert "deprecated" not in proc.stderr


@pytest.mark.parametrize(
    ("old", "args", "new"),
    [
        ("stages.annotation_app", ["users", "--db", "{tmp}/none.sqlite"], "evalpipe annotate"),
        ("stages.annotation", ["kappa", "--input", "{tmp}/none.jsonl", "--output", "{tmp}/k.json"],
         "evalpipe quality"),
        ("stages.evaluate", ["--gold", "{tmp}/none.jsonl", "--pred", "{tmp}/p.jsonl"],
         "evalpipe evaluate"),
    ],
)  # fmt: skip
def test_old_tool_commands_still_run_after_one_deprecation_line(
    tmp_path: Path, old: str, args: list[str], new: str
) -> None:
    proc = _run("-m", old, *(a.format(tmp=tmp_path) for a in args))
    lines = proc.stderr.splitlines()
    assert lines[0] == (
        f"deprecated: `python -m {old}` will be removed in the next release; use `{new}`"
    )
    assert sum("deprecated" in line for line in lines) == 1
    # the tool itself ran: it read its input and refused the missing file with its own error
    assert proc.returncode == 2 and lines[1].startswith("error: ") and "none" in lines[-1]


def test_old_tool_command_does_the_work(tmp_path: Path) -> None:
    out = tmp_path / "report.json"
    gold, pred = FIXTURES / "sample_dev.jsonl", FIXTURES / "predictions.jsonl"
    old = _run(
        "-m", "stages.evaluate", "--gold", str(gold), "--pred", str(pred), "--output", str(out)
    )
    assert old.returncode == 0, old.stderr
    new = _run("-m", "evalpipe.cli", "evaluate", "--gold", str(gold), "--pred", str(pred))
    assert old.stdout == new.stdout
    assert json.loads(out.read_text(encoding="utf-8"))["errors"]["count"] == 3


def test_old_report_compare_names_the_new_command() -> None:
    result = _run(
        "-m", "stages.report", "compare", "--a", "no-such-revision-anywhere", "--root", str(REPO),
        "--params", str(TEST_PARAMS),
    )  # fmt: skip
    assert result.returncode == 2
    assert result.stderr.splitlines()[0] == (
        "deprecated: `python -m stages.report compare` will be removed in the next release; "
        "use `evalpipe report compare`"
    )
    assert "'no-such-revision-anywhere' is not a Git revision" in result.stderr
