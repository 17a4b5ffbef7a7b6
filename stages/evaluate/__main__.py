"""`python -m stages.evaluate`, kept for one release: one deprecation line on stderr, then
`evalpipe evaluate`."""

from evalpipe.cli.common import run_deprecated
from evalpipe.cli.evaluate import main

run_deprecated(main, old="python -m stages.evaluate", new="evalpipe evaluate")
