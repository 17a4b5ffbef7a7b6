"""`python -m stages.annotation`, kept for one release: one deprecation line on stderr, then
`evalpipe quality`."""

from evalpipe.cli.common import run_deprecated
from evalpipe.cli.quality import cli

run_deprecated(cli, old="python -m stages.annotation", new="evalpipe quality")
