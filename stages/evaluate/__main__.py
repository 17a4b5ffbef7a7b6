"""`python -m stages.evaluate`, kept for one release: prints one deprecation line, then runs `evalpipe evaluate`."""

from evalpipe.cli.common import run_deprecated
from evalpipe.cli.evaluate import main

run_deprecated(main, old="python -m stages.evaluate", new="evalpipe evaluate")
