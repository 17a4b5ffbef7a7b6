"""`python -m stages.annotation`, kept for one release: one deprecation line on stderr, then
`evalpipe quality`."""

from evalpipe.cli.quality import cli
from evalpipe.commands import run_deprecated

run_deprecated(cli, old="python -m stages.annotation", new="evalpipe quality")
