"""v3 HiFT vocoder (official CausalHiFTGenerator): deterministic and streaming-friendly. Every conv looks only
into the past except ``conv_pre`` (4 frames of right context) and the f0 predictor's first conv (3 frames);
upsampling is nearest-repeat + left-padded conv. It takes no random draws at inference: it reads fixed tensors
regenerated from the official recipe (``hift_source.FixedSourceNoise``). ``window_forward`` vocodes a window of an
utterance as if the whole utterance had been vocoded (bounded-work streaming, ``hift_stream``).

Must not: sync with the host inside ``forward`` or touch any RNG; its f0 predictor runs in float64 like the
official one.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from cosydesk.model.hift_base import HiFTBase, hift_kwargs
from cosydesk.model.hift_f0 import CausalConvF0Predictor
from cosydesk.model.hift_layers import (LookAheadConv1d, PastPaddedConv1d, PastPaddedStridedConv1d,
                                        RepeatUpsampleConv1d, ResBlock)
from cosydesk.model.hift_source import (FixedSourceNoise, carried_phase, frame_cycles, frame_rate_harmonics,
                                        harmonics_from_phase, merge_harmonics)

__all__ = ["CausalHiFTGenerator"]


class CausalHiFTGenerator(HiFTBase):
    """v3 vocoder (official CausalHiFTGenerator); deterministic, streaming-friendly.

    With ``finalize=False`` the input's last frames are context only: the f0 predictor uses 3 and conv_pre
    4 of them, so T frames give (T - 7) * samples_per_frame - samples_per_frame samples, which equal the
    first samples of the finalize=True output.
    """

    causal = True

    def __init__(self, f0_predictor: nn.Module | None = None, conv_pre_look_right: int = 4, **kwargs):
        self.conv_pre_look_right = conv_pre_look_right
        in_channels = kwargs.get("in_channels", 80)
        predictor = f0_predictor or CausalConvF0Predictor(in_channels=in_channels)
        super().__init__(f0_predictor=predictor, **kwargs)
        cond_channels = predictor.classifier.in_features
        self.fixed_noise = FixedSourceNoise(cond_channels, self.num_harmonics)

    def _make_conv_pre(self, cin, cout):
        return LookAheadConv1d(cin, cout, self.conv_pre_look_right + 1)

    def _make_up(self, cin, cout, kernel, rate):
        return RepeatUpsampleConv1d(cin, cout, kernel, rate)

    def _make_source_down(self, cin, cout, factor):
        return PastPaddedConv1d(cin, cout, 1) if factor == 1 else PastPaddedStridedConv1d(cin, cout, factor * 2, factor)

    def _make_conv_post(self, cin, cout):
        return PastPaddedConv1d(cin, cout, 7)

    @classmethod
    def from_config(cls, node) -> "CausalHiFTGenerator":
        predictor = CausalConvF0Predictor.from_config(node["f0_predictor"])
        return cls(f0_predictor=predictor, conv_pre_look_right=int(node.args.get("conv_pre_look_right", 4)),
                   **hift_kwargs(node))

    def set_fixed_noise(self, rand_ini: torch.Tensor, sine_waves: torch.Tensor) -> None:
        """Use these tensors instead of the regenerated ones (official layout [1, 9] and [1, L, 9])."""
        self.fixed_noise.replace(rand_ini, sine_waves)

    def predict_f0(self, mel: torch.Tensor, finalize: bool = True) -> torch.Tensor:
        """f0 [B, T] (finalize) or [B, T - 3], computed and returned in float64 as the official code does."""
        return self.f0_predictor(mel, finalize=finalize, dtype=torch.float64)

    def make_source(self, f0: torch.Tensor) -> torch.Tensor:
        """f0 [B, T] -> merged excitation [B, 1, T * samples_per_frame] (float32)."""
        per_sample = self._upsample_f0(f0)
        rand_ini, noise = self.fixed_noise.get(per_sample.shape[1], per_sample.device)
        harmonics = frame_rate_harmonics(per_sample, rand_ini, noise, self.sampling_rate, self.samples_per_frame,
                                         self.num_harmonics, self.sine_amp, self.noise_std,
                                         self.voiced_threshold, phase_upsample_mode="nearest")
        return merge_harmonics(harmonics, self.m_source.l_linear)

    def decode(self, mel: torch.Tensor, source: torch.Tensor, finalize: bool = True) -> torch.Tensor:
        """mel [B, 80, T] (T includes 4 context frames unless finalize) + source -> waveform (float32)."""
        spectrum = self._source_spectrum(source)
        x = self.conv_pre(mel, finalize=finalize)
        if not finalize:
            spectrum = spectrum[:, :, : spectrum.shape[2] - self.frames_to_stft * self.conv_pre_look_right]
        wave = self._spectrum_to_wave(self._fused_upsampling(x, spectrum))
        if not finalize:
            wave = wave[:, : wave.shape[1] - self.frames_to_stft * self.hop_len]
        return wave.clamp(-self.audio_limit, self.audio_limit)

    def forward(self, mel: torch.Tensor, finalize: bool = True) -> tuple[torch.Tensor, torch.Tensor]:
        """(wave [B, L], source [B, 1, L_source]) in mel's dtype."""
        f0 = self.predict_f0(mel, finalize)
        # The official code rounds f0 to the mel's dtype here; we keep at least float32 for the source.
        f0 = f0.to(mel.dtype if mel.dtype == torch.float64 else torch.float32)
        source = self.make_source(f0)
        if not finalize:
            mel = mel[:, :, : mel.shape[2] - self.f0_predictor.look_ahead]
        wave = self.decode(mel, source, finalize)
        return wave.to(mel.dtype), source.to(mel.dtype)

    # --- windowed evaluation (bounded-work streaming, see hift_stream.CausalHiFTStream) ---
    def window_forward(self, mel: torch.Tensor, finalize: bool, first_frame: int, phase_in: torch.Tensor,
                       phase_valid_from: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Vocode a window of an utterance's mel as if the whole utterance had been vocoded.

        mel: frames [first_frame, first_frame + W) of the utterance (the window ends where the utterance
        currently ends; same ``finalize`` meaning as ``forward``). The harmonic phase is a running sum from
        sample 0 and the noise is read at absolute sample positions, so the caller passes the running phase
        ``phase_in`` [B, H] (float64 cycles) of every frame before window frame ``phase_valid_from``; the
        window's own increments before that frame (which lack left context) are ignored.
        Returns (wave [B, samples] for absolute samples from first_frame * samples_per_frame; only those
        beyond ``stream_left_context_frames()`` after phase_valid_from are exact, and
        running phase [B, H, F] float64 in cycles of window frames [0, F), exact from phase_valid_from on).
        """
        f0 = self.predict_f0(mel, finalize)
        f0 = f0.to(mel.dtype if mel.dtype == torch.float64 else torch.float32)
        per_sample = self._upsample_f0(f0)
        rand_ini, noise = self.fixed_noise.get(per_sample.shape[1], per_sample.device,
                                               start=first_frame * self.samples_per_frame)
        if first_frame > 0:  # the official initial offset sits on absolute sample 0 only
            rand_ini = torch.zeros_like(rand_ini)
        per_frame = frame_cycles(per_sample, rand_ini, self.sampling_rate, self.samples_per_frame,
                                 self.num_harmonics)
        phase = carried_phase(per_frame, phase_in, phase_valid_from)
        harmonics = harmonics_from_phase(per_sample, phase, noise, self.samples_per_frame, self.sine_amp,
                                         self.noise_std, self.voiced_threshold, phase_upsample_mode="nearest")
        source = merge_harmonics(harmonics, self.m_source.l_linear)
        if not finalize:
            mel = mel[:, :, : mel.shape[2] - self.f0_predictor.look_ahead]
        wave = self.decode(mel, source, finalize)
        return wave.to(mel.dtype), phase

    @torch.inference_mode()
    def inference_window(self, mel: torch.Tensor, finalize: bool, first_frame: int, phase_in: torch.Tensor,
                         phase_valid_from: int) -> tuple[torch.Tensor, torch.Tensor]:
        return self.window_forward(mel, finalize, first_frame, phase_in, phase_valid_from)

    def stream_left_context_frames(self) -> int:
        """Upper bound on how many mel frames before an output sample's own frame the decoder can see
        (f0 -> source -> source STFT -> every stage's convs and resblocks -> conv_post -> iSTFT), not
        counting the f0 predictor's own left context (``f0_predictor.left_context``).

        Derived from the layer sizes, so it holds for the tiny and the full-size vocoder alike; paths that
        run in parallel are added as if serial (a safe over-estimate of a few frames).
        """
        def conv_reach(conv: nn.Conv1d) -> int:
            return (conv.kernel_size[0] - 1) * conv.dilation[0]

        def block_reach(block: ResBlock) -> int:
            return sum(conv_reach(c1) + conv_reach(c2) for c1, c2 in zip(block.convs1, block.convs2))

        stft_frames = -(-self.n_fft // self.hop_len) + conv_reach(self.conv_post) + 1  # iSTFT, conv_post, pad
        for i, up in enumerate(self.ups):
            step = int(np.prod(self.upsample_rates[i + 1:]))  # STFT frames per step of stage i
            group = self.resblocks[i * self.num_kernels:(i + 1) * self.num_kernels]
            stage = max(block_reach(b) for b in group) + block_reach(self.source_resblocks[i])
            stage += up.kernel_size[0] + 1
            stft_frames += step * stage + self.source_downs[i].kernel_size[0]
        samples = stft_frames * self.hop_len + self.n_fft  # + the source STFT's own window
        return -(-samples // self.samples_per_frame) + 1

    @torch.inference_mode()
    def inference_with_source(self, mel: torch.Tensor, finalize: bool = True) -> tuple[torch.Tensor, torch.Tensor]:
        return self(mel, finalize)

    @torch.inference_mode()
    def inference(self, mel: torch.Tensor, finalize: bool = True) -> torch.Tensor:
        return self(mel, finalize)[0]
