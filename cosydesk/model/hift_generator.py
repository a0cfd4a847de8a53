"""v1 / v2 HiFT vocoder (official HiFTGenerator): 22.05 kHz with 256 samples per frame (v1) or 24 kHz with 480
(v2); transposed-conv upsampling and symmetric convs. Its neural source takes random draws, which the caller
controls (``NsfDraws``: zeros, a replay, or fresh torch RNG draws); ``forward`` itself draws nothing.

Must not: touch the global RNG except for the documented fresh draws (``random_draws``, ``redraw``), sync with
the host inside ``forward``, or mutate its own dtype.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from cosydesk.model.hift_base import HiFTBase, hift_kwargs
from cosydesk.model.hift_f0 import ConvF0Predictor
from cosydesk.model.hift_source import (NsfDraws, frame_rate_harmonics, merge_harmonics, sample_rate_harmonics,
                                        with_cached_start)

__all__ = ["HiFTGenerator"]


class HiFTGenerator(HiFTBase):
    """v1 / v2 vocoder (official HiFTGenerator). 22050 Hz selects the sample-rate-phase source (v1)."""

    def __init__(self, f0_predictor: nn.Module | None = None, **kwargs):
        in_channels = kwargs.get("in_channels", 80)
        super().__init__(f0_predictor=f0_predictor or ConvF0Predictor(in_channels=in_channels), **kwargs)
        self.sample_rate_phase = self.sampling_rate == 22050

    def _make_conv_pre(self, cin, cout):
        return nn.Conv1d(cin, cout, 7, padding=3)

    def _make_up(self, cin, cout, kernel, rate):
        return nn.ConvTranspose1d(cin, cout, kernel, rate, padding=(kernel - rate) // 2)

    def _make_source_down(self, cin, cout, factor):
        if factor == 1:
            return nn.Conv1d(cin, cout, 1)
        return nn.Conv1d(cin, cout, factor * 2, factor, padding=factor // 2)

    def _make_conv_post(self, cin, cout):
        return nn.Conv1d(cin, cout, 7, padding=3)

    @classmethod
    def from_config(cls, node) -> "HiFTGenerator":
        predictor = ConvF0Predictor.from_config(node["f0_predictor"])
        return cls(f0_predictor=predictor, **hift_kwargs(node))

    # --- randomness of the source ---
    def draw_shapes(self, num_frames: int, batch: int = 1) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """Shapes of (initial_phase, noise) for a mel of ``num_frames`` frames (official layouts)."""
        samples, h = num_frames * self.samples_per_frame, self.num_harmonics
        if self.sample_rate_phase:
            return (batch, h, 1), (batch, h, samples)
        return (batch, h), (batch, samples, h)

    def zero_draws(self, mel: torch.Tensor) -> NsfDraws:
        phase_shape, noise_shape = self.draw_shapes(mel.shape[2], mel.shape[0])
        zeros = lambda shape: torch.zeros(shape, device=mel.device)  # noqa: E731
        return NsfDraws(zeros(phase_shape), zeros(noise_shape))

    def random_draws(self, mel: torch.Tensor, generator: torch.Generator | None = None) -> NsfDraws:
        """Fresh draws in the official order and kinds (uniform phases, Gaussian noise, then the Gaussian
        of the discarded noise branch, drawn only so a seeded run consumes the RNG exactly as the official
        code does)."""
        device = generator.device if generator is not None else mel.device
        phase_shape, noise_shape = self.draw_shapes(mel.shape[2], mel.shape[0])
        phase = torch.rand(phase_shape, generator=generator, device=device)
        if self.sample_rate_phase:  # Uniform(-pi, pi): low + u * (high - low) in float32
            low = torch.tensor(-math.pi, dtype=torch.float32)
            phase = low.to(device) + phase * (torch.tensor(math.pi, dtype=torch.float32) - low).to(device)
        if self.sample_rate_phase:
            noise = torch.randn(noise_shape, generator=generator, device=device)
        else:
            # Officially randn_like() of a [B, L, H] view of a [B, H, L] buffer: the draws fill the buffer
            # in memory order (and a non-contiguous fill takes torch's element-wise sampling path).
            b, samples, h = noise_shape
            noise = torch.empty((b, h, samples), device=device).transpose(1, 2).normal_(generator=generator)
        samples = mel.shape[2] * self.samples_per_frame
        torch.randn((mel.shape[0], samples, 1), generator=generator, device=device)
        return NsfDraws(phase.to(mel.device), noise.to(mel.device))

    def redraw(self, draws: NsfDraws, generator: torch.Generator | None = None) -> None:
        """Fresh draws of the same kinds written into ``draws`` in place (for a captured graph's static draws):
        uniform phases (v1 radians in [-pi, pi), v2 cycles in [0, 1)), standard normal noise, from ``generator``
        (default: torch's global RNG). Not the official RNG order, which ``random_draws`` keeps for seeded eager runs."""
        if generator is not None and generator.device != draws.noise.device:  # e.g. a CPU generator, CUDA draws
            fresh = NsfDraws(torch.empty_like(draws.initial_phase, device=generator.device),
                             torch.empty_like(draws.noise, device=generator.device))
            self.redraw(fresh, generator)
            draws.initial_phase.copy_(fresh.initial_phase)
            draws.noise.copy_(fresh.noise)
            return
        if self.sample_rate_phase:
            draws.initial_phase.uniform_(-math.pi, math.pi, generator=generator)
        else:
            draws.initial_phase.uniform_(generator=generator)
        draws.noise.normal_(generator=generator)

    # --- math ---
    def predict_f0(self, mel: torch.Tensor) -> torch.Tensor:
        """f0 in Hz per mel frame [B, T] (float32, or float64 for a float64 mel)."""
        return self.f0_predictor(mel)

    def make_source(self, f0: torch.Tensor, draws: NsfDraws) -> torch.Tensor:
        """f0 [B, T] -> merged excitation [B, 1, T * samples_per_frame] (float32)."""
        per_sample = self._upsample_f0(f0)
        if self.sample_rate_phase:
            harmonics = sample_rate_harmonics(per_sample, draws, self.sampling_rate, self.num_harmonics,
                                              self.sine_amp, self.noise_std, self.voiced_threshold)
        else:
            harmonics = frame_rate_harmonics(per_sample, draws.initial_phase, draws.noise, self.sampling_rate,
                                             self.samples_per_frame, self.num_harmonics, self.sine_amp,
                                             self.noise_std, self.voiced_threshold, phase_upsample_mode="linear")
        return merge_harmonics(harmonics, self.m_source.l_linear)

    def decode(self, mel: torch.Tensor, source: torch.Tensor) -> torch.Tensor:
        """mel [B, 80, T] + source [B, 1, L] -> waveform [B, L] (float32)."""
        x = self.conv_pre(mel)
        head = self._fused_upsampling(x, self._source_spectrum(source))
        return self._spectrum_to_wave(head).clamp(-self.audio_limit, self.audio_limit)

    def forward(self, mel: torch.Tensor, draws: NsfDraws, cache_source: torch.Tensor | None = None
                ) -> tuple[torch.Tensor, torch.Tensor]:
        """(wave [B, L], source [B, 1, L]) in mel's dtype. ``cache_source`` [B, 1, N] (N <= L) replaces the
        first N source samples (official streaming: the tail of the previous call's source)."""
        source = with_cached_start(self.make_source(self.predict_f0(mel), draws), cache_source)
        wave = self.decode(mel, source)
        return wave.to(mel.dtype), source.to(mel.dtype)

    def _draws_for(self, mel, zero_noise, draws, generator) -> NsfDraws:
        if draws is not None:
            return draws
        return self.zero_draws(mel) if zero_noise else self.random_draws(mel, generator)

    @torch.inference_mode()
    def inference_with_source(self, mel: torch.Tensor, cache_source: torch.Tensor | None = None,
                              zero_noise: bool = False, *, draws: NsfDraws | None = None,
                              generator: torch.Generator | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """Vocode with the source returned too (for streaming). Randomness: ``draws`` if given (replay),
        else zeros if ``zero_noise``, else fresh draws from ``generator`` (default: torch's global RNG)."""
        return self(mel, self._draws_for(mel, zero_noise, draws, generator), cache_source)

    @torch.inference_mode()
    def inference(self, mel: torch.Tensor, zero_noise: bool = False, *, draws: NsfDraws | None = None,
                  generator: torch.Generator | None = None) -> torch.Tensor:
        """mel [B, 80, T] -> waveform [B, T * samples_per_frame]."""
        return self.inference_with_source(mel, None, zero_noise, draws=draws, generator=generator)[0]
