"""Pitch (f0) predictors of the HiFT vocoders: mel frames [B, 80, T] -> f0 in Hz [B, T'].

Two variants, both "five weight-normed convs with ELU, then a per-frame linear head, then abs":

- ``ConvF0Predictor`` (v1/v2): kernel-3 convs with one frame of zero padding on each side; float32
  (or float64 for a float64 input) whatever the input's dtype (a float16 vocoder keeps this module's weights
  float32: ``runtime.backends.eager.cast_except_f0``). On a GPU its convs are matrix products: cuDNN rounds a
  float32 convolution's operands to TF32 (10 mantissa bits) by default, and that alone moved f0 by 0.12 Hz
  against float32 (full-size v2 HiFT, voiced, H200: 15.6 dB waveform SNR on the same mel, docs/bench/h200-wave13);
  torch's float32 products stay float32 unless a program opts out.
- ``CausalConvF0Predictor`` (v3): the first conv (kernel 4) looks 3 frames into the future, the other four
  (kernel 3) look only into the past. With ``finalize=False`` the last 3 input frames are right context
  only, so T input frames give T - 3 f0 values. The official vocoder evaluates this predictor in float64
  (its output feeds a phase accumulation that amplifies tiny differences); we do the same through a cast
  of the weights at call time and never change the module's own dtype.

Attribute names (``condnet.{0,2,4,6,8}``, ``classifier``) are those of the official state dict.
This module must not draw random numbers, hold caches, or synchronise with the host.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.utils import parametrize
from torch.nn.utils.parametrizations import weight_norm

NUM_CONVS = 5


def _conv_stack(in_channels: int, channels: int, first_kernel: int, padding: int) -> nn.Sequential:
    """conv, ELU, conv, ELU, ... (5 convs); ELUs sit at the odd indices like in the official Sequential."""
    layers: list[nn.Module] = []
    for index in range(NUM_CONVS):
        kernel = first_kernel if index == 0 else 3
        conv = nn.Conv1d(in_channels if index == 0 else channels, channels, kernel, padding=padding)
        layers += [weight_norm(conv), nn.ELU()]
    return nn.Sequential(*layers)


def weight_in_dtype(conv: nn.Conv1d | nn.Linear, dtype: torch.dtype) -> torch.Tensor:
    """The effective weight in ``dtype``; a weight norm is recomputed from its raw parts in that dtype.

    Recomputing (rather than casting the float32 product) gives exactly the weight the official code
    uses after moving the module to float64.
    """
    if parametrize.is_parametrized(conv, "weight"):
        parts = conv.parametrizations.weight
        gain, direction = parts.original0, parts.original1
        return torch._weight_norm(direction.to(dtype), gain.to(dtype), 0)
    return conv.weight.to(dtype)


def conv1d_as_product(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None, padding: int) -> torch.Tensor:
    """``F.conv1d(x, weight, bias, padding=padding)`` (stride 1, no dilation) as one matrix product over the
    unfolded input: [B, C, T] -> [B, O, T + 2 * padding - k + 1]."""
    windows = F.pad(x, (padding, padding)).unfold(2, weight.shape[-1], 1)  # [B, C, T', k]
    out = torch.einsum("bctk,ock->bot", windows, weight)
    return out if bias is None else out + bias[:, None]


def _conv1d_float32(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None, padding: int) -> torch.Tensor:
    """The convolution without TF32: on a GPU as a product (see the module docstring); on the host, where there is
    no TF32, the convolution itself (the official fixtures were computed with it)."""
    if x.is_cuda:
        return conv1d_as_product(x, weight, bias, padding)
    return F.conv1d(x, weight, bias, padding=padding)


def _linear_head(head: nn.Linear, hidden: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """|Linear(hidden^T)| per frame: [B, C, T] -> [B, T]."""
    bias = head.bias.to(dtype) if head.bias is not None else None
    return F.linear(hidden.transpose(1, 2), weight_in_dtype(head, dtype), bias).squeeze(-1).abs()


class ConvF0Predictor(nn.Module):
    """v1/v2 f0 predictor (official ConvRNNF0Predictor): non-causal, same length out as in."""

    def __init__(self, in_channels: int = 80, cond_channels: int = 512, num_class: int = 1):
        super().__init__()
        self.condnet = _conv_stack(in_channels, cond_channels, first_kernel=3, padding=1)
        self.classifier = nn.Linear(cond_channels, num_class)

    def convs(self) -> list[nn.Conv1d]:
        return [self.condnet[2 * index] for index in range(NUM_CONVS)]

    @classmethod
    def from_config(cls, node) -> "ConvF0Predictor":
        return cls(in_channels=int(node.get("in_channels", 80)), cond_channels=int(node.get("cond_channels", 512)),
                   num_class=int(node.get("num_class", 1)))

    def forward(self, mel: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        """f0 [B, T] in at least float32: a half-precision model still predicts pitch in float32, because
        f0 feeds a phase accumulation (the official code never runs this vocoder in half precision).
        ``mask`` [T] (1 for valid frames, 0 past them): every conv's output is zeroed past the valid frames, so
        they see the zero padding an unpadded mel of the valid length gets; the f0 there is not meaningful."""
        dtype = torch.promote_types(mel.dtype, torch.float32)
        x = mel.to(dtype)
        for conv in self.convs():
            bias = conv.bias.to(dtype) if conv.bias is not None else None
            x = F.elu(_conv1d_float32(x, weight_in_dtype(conv, dtype), bias, conv.padding[0]))
            if mask is not None:
                x = x * mask.to(dtype)
        return _linear_head(self.classifier, x, dtype)


class CausalConvF0Predictor(nn.Module):
    """v3 f0 predictor (official CausalConvRNNF0Predictor), evaluated in float64 (see module docstring)."""

    def __init__(self, in_channels: int = 80, cond_channels: int = 512, num_class: int = 1, look_ahead: int = 3):
        super().__init__()
        # The convs carry no padding of their own: forward pads on the side the causal layout asks for.
        self.condnet = _conv_stack(in_channels, cond_channels, first_kernel=look_ahead + 1, padding=0)
        self.classifier = nn.Linear(cond_channels, num_class)
        self.look_ahead = look_ahead

    @property
    def left_context(self) -> int:
        """How many past frames one f0 value depends on (the four past-only convs)."""
        return sum(conv.kernel_size[0] - 1 for conv in self.convs()[1:])

    @classmethod
    def from_config(cls, node) -> "CausalConvF0Predictor":
        return cls(in_channels=int(node.get("in_channels", 80)), cond_channels=int(node.get("cond_channels", 512)),
                   num_class=int(node.get("num_class", 1)))

    def convs(self) -> list[nn.Conv1d]:
        return [self.condnet[2 * index] for index in range(NUM_CONVS)]

    def forward(self, mel: torch.Tensor, finalize: bool = True, dtype: torch.dtype = torch.float64) -> torch.Tensor:
        """f0 [B, T] (finalize) or [B, T - look_ahead] (streaming chunk), computed and returned in ``dtype``."""
        x = mel.to(dtype)
        for index, conv in enumerate(self.convs()):
            kernel = conv.kernel_size[0]
            if index == 0:
                # Right look-ahead: zeros past the end of the utterance, real frames inside a stream.
                pad = (0, kernel - 1 if finalize else 0)
            else:
                pad = (kernel - 1, 0)
            x = F.pad(x, pad)
            bias = conv.bias.to(dtype) if conv.bias is not None else None
            x = F.elu(F.conv1d(x, weight_in_dtype(conv, dtype), bias))
        return _linear_head(self.classifier, x, dtype)
