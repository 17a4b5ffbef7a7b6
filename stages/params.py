"""Stage params: params.yaml with every key it leaves out set to the schema's default ->
data/params.yaml, the file every other stage's DVC ``params`` name their keys in, so any
section of params.yaml may be given in part. It also removes the benchmark and perturbed files
of benchmarks no longer in ``benchmarks.suites`` (DVC leaves a removed stage's outputs behind,
and generate tracks those folders whole)."""

from __future__ import annotations

import click

from evalpipe import atomic
from evalpipe.model_list import corrector_models
from evalpipe.params import load_params, resolved_text
from evalpipe.paths import ProjectPaths
from stages._common import fail_cleanly, params_option


@click.command()
@params_option
@fail_cleanly
def main(params_path: str) -> None:
    """Check params.yaml, write it complete to data/params.yaml, drop removed suites' files."""
    params = load_params(params_path)
    paths = ProjectPaths()
    # the defend stage depends on the models its correctors use, not on every model
    defences = {**params["defences"], "corrector_models": corrector_models(params)}
    atomic.write_text(paths.resolved_params, resolved_text({**params, "defences": defences}))
    stale = paths.stale_suite_files(params["benchmarks"]["suites"] or {})
    for path in stale:
        path.unlink()
    removed = f"; removed {len(stale)} file(s) of suites no longer declared" if stale else ""
    click.echo(f"params: {params_path} checked -> {paths.resolved_params}{removed}")


if __name__ == "__main__":
    main()
