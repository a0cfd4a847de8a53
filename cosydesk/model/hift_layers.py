"""HiFT building blocks: the Snake activation, the padded and look-ahead convs, and the residual block.

The conv subclasses keep ``nn.Conv1d``'s parameter names (so ``checkpoint.load_strict`` and ``weight_norm`` work
on them unchanged) and differ only in how they pad: past-only (v3's causal layers) or k-1 frames of look-ahead
(v3's ``conv_pre``). ``ResBlock`` builds either the causal (v3) or the centred (v1/v2) variant.

Must not: sync with the host, branch on tensor values, or touch any RNG (these layers run inside CUDA graphs).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.utils.parametrizations import weight_norm

__all__ = ["Snake", "PastPaddedConv1d", "LookAheadConv1d", "RepeatUpsampleConv1d", "PastPaddedStridedConv1d",
           "ResBlock"]


class Snake(nn.Module):
    """x + sin^2(alpha x) / alpha, per channel (linear-scale alpha, as in the official vocoder)."""

    def __init__(self, channels: int):
        super().__init__()
        self.alpha = nn.Parameter(torch.ones(channels))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        alpha = self.alpha.view(1, -1, 1)
        return x + (1.0 / (alpha + 1e-9)) * torch.sin(x * alpha).pow(2)


class PastPaddedConv1d(nn.Conv1d):
    """Stride-1 conv that sees only the present and the past: (k-1)*dilation zeros on the left."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int, dilation: int = 1):
        super().__init__(in_channels, out_channels, kernel_size, dilation=dilation)
        self.left = (kernel_size - 1) * dilation

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return super().forward(F.pad(x, (self.left, 0)))


class LookAheadConv1d(nn.Conv1d):
    """Stride-1 conv whose window reaches k-1 frames into the future.

    finalize=True: the future past the end is zeros (output length = input length).
    finalize=False: the last k-1 input frames are real future context only (output is k-1 frames shorter).
    """

    def forward(self, x: torch.Tensor, finalize: bool = True) -> torch.Tensor:
        return super().forward(F.pad(x, (0, self.kernel_size[0] - 1)) if finalize else x)


class RepeatUpsampleConv1d(nn.Conv1d):
    """Upsample by repeating each frame ``stride`` times, then a past-only conv (official CausalConv1dUpsample)."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int, stride: int):
        super().__init__(in_channels, out_channels, kernel_size)
        self.factor = stride

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = torch.repeat_interleave(x, self.factor, dim=2)
        return super().forward(F.pad(x, (self.kernel_size[0] - 1, 0)))


class PastPaddedStridedConv1d(nn.Conv1d):
    """Strided downsampling conv with stride-1 zeros on the left (official CausalConv1dDownSample)."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int, stride: int):
        super().__init__(in_channels, out_channels, kernel_size, stride=stride)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return super().forward(F.pad(x, (self.stride[0] - 1, 0)))


class ResBlock(nn.Module):
    """Three (Snake, dilated conv, Snake, conv) residual units; causal or centred padding."""

    def __init__(self, channels: int, kernel_size: int, dilations: list[int], causal: bool):
        super().__init__()

        def conv(dilation: int) -> nn.Conv1d:
            if causal:
                return weight_norm(PastPaddedConv1d(channels, channels, kernel_size, dilation=dilation))
            pad = (kernel_size - 1) * dilation // 2
            return weight_norm(nn.Conv1d(channels, channels, kernel_size, dilation=dilation, padding=pad))

        self.convs1 = nn.ModuleList(conv(d) for d in dilations)
        self.convs2 = nn.ModuleList(conv(1) for _ in dilations)
        self.activations1 = nn.ModuleList(Snake(channels) for _ in dilations)
        self.activations2 = nn.ModuleList(Snake(channels) for _ in dilations)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for act1, conv1, act2, conv2 in zip(self.activations1, self.convs1, self.activations2, self.convs2):
            x = x + conv2(act2(conv1(act1(x))))
        return x
