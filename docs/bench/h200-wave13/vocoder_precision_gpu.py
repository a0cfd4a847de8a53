"""GPU probe (wave 13): the float16 vocoder's waveform SNR on the *same* mel, and how the float32 vocoder's SNR falls
with mel error, for full-size HiFTs with seeded random weights and voiced f0 heads (``voice_random_f0``).

Zero noise draws, one seeded N(0,1) mel of 150 frames (3 s). Each row: waveform SNR against three references
(float32 on the GPU with cuDNN's default TF32 convolutions, as the bench's eager-fp32 runs; float32 on the GPU
with TF32 off; float64 on the host) and the largest f0 difference. Measurement tool; prints one line per row.

    python3 docs/bench/h200-wave13/vocoder_precision_gpu.py
"""

from __future__ import annotations

import contextlib
import copy
import sys
import tempfile
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

from cosydesk.model.config import load_model_config  # noqa: E402
from cosydesk.model.hift import build_hift  # noqa: E402
from cosydesk.runtime.backends.eager import cast_except_f0  # noqa: E402
from cosydesk.synthetic.full_size import voice_random_f0, write_full_size_config  # noqa: E402

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"  # the host only for a dry run of the script


def snr(test: torch.Tensor, ref: torch.Tensor) -> float:
    a, b = test.double().cpu().flatten().numpy(), ref.double().cpu().flatten().numpy()
    n = min(a.size, b.size)
    return float(10 * np.log10((b[:n] ** 2).sum() / max(((a[:n] - b[:n]) ** 2).sum(), 1e-300)))


@contextlib.contextmanager
def tf32(on: bool):
    before = torch.backends.cudnn.allow_tf32
    torch.backends.cudnn.allow_tf32 = on
    try:
        yield
    finally:
        torch.backends.cudnn.allow_tf32 = before


def v2_rows(mel_cpu: torch.Tensor) -> None:
    torch.manual_seed(0)
    _, config = load_model_config(write_full_size_config(tempfile.mkdtemp(), "v2"))
    host = build_hift(config["hift"]).eval().requires_grad_(False)
    voice_random_f0(host)
    cuda = torch.device(DEVICE)
    mel = mel_cpu.to(cuda)

    def run(hift, mel_in, f0_tf32: bool, decode_tf32: bool = True):
        with torch.inference_mode():
            with tf32(f0_tf32):
                f0 = hift.predict_f0(mel_in)
            with tf32(decode_tf32):
                source = hift.make_source(f0, hift.zero_draws(mel_in))
                wave = hift.decode(mel_in, source.to(mel_in.dtype)).float()
        return f0.double(), wave

    with torch.inference_mode():
        f0_64 = host.double().predict_f0(mel_cpu.double())
        wave_64 = host.decode(mel_cpu.double(), host.make_source(f0_64, host.zero_draws(mel_cpu.double())).double())
        host.float()
    fp32 = copy.deepcopy(host).to(cuda)
    refs = {"fp32 TF32": run(fp32, mel, True), "fp32 no TF32": run(fp32, mel, False, False),
            "host fp64": (f0_64.to(cuda), wave_64.float())}
    old16 = copy.deepcopy(host).half().to(cuda)  # every weight rounded to float16 (the app before cast_except_f0)
    new16 = cast_except_f0(copy.deepcopy(host), torch.float16).to(cuda)
    rows = {
        "fp32, f0 TF32 off, decode TF32": run(fp32, mel, False, True),
        "fp16 all weights (old), f0 TF32": run(old16, mel.half(), True),
        "fp16 f0 weights fp32 (new), f0 TF32": run(new16, mel.half(), True),
        "fp16 f0 weights fp32 (new), f0 TF32 off": run(new16, mel.half(), False),
    }
    print(f"v2: voiced frames {float((f0_64 > host.voiced_threshold).double().mean()):.3f}, "
          f"f0 median {float(f0_64.median()):.1f} Hz")
    for name, (f0, wave) in {**refs, **rows}.items():
        cells = "  ".join(f"vs {r}: {snr(wave, rw):5.1f} dB / f0 {float((f0.cpu() - rf.cpu()).abs().max()):.1e} Hz"
                          for r, (rf, rw) in refs.items() if r != name)
        print(f"  {name:42s} {cells}")
    for eps in (2.5e-4, 5e-4, 7.5e-4, 1.3e-3):
        g = torch.Generator().manual_seed(3)
        noisy = (mel_cpu * (1 + eps * torch.randn(mel_cpu.shape, generator=g))).to(cuda)
        _, wave = run(fp32, noisy, False, False)
        print(f"  fp32 no TF32 on mel x (1 + {eps:.1e} N(0,1)): {snr(wave, refs['fp32 no TF32'][1]):5.1f} dB")


def v3_rows(mel_cpu: torch.Tensor) -> None:
    torch.manual_seed(0)
    _, config = load_model_config(write_full_size_config(tempfile.mkdtemp(), "v3"))
    hift = build_hift(config["hift"]).eval().requires_grad_(False)
    voice_random_f0(hift)
    hift = hift.to(DEVICE)
    mel = mel_cpu.to(DEVICE)
    with torch.inference_mode():
        ref = hift.inference(mel)
        ref_off = None
        with tf32(False):
            ref_off = hift.inference(mel)
        print(f"v3: fp32 TF32 vs TF32 off, same mel: {snr(ref, ref_off):5.1f} dB")
        print(f"v3: fp32 on the mel rounded to fp16: {snr(hift.inference(mel.half().float()), ref):5.1f} dB")
        for eps in (2.5e-4, 5e-4, 7.5e-4, 1.3e-3):
            g = torch.Generator().manual_seed(3)
            noisy = (mel_cpu * (1 + eps * torch.randn(mel_cpu.shape, generator=g))).to(DEVICE)
            print(f"v3: fp32 on mel x (1 + {eps:.1e} N(0,1)): {snr(hift.inference(noisy), ref):5.1f} dB")


def main() -> int:
    mel = torch.randn(1, 80, 150, generator=torch.Generator().manual_seed(1))
    v2_rows(mel)
    v3_rows(mel)
    return 0


if __name__ == "__main__":
    sys.exit(main())
