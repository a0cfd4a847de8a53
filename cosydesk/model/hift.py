"""HiFT vocoders (neural source filter + iSTFT head): mel [B, 80, T] -> waveform [B, L].

- ``HiFTGenerator``: v1 (22.05 kHz, 256 samples per frame) and v2 (24 kHz, 480 per frame); transposed-conv
  upsampling, symmetric convs. Its source takes random draws, which the caller controls (``NsfDraws``:
  zeros, a replay, or fresh torch RNG draws).
- ``CausalHiFTGenerator``: v3; every conv looks only into the past except ``conv_pre`` (4 frames of right
  context) and the f0 predictor's first conv (3 frames); upsampling is nearest-repeat + left-padded conv.
  It takes no random draws at inference: it reads fixed tensors regenerated from the official recipe
  (``hift_source.FixedSourceNoise``).

Data flow (both): f0 = predictor(mel); per-sample f0 -> harmonics -> tanh(Linear) = source s [B, 1, L];
STFT(s) is fused into every upsampling stage; the last conv gives 9 log-magnitudes and 9 phases per
frame; iSTFT (n_fft 16, hop 4, Hann) -> clamp to +-audio_limit.

Public API (parity entry; the classes live in the modules below, importable from here):
    hift = build_hift(read_yaml(path)["hift"])          # or HiFTGenerator/CausalHiFTGenerator.from_config(node)
    v1/v2: hift.inference(mel, zero_noise=False, *, draws=None, generator=None) -> wave [B, L]
           hift.inference_with_source(mel, cache_source=None, zero_noise=False, *, draws=None, generator=None)
               -> (wave [B, L], source [B, 1, L]);  hift.predict_f0(mel) -> [B, T]
           hift.forward(mel, draws, cache_source=None)  (no RNG inside: the capturable core);
           hift.redraw(draws)  (fresh draws in place, for a graph's static buffers)
    v3:    hift.inference(mel, finalize=True) -> wave;  hift.inference_with_source(mel, finalize=True)
           hift.predict_f0(mel, finalize=True) -> float64 [B, T or T-3];  hift.set_fixed_noise(rand_ini, sine_waves)
           hift.fixed_noise.reserve(num_samples, device)  (before capturing a CUDA graph)

Sub-module attribute names are those of the official ``hift.pt`` keys (``conv_pre``, ``ups``,
``source_downs``, ``source_resblocks``, ``resblocks``, ``conv_post``, ``m_source.l_linear``,
``f0_predictor``) so ``checkpoint.load_strict`` works unchanged. Code structure is our own.

Must not: sync with the host or branch on tensor values inside ``forward`` (later captured in CUDA graphs),
touch the global RNG except for the documented fresh draws of v1/v2, or mutate its own dtype. Works in
float32 and float16/bfloat16 weights: the f0 -> source path, the STFT and the iSTFT run in float32
(phase accumulation and exp() need it); v3's f0 predictor runs in float64 like the official one.

Modules: ``hift_layers`` (Snake, padded/look-ahead convs, ResBlock), ``hift_istft`` (Hann window, capturable
iSTFT), ``hift_source`` (f0 -> harmonics -> source), ``hift_f0`` (f0 predictors), ``hift_base`` (the shared
generator body), ``hift_generator`` (v1/v2), ``hift_causal`` (v3), ``hift_stream`` (v3 bounded-work streaming).
"""

from __future__ import annotations

from torch import nn

from cosydesk.model.hift_causal import CausalHiFTGenerator
from cosydesk.model.hift_generator import HiFTGenerator
from cosydesk.model.hift_istft import overlap_add_istft
from cosydesk.model.hift_layers import Snake
from cosydesk.model.hift_source import NsfDraws, with_cached_start

__all__ = ["HiFTGenerator", "CausalHiFTGenerator", "NsfDraws", "build_hift", "Snake", "overlap_add_istft",
           "with_cached_start"]


def build_hift(node) -> nn.Module:
    """Build the vocoder the yaml ``hift`` Node describes (class chosen by its class name)."""
    builders = {"HiFTGenerator": HiFTGenerator, "CausalHiFTGenerator": CausalHiFTGenerator}
    if node.class_name not in builders:
        raise ValueError(f"unsupported vocoder class {node.target!r}")
    return builders[node.class_name].from_config(node)
