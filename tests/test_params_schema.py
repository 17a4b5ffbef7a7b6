"""params.yaml validation: every section, unknown keys, wrong types, through the stages' CLI."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from evalpipe.errors import InputError
from evalpipe.params import load_params
from evalpipe.params_schema import SCHEMA, Section, validate_params
from tests.conftest import TEST_PARAMS

REPO = Path(__file__).resolve().parents[1]


def repo_params() -> dict:
    return yaml.safe_load(TEST_PARAMS.read_text(encoding="utf-8"))


def write(tmp_path: Path, params: dict) -> Path:
    path = tmp_path / "params.yaml"
    path.write_text(yaml.safe_dump(params, allow_unicode=True), encoding="utf-8")
    return path


def test_the_repository_params_file_is_valid():
    load_params(TEST_PARAMS)


def test_every_key_of_the_repository_params_file_is_declared():
    # the schema covers every section and key the repository ships, no more, no less at the top
    assert set(repo_params()) == set(SCHEMA.keys)


@pytest.mark.parametrize(
    ("path", "value", "message"),
    [
        (
            ("annotation", "min_kapa"),
            0.6,
            "unknown key 'annotation.min_kapa' (did you mean 'annotation.min_kappa'?)",
        ),
        (
            ("perturb", "delte_prob"),
            0.2,
            "unknown key 'perturb.delte_prob' (did you mean 'perturb.delete_prob'?)",
        ),
        (("scoring", "bootstrap"), 5, "unknown key 'scoring.bootstrap'"),
        (("modles",), {"x": {"name": "x"}}, "unknown key 'modles' (did you mean 'models'?)"),
    ],
)
def test_unknown_keys_stop_with_the_closest_known_key(tmp_path, path, value, message):
    params = repo_params()
    node = params
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    with pytest.raises(InputError) as err:
        load_params(write(tmp_path, params))
    text = str(err.value)
    assert text.startswith(str(tmp_path / "params.yaml"))
    assert message in text
    assert "src/evalpipe/params_schema/table.py" in text  # where a new key is declared


@pytest.mark.parametrize(
    ("section", "key", "value", "expected"),
    [
        (
            "annotation",
            "min_kappa",
            "0.6",
            "annotation.min_kappa must be a number in [-1, 1], found '0.6' (a string)",
        ),
        (
            "annotation",
            "merge_method",
            "mean",
            "annotation.merge_method must be one of "
            "weighted_average, median, majority, kappa_weighted, found 'mean'",
        ),
        ("annotation", "overlap", 2.5, "annotation.overlap must be an integer >= 1"),
        ("scoring", "sentiment_strict", "yes", "scoring.sentiment_strict must be true or false"),
        ("scoring", "bootstrap_samples", True, "scoring.bootstrap_samples must be an integer >= 1"),
        ("benchmarks", "max_samples", 0, "benchmarks.max_samples must be an integer >= 1 or null"),
        (
            "model_defaults",
            "base_urls",
            "http://x",
            "model_defaults.base_urls must be a list (each a string) or null",
        ),
        ("judge", "max_tokens", None, "judge.max_tokens must be an integer >= 1, found null"),
        ("prompt", "style", "chain", "prompt.style must be one of zero_shot, few_shot, cot"),
        ("perturb", "replace_prob", 0.9, "must be at most 1"),  # the section's sum rule
    ],
)
def test_wrong_types_and_values_name_the_key_and_what_was_expected(
    tmp_path, section, key, value, expected
):
    params = repo_params()
    params[section][key] = value
    with pytest.raises(InputError, match=r"params\.yaml") as err:
        load_params(write(tmp_path, params))
    assert expected in str(err.value)


def test_all_problems_are_reported_at_once(tmp_path):
    params = repo_params()
    params["annotation"]["min_kapa"] = 0.6
    params["words"]["english"]["min_length"] = "2"
    with pytest.raises(InputError) as err:
        load_params(write(tmp_path, params))
    lines = str(err.value).splitlines()
    assert len(lines) == 2
    assert "words.english.min_length must be an integer >= 1" in lines[1]


def test_nested_lists_and_user_named_sections_are_checked():
    validate_params({"benchmarks": {"suites": {"mine": "japanese"}}})
    with pytest.raises(InputError, match=r"benchmarks\.suites\.mine must be one of english"):
        validate_params({"benchmarks": {"suites": {"mine": "french"}}})
    with pytest.raises(InputError, match=r"annotation\.dialogues\[1\] must be a string"):
        validate_params({"annotation": {"dialogues": ["sample", 3]}})


def test_a_declared_key_is_one_line_in_the_schema():
    # how another part adds a key: a new entry in the section's mapping
    from evalpipe.params_schema import integer

    extended = Section({**SCHEMA.keys["annotation"].keys, "min_overlap": integer("x", minimum=1)})
    assert "min_overlap" in extended.keys


def test_a_stage_with_a_string_kappa_exits_cleanly_naming_the_key(tmp_path):
    # before: QualitySettings compared "0.6" with a float and crashed with a raw TypeError
    params = repo_params()
    params["annotation"]["min_kappa"] = "0.6"
    path = write(tmp_path, params)
    proc = subprocess.run(
        [sys.executable, "-m", "stages.agreement", "--params", str(path)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 2, proc.stderr
    assert "annotation.min_kappa must be a number" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_model_entries_are_checked_like_the_defaults(tmp_path):
    params = repo_params()
    params["models"]["second"] = {"name": "tiny-random", "dtyp": "float32", "max_model_len": "x"}
    with pytest.raises(InputError) as err:
        load_params(write(tmp_path, params))
    text = str(err.value)
    assert "unknown key 'models.second.dtyp' (did you mean 'models.second.dtype'?)" in text
    assert "models.second.max_model_len must be an integer >= 1" in text


@pytest.mark.parametrize(
    ("slug", "message"),
    [
        ("Qwen2.5", "expected a short slug"),
        ("agreement", "is reserved"),
    ],
)
def test_model_slugs_must_be_usable_as_stage_and_folder_names(tmp_path, slug, message):
    params = repo_params()
    params["models"][slug] = {"name": "tiny-random"}
    with pytest.raises(InputError, match=message):
        load_params(write(tmp_path, params))
