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
from tests.conftest import TEST_PARAMS

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
    # keys a run cannot guess (the model name) and ignored ones; the typo probabilities default
    # to the study's 0.2 each, so a partial perturb section runs
    without = {
        dotted
        for dotted, value in _leaves(SCHEMA)
        if isinstance(value, Value) and value.default is NO_DEFAULT
    }
    assert without == {
        "model_defaults.name",
        "scoring.bootstrap_samples",  # ignored keys, accepted for older params files
        "impact.bootstrap_samples",
    }


def test_default_of_names_the_key_it_cannot_find():
    with pytest.raises(KeyError, match=r"annotation\.context_windw"):
        default_of("annotation.context_windw")
    assert engine_defaults()["max_model_len"] == default_of("model_defaults.max_model_len")
    assert "name" not in engine_defaults()


def _schema_defaults() -> dict[str, list]:
    """``{key name: [the defaults of every schema key of that name]}`` (None is no default)."""
    out: dict[str, list] = {}
    for dotted, value in _leaves(SCHEMA):
        if value.default is not NO_DEFAULT and value.default is not None:
            out.setdefault(dotted.rsplit(".", 1)[-1], []).append(value.default)
    return out


def _same(a, b) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):  # True is not the integer 1 here
        return a is b
    return a == b


def _literal(node: ast.AST):
    try:
        return ast.literal_eval(node), True
    except ValueError:
        return None, False


def _named_defaults(node: ast.AST) -> list[tuple[str, ast.AST]]:
    """``(name, default expression)`` pairs a node declares: a function's keyword defaults, a
    class's annotated fields (dataclass settings), or ``x.get("<name>", <default>)``."""
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
        args = node.args
        positional = args.posonlyargs + args.args
        with_default = positional[len(positional) - len(args.defaults) :]
        pairs = list(zip(with_default, args.defaults, strict=True))
        pairs += [
            (a, d) for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True) if d is not None
        ]
        return [(a.arg, d) for a, d in pairs]
    if isinstance(node, ast.ClassDef):
        return [
            (s.target.id, s.value)
            for s in node.body
            if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name) and s.value
        ]
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "get"
        and len(node.args) == 2
        and isinstance(node.args[0], ast.Constant)
        and isinstance(node.args[0].value, str)
    ):
        return [(node.args[0].value, node.args[1])]
    return []


def _repeated_defaults(path: Path, defaults: dict[str, list], *, root: Path = REPO) -> list[str]:
    """Places in ``path`` that write a params key's schema default a second time: a keyword
    default, a settings field or a ``.get`` fallback named like a params key whose literal value
    is that key's default (``small_n: int = 30``, ``cfg.get("context_window", 7)``)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        for name, expr in _named_defaults(node):
            if name not in defaults:
                continue
            value, is_literal = _literal(expr)
            if is_literal and value is not None and any(_same(value, d) for d in defaults[name]):
                found.append(f"{path.relative_to(root).as_posix()}: {name}={value!r}")
    return found


# Hits the guard allows, each for the reason given. Each line names the place as the guard
# prints it (no line numbers, so edits elsewhere in the file do not move them).
ALLOWED = {
    # the simulator's study settings: a simulated design, not the pipeline's params keys that
    # happen to share the names
    "src/evalpipe/scoring/simulate.py: draws=1",
    "src/evalpipe/scoring/simulate.py: bootstrap_samples=1000",
}


def test_no_module_writes_a_params_default_a_second_time():
    defaults = _schema_defaults()
    for name in ("source", "name", "model"):  # also the names of other things than params keys
        defaults.pop(name, None)
    files = sorted((REPO / "stages").glob("*.py")) + sorted((REPO / "src").rglob("*.py"))
    found = [hit for f in files for hit in _repeated_defaults(f, defaults)]
    new = sorted(set(found) - ALLOWED)
    assert not new, (
        "a params default written a second time: read it from load_params (stages), take it as a "
        'required keyword or default to params_schema.default_of("<section>.<key>"):\n'
        + "\n".join(new)
    )
    # an allowance nothing needs any more goes, so the list only shrinks
    assert not sorted(ALLOWED - set(found)), sorted(ALLOWED - set(found))


def test_the_guard_sees_a_keyword_default_a_settings_field_and_a_get_fallback(tmp_path):
    module = tmp_path / "m.py"
    module.write_text(
        "from dataclasses import dataclass\n"
        "def f(*, context_window=7, top_n=3): ...\n"
        "@dataclass\n"
        "class S:\n"
        "    min_kappa: float = 0.6\n"
        "    require_qualification: bool = 1\n"
        "x = {}.get('small_n', 30)\n",
        encoding="utf-8",
    )
    found = _repeated_defaults(module, _schema_defaults(), root=tmp_path)
    assert sorted(found) == ["m.py: context_window=7", "m.py: min_kappa=0.6", "m.py: small_n=30"]


def test_the_projects_params_file_states_the_defaults_it_relies_on():
    # params.yaml may override any default; this guards the values the docs quote
    params = yaml.safe_load(TEST_PARAMS.read_text(encoding="utf-8"))
    assert params["seed"] == default_of("seed")
    assert params["judge"]["max_tokens"] == default_of("judge.max_tokens")
    assert params["annotation"]["context_window"] == default_of("annotation.context_window")


def test_the_ignored_bootstrap_keys_are_out_of_params_yaml_but_older_files_still_load():
    params = yaml.safe_load(TEST_PARAMS.read_text(encoding="utf-8"))
    assert "bootstrap_samples" not in params["scoring"]
    assert "bootstrap_samples" not in params["impact"]
    older = {"scoring": {"bootstrap_samples": 1000}, "impact": {"bootstrap_samples": 1000}}
    validate_params(older)
    assert "deprecated" in SCHEMA.keys["scoring"].keys["bootstrap_samples"].doc
