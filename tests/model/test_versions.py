"""The per-version constants table against the official-format fixture configs, and its derived values."""

from __future__ import annotations

import math

import pytest

from cosydesk.model.config import read_yaml
from cosydesk.model.versions import VERSIONS, constants, per_version
from tests.support.paths import fixture_dir


@pytest.mark.parametrize("version", ["v1", "v2", "v3"])
def test_table_matches_the_official_configs(version):
    (path,) = (fixture_dir(version) / "model").glob("*.yaml")
    config = read_yaml(path)
    row = constants(version)
    assert row.sample_rate == config["sample_rate"]
    assert row.speech_tokens_per_second == config["flow"]["input_frame_rate"]
    assert row.token_mel_ratio == config.get("token_mel_ratio")
    assert row.samples_per_mel_frame == config["feat_extractor"]["hop_size"]
    hift = config["hift"]
    assert row.samples_per_mel_frame == math.prod(hift["upsample_rates"]) * hift["istft_params"]["hop_len"]
    assert row.speech_vocab == config["flow"]["vocab_size"]


def test_derived_values_are_the_official_numbers():
    v1, v2 = VERSIONS["v1"], VERSIONS["v2"]
    assert v1.mel_frames_for_tokens(v1.chunk_overlap) == 34 == int(20 / 50 * 22050 / 256)
    assert v2.mel_frames_for_tokens(25) == 50 and v2.mel_frames_per_second == 50.0
    assert (v2.hift_source_cache_samples, v1.hift_source_cache_samples) == (8 * 480, 20 * 256)
    assert per_version("speech_tokens_per_second") == {"v1": 50, "v2": 25, "v3": 25}
    with pytest.raises(ValueError, match="unknown model version 'v4'"):
        constants("v4")
