"""`python -m stages.annotation`, kept for one release: prints one deprecation line, then runs `evalpipe quality`."""

from evalpipe.cli.common import run_deprecated
from evalpipe.cli.quality import cli

run_deprecated(cli, old="python -m stages.annotation", new="evalpipe quality")
