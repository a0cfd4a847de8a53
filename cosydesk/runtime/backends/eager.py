"""The eager backends (``eager-fp32``, ``eager-fp16``) and the float16 cast every GPU backend starts from.

``cast_model(model, dtype)`` converts the model's modules in place and returns the dataclass copy the runtime
runs: the LLM and flow in ``dtype``; v1/v2's HiFT in ``dtype`` behind ``HalfHift`` (float32 at the core's side) with
its f0 predictor kept float32, v3's causal HiFT kept float32 (it streams with carried float32 phase state and a float64
f0 predictor).
"""

from __future__ import annotations

import dataclasses

import torch


class HalfHift:
    """HiFT in float16 behind the float32 interface Token2Wav uses (``protocols.Vocoder``): Token2Wav hands over
    the flow's float32 mel (and float32 caches), so inputs are cast to the vocoder's dtype and outputs back to
    float32. ``hift`` is the wrapped module (the graph backend captures it)."""

    def __init__(self, hift, dtype: torch.dtype):
        self.hift, self.dtype = hift, dtype

    def inference_with_source(self, mel, cache_source=None, zero_noise=False, **kwargs):
        if cache_source is not None:
            cache_source = cache_source.to(self.dtype)
        speech, source = self.hift.inference_with_source(mel.to(self.dtype), cache_source=cache_source,
                                                         zero_noise=zero_noise, **kwargs)
        return speech.float(), source.float()

    def inference(self, mel, *args, **kwargs):
        return self.hift.inference(mel.to(self.dtype), *args, **kwargs).float()


def hift_dtype(version: str, dtype: torch.dtype) -> torch.dtype:
    """The vocoder's dtype in a model run in ``dtype``: v3's causal HiFT streams with carried float32 phase state
    (and a float64 f0 predictor), so it stays float32."""
    return torch.float32 if version == "v3" else dtype


def cast_except_f0(hift, dtype: torch.dtype):
    """``hift`` (in place) in ``dtype`` except its f0 predictor, which keeps float32 weights. f0 feeds the sine
    source's phase, a running sum over the sentence: with the predictor's weights rounded to float16, f0 moved by up
    to 0.18 Hz and the float16 vocoder's waveform SNR against float32 on the same mel was 11.5 dB; with them kept
    float32 (and its convolutions free of TF32, ``model.hift_f0``), 35.8 dB (full-size v2 HiFT, voiced random
    weights, H200: docs/bench/h200-wave13). The predictor runs once per call."""
    predictor = hift.f0_predictor
    hift.f0_predictor = None  # out of the module tree while the rest is cast
    try:
        hift.to(dtype=dtype)
    finally:
        hift.f0_predictor = predictor.to(dtype=torch.float32)
    return hift


def cast_model(model, dtype: torch.dtype):
    """``model`` with its networks in ``dtype`` (in place) and v1/v2's vocoder behind ``HalfHift`` (see above)."""
    model.llm.to(dtype=dtype)
    model.flow.to(dtype=dtype)
    if hift_dtype(model.version, dtype) == torch.float32:
        hift = model.hift.to(dtype=torch.float32)
    else:
        hift = HalfHift(cast_except_f0(model.hift, dtype), dtype)
    return dataclasses.replace(model, dtype=dtype, hift=hift)


__all__ = ["HalfHift", "cast_except_f0", "cast_model"]
