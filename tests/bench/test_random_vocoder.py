"""The benches' random vocoders are voiced: an untrained f0 head predicts ~0.1 Hz, under the 10 Hz voiced
threshold everywhere, which would leave the sine source (and its phase accumulation) out of every waveform
a bench compares (``synthetic.full_size.voice_random_f0``)."""

from __future__ import annotations

import pytest
import torch

from cosydesk.synthetic.full_size import F0_MEAN_HZ, F0_STD_HZ, build_random_networks, random_model, voice_random_f0


def _f0(hift, mel: torch.Tensor) -> torch.Tensor:
    with torch.inference_mode():
        return hift.predict_f0(mel)  # both generator kinds have it


@pytest.mark.parametrize("version", ["v1", "v2", "v3"])
def test_voicing_moves_an_untrained_f0_head_into_the_voiced_range(version, tmp_path):
    hift = random_model(version, "cpu", torch.float32, seed=0, workdir=tmp_path, tiny=True).hift
    mel = torch.randn(1, 80, 80, generator=torch.Generator().manual_seed(3))
    threshold = hift.voiced_threshold
    assert (_f0(hift, mel) < threshold).all()  # untrained: every frame unvoiced
    silent = hift.make_source(_f0(hift, mel), hift.zero_draws(mel)) if version != "v3" else None

    scale, bias = voice_random_f0(hift)
    assert scale > 1 and bias == pytest.approx(F0_MEAN_HZ, abs=3 * F0_STD_HZ)
    f0 = _f0(hift, mel)
    assert (f0 > threshold).float().mean() > 0.8  # on another mel than the calibration's: mostly voiced
    assert 0.5 * F0_MEAN_HZ < float(f0.median()) < 2 * F0_MEAN_HZ
    if silent is not None:  # the sine source now reaches the excitation
        voiced = hift.make_source(f0, hift.zero_draws(mel))
        assert (voiced - silent).abs().max() > 1e-2


def test_the_calibration_hits_its_targets_on_its_own_mel(tmp_path):
    hift = random_model("v2", "cpu", torch.float32, seed=0, workdir=tmp_path, tiny=True).hift
    voice_random_f0(hift, seed=5)
    head = hift.f0_predictor.classifier
    mel = torch.randn(1, 80, 200, generator=torch.Generator().manual_seed(5), dtype=torch.float64)
    with torch.no_grad():
        head.bias.add_(1e4)  # keep abs() away, as the calibration does
        before_abs = hift.f0_predictor(mel) - 1e4
    assert float(before_abs.mean()) == pytest.approx(F0_MEAN_HZ, abs=1e-2)  # float32 weights
    assert float(before_abs.std()) == pytest.approx(F0_STD_HZ, abs=1e-2)


@pytest.mark.slow  # ~25 s on 2 CPU cores: a full-size v3 (the DiT is 0.33 B parameters)
def test_full_size_random_models_come_voiced_and_tiny_ones_stay_as_they_were(tmp_path):
    *_, hift = build_random_networks("v3", seed=0, workdir=tmp_path / "full")
    mel = torch.randn(1, 80, 120, generator=torch.Generator().manual_seed(1))
    assert (_f0(hift, mel) > hift.voiced_threshold).float().mean() > 0.8
    *_, tiny = build_random_networks("v3", seed=0, workdir=tmp_path / "tiny", tiny=True)
    assert (_f0(tiny, mel) < tiny.voiced_threshold).all()
