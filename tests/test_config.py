"""params.yaml and dvc.yaml against the config models: one source of defaults, one params section per stage."""

from __future__ import annotations

import typing
from pathlib import Path

import pytest
import yaml
from pydantic import BaseModel

from corecode.config import ConfigError, Params, defaults_yaml, load_params

ROOT = Path(__file__).resolve().parents[1]


def test_params_yaml_is_the_pydantic_defaults():
    """Every default is defined once, in the config models; params.yaml spells out exactly those values (all of
    them: DVC tracks what params.yaml holds)."""
    raw = yaml.safe_load((ROOT / "params.yaml").read_text())
    assert raw == Params().model_dump(mode="json")
    assert load_params(ROOT / "params.yaml") == Params()


def test_defaults_yaml_round_trips():
    assert Params.model_validate(yaml.safe_load(defaults_yaml())) == Params()


def _models(cls: type[BaseModel], seen: set) -> list[type[BaseModel]]:
    if cls in seen:
        return []
    seen.add(cls)
    out = [cls]
    for field in cls.model_fields.values():
        for arg in (field.annotation, *typing.get_args(field.annotation)):
            for candidate in (arg, *typing.get_args(arg)):
                if isinstance(candidate, type) and issubclass(candidate, BaseModel):
                    out += _models(candidate, seen)
    return out


def test_every_knob_is_documented():
    undocumented = [
        f"{m.__name__}.{name}"
        for m in _models(Params, set())
        for name, field in m.model_fields.items()
        if not field.description
    ]
    assert not undocumented


def test_one_lora_shape():
    from corecode.models.config import LoraParams

    params = Params()
    assert {
        type(params.sft.lora),
        type(params.grpo.team.lora),
        type(params.grpo.single.lora),
        type(params.grpo.magrpo.lora),
    } == {LoraParams}


def test_no_blocks_of_nulls():
    """Per-role overrides list only what they change."""
    sft = yaml.safe_load((ROOT / "params.yaml").read_text())["sft"]
    assert sft["coder"] == {} and sft["planner"] == {"max_steps": 3300, "learning_rate": 0.001}


@pytest.mark.parametrize("pipeline", ["dvc.yaml", "baselines/dvc.yaml"])
def test_stages_read_whole_sections_through_the_params_stage(pipeline):
    """A stage depends on whole sections' files, written by the params stage (data/params/SECTION.json), and lists no
    params.yaml keys itself: a bad params.yaml fails `params` before DVC removes any output, and a new knob cannot
    silently miss its stage."""
    from corecode.pipeline.params_stage import sections

    known = set(sections(Params()))
    for name, stage in yaml.safe_load((ROOT / pipeline).read_text())["stages"].items():
        body = stage.get("do", stage)
        if name == "params":
            assert body["params"] == [{"params.yaml": None}] and body["outs"] == [
                {"data/params": {"cache": False, "persist": True}}
            ]
            continue
        assert "params" not in body, f"{pipeline}: {name} lists params.yaml keys"
        read = [d.removeprefix("data/params/").removesuffix(".json") for d in body["deps"] if "data/params/" in d]
        assert read and set(read) <= known, f"{pipeline}: {name} reads {read}"


def test_wrong_section_key_names_the_key(tmp_path):
    path = tmp_path / "params.yaml"
    path.write_text("grpo:\n  team:\n    max_steps: abc\n")
    with pytest.raises(ConfigError, match=r"grpo\.team\.max_steps \(line 3\): Input should be a valid integer"):
        load_params(path)
    with pytest.raises(ConfigError, match=r"grpo\.team\.max_steps \(line 3\): .* \(got 'x'\)"):
        load_params(path, ["grpo.team.max_steps=x"])  # an override: the line of the key it replaces
    path.write_text("seed: 0\nreport:\n  comparisons: [[a, b, c]]\n")
    with pytest.raises(ConfigError, match=r"report\.comparisons\.0 \(line 3\)"):
        load_params(path)
    path.write_text("grpo:\n  max_steps: 3\n")  # the flat layout of old params files
    with pytest.raises(ConfigError, match=r"grpo\.max_steps"):
        load_params(path)
