"""The v1/v2 vocoder on a mel padded to a bucket, exact on the valid frames: a call of free length (v2's final
chunk of a sentence; every v1 call) can then replay a captured graph instead
of launching ~640 kernels from Python.

Why: HiFT v1/v2 is not causal (symmetric convolutions, centred STFT and iSTFT), so zeros appended to a mel change
the last samples. They do not if every stage sees at the valid end what an unpadded call of the valid length sees:
- every conv's output is zeroed past the valid length (a forward hook on each conv of the vocoder), so the next
  conv reads zeros there, as its own zero padding would give; Snake(0) and leaky_relu(0) are 0, so activations
  keep the zeros, and a transposed conv gets no contribution from frames past the end;
- the f0 predictor masks its convs the same way and f0 is 0 past the end: the per-frame phase then stays flat
  there, which is what the unpadded linear upsampling's clamp at the last frame gives;
- the source gets the STFT's reflection of its *valid* end written after it (``torch.stft(center=True)`` pads
  by reflecting the end of the tensor, here the end of the bucket), and its spectrum frames past the end are 0;
- the iSTFT counts only valid frames in its window envelope (``overlap_add_istft(frame_mask=...)``).
Lengths at every stage are ``scale * bucket (+ 1)`` for ``scale * frames (+ 1)`` valid ones, so one rule gives
every mask, from the valid frame count held in a device scalar: one captured graph per bucket serves every
length below it (the bucket must exceed the length by at least one frame, for the written reflection).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import torch
from torch import nn

from cosydesk.model.hift import HiFTGenerator, with_cached_start
from cosydesk.model.hift_source import NsfDraws


class ValidFrames:
    """The valid mel frames of a call padded to ``bucket`` frames (a device scalar, set before each replay) and the
    masks derived from it, made once per length per call (a captured graph recomputes them on replay)."""

    def __init__(self, bucket: int, device: torch.device):
        if bucket < 2:
            raise ValueError(f"a padded bucket needs at least 2 frames (one of room), got {bucket}")
        self.bucket = bucket
        # starts at the longest length the bucket serves: a capture's warm-up runs before any request sets it,
        # and 0 valid frames would index before the source's start when its end is reflected
        self.frames = torch.full((), bucket - 1, dtype=torch.long, device=device)
        self._masks: dict[tuple[int, torch.dtype], torch.Tensor] = {}

    def reset(self) -> None:
        self._masks.clear()

    def mask(self, length: int, dtype: torch.dtype = torch.float32) -> torch.Tensor:
        """[length]: 1 where a tensor of ``length`` = scale * bucket + extra positions is valid."""
        key = (length, dtype)
        if key not in self._masks:
            scale = length // self.bucket
            valid = self.frames * scale + (length - scale * self.bucket)
            self._masks[key] = (torch.arange(length, device=self.frames.device) < valid).to(dtype)
        return self._masks[key]


@contextmanager
def masked_convs(hift: HiFTGenerator, valid: ValidFrames) -> Iterator[None]:
    """While inside, every conv of ``hift``'s decoder zeroes its output past the valid length."""
    def hook(module, inputs, output):
        return output * valid.mask(output.shape[-1], output.dtype)

    handles = [module.register_forward_hook(hook) for name, module in hift.named_modules()
               if isinstance(module, (nn.Conv1d, nn.ConvTranspose1d)) and not name.startswith("f0_predictor")]
    try:
        yield
    finally:
        for handle in handles:
            handle.remove()


def reflect_valid_end(source: torch.Tensor, valid: ValidFrames, samples_per_frame: int, width: int) -> torch.Tensor:
    """``source`` [B, 1, L] with the ``width`` samples after its valid end set to the reflection of that end
    (x[n + i] = x[n - 2 - i]), as ``torch.stft(center=True)`` would pad an unpadded source."""
    end = valid.frames * samples_per_frame
    steps = torch.arange(width, device=source.device)
    return source.index_copy(2, end + steps, source.index_select(2, end - 2 - steps))


def padded_forward(hift: HiFTGenerator, mel: torch.Tensor, valid: ValidFrames, draws: NsfDraws,
                   cache_source: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """``hift.forward`` on ``mel`` [1, 80, bucket] whose frames past ``valid.frames`` are zero: (wave, source) of
    the bucket's length, whose first ``valid.frames * samples_per_frame`` samples are those of ``hift.forward`` on
    the valid frames alone (with ``draws`` cut to them), and zero after. Same steps as ``HiFTGenerator.forward``
    and ``decode``, with the masks of the module docstring."""
    if mel.shape[2] != valid.bucket:
        raise ValueError(f"mel has {mel.shape[2]} frames, the bucket {valid.bucket}")
    valid.reset()
    frame_mask = valid.mask(mel.shape[2])
    f0 = hift.f0_predictor(mel, mask=frame_mask) * frame_mask
    source = with_cached_start(hift.make_source(f0, draws), cache_source)
    source = reflect_valid_end(source, valid, hift.samples_per_frame, hift.n_fft // 2)
    spectrum = hift._source_spectrum(source)
    spectrum = spectrum * valid.mask(spectrum.shape[2])
    with masked_convs(hift, valid):
        head = hift._fused_upsampling(hift.conv_pre(mel), spectrum)
    wave = hift._spectrum_to_wave(head, valid.mask(head.shape[2])).clamp(-hift.audio_limit, hift.audio_limit)
    wave = wave * valid.mask(wave.shape[1])
    source = source * valid.mask(source.shape[2])
    return wave.to(mel.dtype), source.to(mel.dtype)
