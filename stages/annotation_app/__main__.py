"""`python -m stages.annotation_app`, kept for one release: one deprecation line on stderr, then
`evalpipe annotate`."""

from evalpipe.cli.annotation_app import main
from evalpipe.commands import run_deprecated

run_deprecated(main, old="python -m stages.annotation_app", new="evalpipe annotate")
