"""`models.<slug>.engine_args` (vLLM engine arguments for model ladders) and the model labels:
checked against vLLM's own argument list, part of the model identity where they change outputs,
and received by the engine (tiny-random on the CPU build)."""

from __future__ import annotations

from pathlib import Path

import pytest

from evalpipe.errors import InputError
from evalpipe.inference.engine import make_backend, make_engine
from evalpipe.inference.engine_args import engine_argument_names
from evalpipe.inference.tiny import default_model_cache
from evalpipe.inference.types import EngineError, GenerationRequest
from evalpipe.model_list import locate_settings, model_configs, model_labels
from evalpipe.params_schema import validate_params, with_defaults

REPO = Path(__file__).resolve().parents[1]
CFG = {"name": "tiny-random", "backend": "vllm", "max_model_len": 256}


def _identity(**engine_args: object):
    cfg = {**CFG, "engine_args": engine_args}
    return make_backend(cfg, model_cache=default_model_cache(REPO)).identity


def test_engine_argument_names_are_vllms_own() -> None:
    names = engine_argument_names()
    assert {"quantization", "kv_cache_dtype", "max_num_seqs"} <= names
    assert "quantisation" not in names


def test_a_misspelt_argument_names_the_params_key_and_the_closest_valid_one() -> None:
    with pytest.raises(EngineError) as info:
        make_backend({**CFG, "engine_args": {"max_num_seq": 4}})
    message = locate_settings(str(info.value), "models.ladder")
    assert "params.yaml: models.ladder.engine_args.max_num_seq: not an argument" in message
    assert "did you mean max_num_seqs?" in message
    with pytest.raises(EngineError, match=r"engine_args.quantisation: .*did you mean quantization"):
        make_backend({**CFG, "engine_args": {"quantisation": "awq"}})


def test_arguments_evalpipe_sets_point_at_their_own_setting() -> None:
    with pytest.raises(EngineError, match=r"engine_args\.dtype: .*set model\.dtype instead"):
        make_backend({**CFG, "engine_args": {"dtype": "float16"}})
    with pytest.raises(EngineError, match=r"engine_args: expected a mapping"):
        make_backend({**CFG, "engine_args": "quantization=awq"})


def test_a_server_takes_its_engine_arguments_at_start_up() -> None:
    cfg = {"name": "m", "backend": "openai", "base_urls": ["http://127.0.0.1:9/v1"]}
    with pytest.raises(EngineError, match="backend openai takes none"):
        make_backend({**cfg, "engine_args": {"quantization": "awq"}})
    assert make_backend({**cfg, "engine_args": {}}).identity.fields["name"] == "m"


def test_arguments_that_change_outputs_join_the_identity_and_scheduling_ones_do_not() -> None:
    plain = _identity()
    assert "engine_args" not in plain.fields  # the default model keeps its cache keys
    assert _identity(max_num_seqs=4).digest == plain.digest
    fp8 = _identity(kv_cache_dtype="fp8", max_num_seqs=4)
    assert fp8.digest != plain.digest and fp8.fields["engine_args"] == {"kv_cache_dtype": "fp8"}
    assert fp8.label == plain.label + "[kv_cache_dtype=fp8]"


def test_the_schema_takes_engine_args_and_labels_per_model() -> None:
    params = with_defaults(
        {
            "models": {
                "qwen7b-awq": {
                    "name": "Qwen/Qwen2.5-7B-Instruct-AWQ",
                    "engine_args": {"quantization": "awq", "max_num_seqs": 64},
                    "family": "qwen2.5",
                    "size": "7B",
                    "quantisation": "awq-int4",
                }
            }
        }
    )
    validate_params(params)
    cfg = model_configs(params)["qwen7b-awq"]
    assert model_labels(cfg) == {"family": "qwen2.5", "size": "7B", "quantisation": "awq-int4"}
    assert cfg["engine_args"] == {"quantization": "awq", "max_num_seqs": 64}
    with pytest.raises(InputError, match=r"models\.x\.engine_args must be a mapping"):
        validate_params({"models": {"x": {"name": "m", "engine_args": "awq"}}})
    with pytest.raises(InputError, match=r"unknown key 'models\.x\.quantization'"):
        validate_params({"models": {"x": {"name": "m", "quantization": "awq"}}})


@pytest.mark.vllm
@pytest.mark.slow
@pytest.mark.timeout(900)
def test_the_engine_receives_the_arguments() -> None:
    cfg = {**CFG, "gpu_memory_utilization": 0.1, "engine_args": {"max_num_seqs": 3}}
    engine = make_engine(cfg, cache_dir=None, model_cache=default_model_cache(REPO))
    try:
        outs = engine.generate(
            [GenerationRequest(f"Question {i}?", max_tokens=4) for i in range(5)], progress=False
        )
        assert len(outs) == 5
        llm = engine.backend._llm
        assert llm.llm_engine.vllm_config.scheduler_config.max_num_seqs == 3
    finally:
        engine.close()
