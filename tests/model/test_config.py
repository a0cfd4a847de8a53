"""The yaml reader understands HyperPyYAML tags as data and never executes them."""

from __future__ import annotations

import pytest

from cosydesk.model.config import ConfigError, Node, load_model_config, read_yaml
from tests.support.paths import fixture_dir


@pytest.mark.parametrize("version,name", [("v1", "cosyvoice.yaml"), ("v2", "cosyvoice2.yaml"), ("v3", "cosyvoice3.yaml")])
def test_official_yaml_reads_as_data(version, name):
    config = read_yaml(fixture_dir(version) / "model" / name)
    assert isinstance(config["llm"], Node) and config["llm"].kind == "new"
    assert config["sample_rate"] in (22050, 24000)
    # !apply: is recorded, not called
    assert config["__set_seed1"].kind == "apply" and config["__set_seed1"].args == [1986]
    assert config["hift"]["sampling_rate"] == config["sample_rate"]
    assert config["flow"]["decoder"]["cfm_params"]["content"]["sigma_min"] == pytest.approx(1e-6)


def test_ref_arithmetic():
    config = read_yaml(fixture_dir("v2") / "model" / "cosyvoice2.yaml")
    assert config["flow"]["decoder"]["estimator"]["static_chunk_size"] == 50  # !ref <chunk_size> * <token_mel_ratio>
    # a !ref to a whole node shares the node
    assert config["hifigan"]["generator"] is config["hift"]


def test_ref_errors(tmp_path):
    bad = tmp_path / "cosyvoice2.yaml"
    bad.write_text("a: 1\nb: !ref <missing>\n")
    with pytest.raises(ConfigError, match="missing"):
        read_yaml(bad)
    bad.write_text("a: 1\nb: !ref <a> ** 2\n")
    with pytest.raises(ConfigError, match="unsupported"):
        read_yaml(bad)


def test_unknown_version_is_rejected(tmp_path):
    (tmp_path / "cosyvoice2.yaml").write_text(
        "sample_rate: 24000\nllm: !new:some.Other\n  a: 1\nflow: !new:x.CausalMaskedDiffWithXvec\nhift: !new:x.HiFTGenerator\n"
    )
    with pytest.raises(ConfigError, match="not supported"):
        load_model_config(tmp_path)
    with pytest.raises(ConfigError, match="not a CosyVoice model folder"):
        load_model_config(tmp_path / "nothing")
