"""The float16 vocoder (v1/v2 behind ``HalfHift``) keeps its f0 predictor float32 (``eager.cast_except_f0``): f0
feeds the sine source's running phase, so float16-rounded predictor weights shift every later sample."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch

from cosydesk.model import load
from cosydesk.model.config import load_model_config
from cosydesk.model.hift import build_hift
from cosydesk.model.hift_f0 import conv1d_as_product
from cosydesk.runtime.backends.eager import HalfHift, cast_except_f0, cast_model
from cosydesk.synthetic.full_size import voice_random_f0, write_full_size_config
from tests.conftest import cuda
from tests.support.paths import fixture_dir


def _snr_db(test: torch.Tensor, ref: torch.Tensor) -> float:
    a, b = test.double().numpy(), ref.double().numpy()
    return float(10 * np.log10((b ** 2).sum() / ((a - b) ** 2).sum()))


def _voiced_full_size_v2_hift(workdir):
    """A full-size v2 HiFT with seeded random weights, its f0 head voiced (``voice_random_f0``), float32 on the host."""
    _, config = load_model_config(write_full_size_config(workdir, "v2"))
    with torch.random.fork_rng():
        torch.manual_seed(0)
        hift = build_hift(config["hift"]).eval().requires_grad_(False)
    voice_random_f0(hift)
    return hift


def test_everything_but_the_f0_predictor_is_cast_and_its_weights_are_untouched():
    hift = load(fixture_dir("v2") / "model").hift
    before = {key: value.clone() for key, value in hift.f0_predictor.state_dict().items()}
    cast_except_f0(hift, torch.float16)
    for key, param in hift.named_parameters():
        assert param.dtype == (torch.float32 if key.startswith("f0_predictor.") else torch.float16), key
    for key, value in hift.f0_predictor.state_dict().items():
        assert torch.equal(value, before[key]), key  # never rounded on the way


@pytest.mark.parametrize("version", ["v1", "v2"])
def test_cast_model_gives_the_half_vocoder_a_float32_pitch(version):
    model = load(fixture_dir(version) / "model")
    reference = copy.deepcopy(model.hift)
    cast = cast_model(model, torch.float16)
    assert isinstance(cast.hift, HalfHift)
    mel = torch.randn(1, 80, 40, generator=torch.Generator().manual_seed(2))
    with torch.inference_mode():
        f0 = cast.hift.hift.predict_f0(mel.half())  # what the float16 vocoder computes
        expected = reference.predict_f0(mel.half().float())  # the float32 predictor on the same rounded mel
    assert f0.dtype == torch.float32
    assert torch.equal(f0, expected)


@pytest.mark.slow  # ~15 s on 2 CPU cores: float16 convolutions of a full-size vocoder on the host
def test_a_voiced_full_size_half_vocoder_stays_close_to_float32_on_the_same_mel(tmp_path):
    """Full-size v2 HiFT, voiced (``voice_random_f0``), 0.5 s: with every weight in float16 the waveform SNR against
    float32 was 30 dB here (12 dB over 3 s, as phase errors add up); with the f0 predictor kept float32, 44 dB."""
    hift = _voiced_full_size_v2_hift(tmp_path)
    mel = torch.randn(1, 80, 25, generator=torch.Generator().manual_seed(1))
    with torch.inference_mode():
        ref = hift.inference(mel, zero_noise=True)
        half = HalfHift(cast_except_f0(copy.deepcopy(hift), torch.float16), torch.float16)
        assert _snr_db(half.inference(mel, zero_noise=True), ref) > 38


def test_the_product_form_of_the_f0_convolutions_is_the_convolution():
    g = torch.Generator().manual_seed(4)
    x = torch.randn(2, 80, 37, generator=g, dtype=torch.float64)
    weight, bias = torch.randn(512, 80, 3, generator=g, dtype=torch.float64), torch.randn(512, generator=g, dtype=torch.float64)
    expected = torch.nn.functional.conv1d(x, weight, bias, padding=1)
    assert torch.allclose(conv1d_as_product(x, weight, bias, 1), expected, rtol=0, atol=1e-12)
    assert torch.allclose(conv1d_as_product(x, weight, None, 1), expected - bias[:, None], rtol=0, atol=1e-12)


@cuda
def test_on_a_gpu_the_f0_predictor_is_float32_not_tf32(tmp_path):
    """cuDNN's default TF32 convolutions moved f0 by ~0.1 Hz on a full-size head (H200); the products keep it at
    float32 rounding, far below that, whatever ``cudnn.allow_tf32`` says."""
    hift = _voiced_full_size_v2_hift(tmp_path)
    mel = torch.randn(1, 80, 150, generator=torch.Generator().manual_seed(1))
    with torch.inference_mode():
        exact = copy.deepcopy(hift.f0_predictor).double()(mel.double())
        assert torch.backends.cudnn.allow_tf32  # torch's default, which the app keeps
        on_gpu = hift.f0_predictor.cuda()(mel.cuda()).double().cpu()
    assert float((on_gpu - exact).abs().max()) < 5e-3
