"""v1 flow length regulator: stretch token-rate encoder features to mel-frame rate, then refine them with convs.

Facts (official behaviour, checked by the v1 flow fixtures): linear interpolation (``align_corners=False``) along
time, then ``len(sampling_ratios)`` x (Conv1d k3 -> GroupNorm(groups) -> Mish) and a final Conv1d k1.
At inference the prompt tokens and the generated tokens are stretched separately so the prompt/generated
boundary falls exactly on a mel frame; when more than 40 tokens are generated, the first and the last 20 tokens
(the v1 streaming overlap) are each stretched to int(20 / token_rate * 22050 / 256) = 34 frames on their own and
the middle part gets the rest, so overlapping streaming chunks get identical interpolated edge frames (the
refiner's GroupNorm(1) then normalises over the whole chunk, so refined frames are close, not identical).

Feature layout: inputs are ``[B, T_tokens, C]``, outputs ``[B, T_frames, C]`` like the official module. Lengths
are python ints (they decide tensor shapes; no device values are read here).
"""

from __future__ import annotations

from typing import Any, Sequence

import torch
import torch.nn.functional as F
from torch import nn

from cosydesk.model.norms import Fp32GroupNorm
from cosydesk.model.versions import V1

# The v1 streaming overlap (tokens) that gets its own interpolation at both ends of a long chunk.
EDGE_TOKENS = 20
MIN_TOKENS_FOR_EDGES = 2 * EDGE_TOKENS


def frames_for_tokens(n_tokens: int, token_rate: float, sample_rate: int = V1.sample_rate,
                      hop: int = V1.samples_per_mel_frame) -> int:
    """Mel frames for n tokens, truncated the official way: int(n / rate * sr / hop)."""
    return int(n_tokens / token_rate * sample_rate / hop)


def _stretch(x: torch.Tensor, frames: int) -> torch.Tensor:
    """[B, T, C] -> [B, C, frames] by linear interpolation."""
    return F.interpolate(x.transpose(1, 2), size=frames, mode="linear")


class InterpolateRegulator(nn.Module):
    """Interpolate to the target frame count, then a small conv refiner (keys ``model.0`` ... ``model.12``)."""

    def __init__(self, channels: int = 80, sampling_ratios: Sequence[int] = (1, 1, 1, 1), out_channels: int | None = None,
                 groups: int = 1):
        super().__init__()
        layers: list[nn.Module] = []
        for _ in sampling_ratios:
            layers += [nn.Conv1d(channels, channels, 3, 1, 1), Fp32GroupNorm(groups, channels), nn.Mish()]
        layers.append(nn.Conv1d(channels, out_channels or channels, 1, 1))
        self.model = nn.Sequential(*layers)

    @classmethod
    def from_config(cls, node: Any) -> "InterpolateRegulator":
        return cls(
            channels=node.get("channels", 80),
            sampling_ratios=node.get("sampling_ratios", (1, 1, 1, 1)),
            out_channels=node.get("out_channels"),
            groups=node.get("groups", 1),
        )

    def _refine(self, x_channels_first: torch.Tensor) -> torch.Tensor:
        """Conv refiner on [B, C, T]; returns [B, T, C] (GroupNorm statistics in float32: ``Fp32GroupNorm``)."""
        return self.model(x_channels_first).transpose(1, 2)

    def forward(self, x: torch.Tensor, ylens: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Batch form: x [B, T, C] stretched to max(ylens) frames, frames beyond each ylens zeroed."""
        frames = int(ylens.max())
        out = self._refine(_stretch(x, frames))
        valid = torch.arange(frames, device=x.device).unsqueeze(0) < ylens.to(x.device).unsqueeze(1)
        return out * valid.unsqueeze(-1).to(out.dtype), ylens

    def stretch_for_inference(
        self,
        x1: torch.Tensor,
        x2: torch.Tensor,
        mel_len1: int,
        mel_len2: int,
        input_frame_rate: float = V1.speech_tokens_per_second,
        sample_rate: int = V1.sample_rate,
        hop: int = V1.samples_per_mel_frame,
    ) -> torch.Tensor:
        """The interpolation stage of `inference`: [1, C, mel_len1 + mel_len2] before the conv refiner."""
        if x2.shape[1] > MIN_TOKENS_FOR_EDGES:
            edge_frames = frames_for_tokens(EDGE_TOKENS, input_frame_rate, sample_rate, hop)
            generated = torch.cat(
                [
                    _stretch(x2[:, :EDGE_TOKENS], edge_frames),
                    _stretch(x2[:, EDGE_TOKENS:-EDGE_TOKENS], mel_len2 - 2 * edge_frames),
                    _stretch(x2[:, -EDGE_TOKENS:], edge_frames),
                ],
                dim=2,
            )
        else:
            generated = _stretch(x2, mel_len2)
        if x1.shape[1] > 0:
            generated = torch.cat([_stretch(x1, mel_len1), generated], dim=2)
        return generated

    def inference(
        self,
        x1: torch.Tensor,
        x2: torch.Tensor,
        mel_len1: int,
        mel_len2: int,
        input_frame_rate: float = V1.speech_tokens_per_second,
        sample_rate: int = V1.sample_rate,
        hop: int = V1.samples_per_mel_frame,
    ) -> tuple[torch.Tensor, int]:
        """Prompt features x1 [1, T1, C] -> mel_len1 frames, generated x2 [1, T2, C] -> mel_len2 frames.

        Returns ([1, mel_len1 + mel_len2, C], mel_len1 + mel_len2).
        """
        stretched = self.stretch_for_inference(x1, x2, mel_len1, mel_len2, input_frame_rate, sample_rate, hop)
        return self._refine(stretched), mel_len1 + mel_len2
