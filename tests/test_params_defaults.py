"""One home for parameter defaults: the schema declares them, load_params fills them in, and no
stage or tool writes a params key's default a second time."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
import yaml

from evalpipe.params import load_params
from evalpipe.params_schema import (
    NO_DEFAULT,
    SCHEMA,
    Section,
    Value,
    default_of,
    engine_defaults,
    validate_params,
    with_defaults,
)

REPO = Path(__file__).resolve().parents[1]


def _leaves(spec: Section, prefix: str = ""):
    for key, child in spec.keys.items():
        dotted = f"{prefix}{key}"
        if isinstance(child, Section):
            yield from _leaves(child, dotted + ".")
        else:
            yield dotted, child


def test_a_file_that_leaves_keys_out_gets_the_schema_defaults(tmp_path):
    path = tmp_path / "params.yaml"
    path.write_text("annotation:\n  min_kappa: 0.5\n", encoding="utf-8")
    params = load_params(path)
    assert params["annotation"]["min_kappa"] == 0.5  # the file's value wins
    assert params["annotation"]["context_window"] == 7
    assert params["judge"]["max_tokens"] == 384
    assert params["seed"] == 42
    assert params["words"]["english"]["min_length"] == 2
    assert params["words"]["japanese"]["min_length"] == 1
    assert params["model_defaults"]["backend"] == "vllm"


def test_filling_defaults_leaves_the_input_untouched_and_user_named_sections_empty():
    raw = {"benchmarks": {"suites": {"gsm8k": "english"}}, "annotation": {"dialogues": None}}
    filled = with_defaults(raw)
    assert raw == {
        "benchmarks": {"suites": {"gsm8k": "english"}},
        "annotation": {"dialogues": None},
    }
    assert filled["benchmarks"]["suites"] == {"gsm8k": "english"}
    assert filled["annotation"]["dialogues"] is None  # an explicit null is kept
    assert "models" not in filled
    # mutable defaults are copies: editing one run's list never changes the next run's default
    filled["annotation"].pop("dialogues")
    again = with_defaults({})
    again["annotation"]["dialogues"].append("x.jsonl")
    assert default_of("annotation.dialogues") == ["sample"]


def test_every_default_passes_its_own_check():
    validate_params(with_defaults({}), source="defaults")


def test_every_leaf_of_the_fixed_sections_has_a_default_or_a_reason():
    # keys a run cannot guess: the model names and the per-backend checkpoint size
    without = {
        dotted
        for dotted, value in _leaves(SCHEMA)
        if isinstance(value, Value) and value.default is NO_DEFAULT
    }
    assert without <= {
        "model_defaults.name",
        "model_defaults.checkpoint_every",
        "judge.checkpoint_every",
        "scoring.bootstrap_samples",  # ignored keys, accepted for older params files
        "impact.bootstrap_samples",
        "perturb.replace_prob",
        "perturb.insert_prob",
        "perturb.delete_prob",
    }


def test_default_of_names_the_key_it_cannot_find():
    with pytest.raises(KeyError, match=r"annotation\.context_windw"):
        default_of("annotation.context_windw")
    assert engine_defaults()["max_model_len"] == default_of("model_defaults.max_model_len")
    assert "name" not in engine_defaults()


def _schema_key_names() -> set[str]:
    return {dotted.rsplit(".", 1)[-1] for dotted, _ in _leaves(SCHEMA)}


def _literal_fallbacks(path: Path, keys: set[str]) -> list[str]:
    """``x.get("<params key>", <literal>)`` calls: a default written a second time."""
    found = []
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "get"
            and len(node.args) == 2
            and isinstance(node.args[0], ast.Constant)
            and node.args[0].value in keys
            and isinstance(node.args[1], ast.Constant | ast.List | ast.Dict)
            and not (isinstance(node.args[1], ast.Constant) and node.args[1].value is None)
        ):
            found.append(f"{path.relative_to(REPO)}:{node.lineno}: .get({node.args[0].value!r}, …)")
    return found


def test_no_stage_or_tool_writes_a_params_default_a_second_time():
    keys = _schema_key_names() - {"source", "name", "model"}  # also non-params dict keys
    files = sorted((REPO / "stages").glob("*.py"))
    cli = REPO / "src" / "evalpipe" / "cli"
    if cli.exists():
        files += sorted(cli.glob("*.py"))
    found = [hit for f in files for hit in _literal_fallbacks(f, keys)]
    assert not found, "read these from load_params (defaults live in params_schema):\n" + "\n".join(
        found
    )


def test_the_projects_params_file_states_the_defaults_it_relies_on():
    # params.yaml may override any default; this guards the values the docs quote
    params = yaml.safe_load((REPO / "params.yaml").read_text(encoding="utf-8"))
    assert params["seed"] == default_of("seed")
    assert params["judge"]["max_tokens"] == default_of("judge.max_tokens")
    assert params["annotation"]["context_window"] == default_of("annotation.context_window")
