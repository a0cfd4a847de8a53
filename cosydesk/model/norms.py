"""LayerNorm / GroupNorm with float32 statistics whatever the input dtype (same state-dict keys as torch's).

A float16 mean/variance over hundreds of frames or channels can overflow or lose the small differences that
matter; every norm of the model of record goes through these two classes, so half-precision backends stay
finite without their own special cases.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


def _float(parameter: torch.Tensor | None) -> torch.Tensor | None:
    return None if parameter is None else parameter.float()


def fp32_layer_norm(x: torch.Tensor, normalized_shape, weight: torch.Tensor | None, bias: torch.Tensor | None,
                    eps: float) -> torch.Tensor:
    """F.layer_norm with statistics and affine in float32, result in x's dtype."""
    return F.layer_norm(x.float(), normalized_shape, _float(weight), _float(bias), eps).to(x.dtype)


class Fp32LayerNorm(nn.LayerNorm):
    """nn.LayerNorm whose statistics (and affine) are computed in float32; returns the input's dtype."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return fp32_layer_norm(x, self.normalized_shape, self.weight, self.bias, self.eps)


class Fp32GroupNorm(nn.GroupNorm):
    """nn.GroupNorm whose statistics (and affine) are computed in float32; returns the input's dtype."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.group_norm(x.float(), self.num_groups, _float(self.weight), _float(self.bias), self.eps).to(x.dtype)
