"""CPU probe (wave 12): why a voiced vocoder's waveform SNR against the float32 reference falls so far, for the
full-size v2 HiFT with seeded random weights and its f0 head voiced (``synthetic.full_size.voice_random_f0``).
Zero noise draws throughout, one seeded mel of 150 frames (3 s). Prints one line per comparison: waveform SNR
against the float32 vocoder on the same mel, and the log-mel error of the output audio. Measurement tool.

    python3 docs/bench/h200-wave12/vocoder_precision_cpu.py > docs/bench/h200-wave12/cpu-vocoder-precision.log
"""

from __future__ import annotations

import copy
import sys
import tempfile
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

from cosydesk.frontend.features import FLOW_MEL_SETTINGS, log_mel  # noqa: E402
from cosydesk.model.config import load_model_config  # noqa: E402
from cosydesk.model.hift import build_hift  # noqa: E402
from cosydesk.runtime.backends.eager import HalfHift  # noqa: E402
from cosydesk.synthetic.full_size import voice_random_f0, write_full_size_config  # noqa: E402


def snr(test: torch.Tensor, ref: torch.Tensor) -> float:
    a, b = test.double().flatten().numpy(), ref.double().flatten().numpy()
    return float(10 * np.log10((b ** 2).sum() / ((a - b) ** 2).sum()))


def log_mel_l1(test: torch.Tensor, ref: torch.Tensor) -> float:
    settings = FLOW_MEL_SETTINGS["v2"]
    return float((log_mel(test.reshape(1, -1), settings) - log_mel(ref.reshape(1, -1), settings)).abs().mean())


def main() -> int:
    torch.manual_seed(0)
    _, config = load_model_config(write_full_size_config(tempfile.mkdtemp(), "v2"))
    hift = build_hift(config["hift"]).eval().requires_grad_(False)
    voice_random_f0(hift)
    half = HalfHift(copy.deepcopy(hift).half(), torch.float16)  # the float16 vocoder of eager-fp16 / cudagraph
    kept = HalfHift(copy.deepcopy(hift).half(), torch.float16)
    kept.hift.f0_predictor = copy.deepcopy(hift.f0_predictor)  # its f0 predictor's weights never rounded
    g = torch.Generator().manual_seed(1)
    mel = torch.randn(1, 80, 150, generator=g)
    perturbed = mel * (1 + 1.3e-3 * torch.randn(mel.shape, generator=g))  # the size of the fp16 flow's mel error
    with torch.inference_mode():
        ref = hift.inference(mel, zero_noise=True)
        f0 = hift.predict_f0(mel)
        rows = {
            "float16 vocoder": half.inference(mel, zero_noise=True),
            "float16 vocoder, f0 predictor weights kept float32": kept.inference(mel, zero_noise=True),
            "float32 vocoder, mel rounded to float16": hift.inference(mel.half().float(), zero_noise=True),
            "float32 vocoder, mel x (1 + 1.3e-3 N(0,1))": hift.inference(perturbed, zero_noise=True),
        }
        f0_rows = {"float16 vocoder": half.hift.predict_f0(mel.half()),
                   "f0 predictor kept float32, float16 mel": kept.hift.predict_f0(mel.half()),
                   "float32, mel rounded to float16": hift.predict_f0(mel.half().float())}
        source = hift.make_source(f0, hift.zero_draws(mel))
        decode_only = half.hift.decode(mel.half(), source.half()).float()
    print(f"voiced frames: {float((f0 > hift.voiced_threshold).float().mean()):.3f}; f0 median {float(f0.median()):.1f} Hz")
    for name, f in f0_rows.items():
        print(f"f0 of {name}: max |diff| {float((f - f0).abs().max()):.3e} Hz")
    rms = float(ref.pow(2).mean().sqrt())
    noise = torch.Generator().manual_seed(9)
    for db in (40, 30, 20):
        rows[f"reference + white noise at {db} dB"] = ref + rms * 10 ** (-db / 20) * torch.randn(ref.shape, generator=noise)
    rows["float16 decode on the float32 source (same f0)"] = decode_only
    for name, wave in rows.items():
        print(f"{name:55s} wave SNR {snr(wave, ref):5.1f} dB   log-mel L1 {log_mel_l1(wave, ref):.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
