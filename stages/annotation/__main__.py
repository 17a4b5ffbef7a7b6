"""`python -m stages.annotation`, kept for one release: prints one deprecation line, then runs `evalpipe quality`."""

from evalpipe.cli.annotation import cli
from evalpipe.cli.common import run_deprecated

run_deprecated(cli, old="python -m stages.annotation", new="evalpipe quality")
