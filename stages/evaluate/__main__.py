"""`python -m stages.evaluate`, kept for one release: one deprecation line on stderr, then
`evalpipe evaluate`."""

from evalpipe.cli.evaluate import main
from evalpipe.commands import run_deprecated

run_deprecated(main, old="python -m stages.evaluate", new="evalpipe evaluate")
