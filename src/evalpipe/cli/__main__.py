"""``python -m evalpipe.cli``: the console script without installing it."""

from evalpipe.cli import main

main(prog_name="evalpipe")
