"""ESPnet-style relative positional encoding (``pos_enc_layer_type: rel_pos_espnet``).

What it is for: the conformer/transformer encoders scale their input by sqrt(d_model) and hand the
attention layers a table of sinusoidal vectors indexed by *relative* position (query - key). The table
holds positive and negative positions, largest first: row r of a table built for ``n`` positions is the
encoding of position ``n - 1 - r``; the same sin/cos layout as the absolute encoding
(even channels sin, odd channels cos, frequency 10000^(-2i/d)).

What it must not do: hold weights (the official module has none, so it adds no state-dict keys) or
apply dropout (inference only).
"""

from __future__ import annotations

import math

import torch
from torch import nn


def relative_position_table(n_positions: int, d_model: int) -> torch.Tensor:
    """Float32 table [2n-1, d_model]; row r encodes relative position (n-1) - r, i.e. n-1 down to -(n-1)."""
    positions = torch.arange(n_positions - 1, -n_positions, -1, dtype=torch.float32).unsqueeze(1)
    inv_freq = torch.exp(torch.arange(0, d_model, 2, dtype=torch.float32) * -(math.log(10000.0) / d_model))
    angles = positions * inv_freq
    table = torch.zeros(2 * n_positions - 1, d_model, dtype=torch.float32)
    table[:, 0::2] = torch.sin(angles)
    table[:, 1::2] = torch.cos(angles)
    return table


class EspnetRelPositionalEncoding(nn.Module):
    """Input scaling by sqrt(d_model) plus the relative-position table the attention layers need."""

    def __init__(self, d_model: int, initial_positions: int = 512):
        super().__init__()
        self.d_model = int(d_model)
        self.xscale = math.sqrt(self.d_model)
        # A plain attribute, not a buffer: the official module stores nothing either. Grown on demand.
        self._master = relative_position_table(initial_positions, self.d_model)
        self._table = self._master  # copy on the device/dtype last asked for
        self._half = initial_positions

    def scale(self, x: torch.Tensor) -> torch.Tensor:
        return x * self.xscale

    def _ensure(self, n_positions: int, device: torch.device, dtype: torch.dtype) -> None:
        if n_positions > self._half:
            half = max(n_positions, 2 * self._half)
            self._master = relative_position_table(half, self.d_model)
            self._table = self._master
            self._half = half
        if self._table.device != device or self._table.dtype != dtype:
            # Always convert from the float32 master so precision is never lost by round trips.
            self._table = self._master.to(device=device, dtype=dtype)

    def relative(self, n_keys: int, n_queries: int, device: torch.device, dtype: torch.dtype) -> torch.Tensor:
        """[1, n_keys + n_queries - 1, d]: positions n_keys-1 down to -(n_queries-1).

        That is every value of (query position - key position) when the queries are the last
        ``n_queries`` of ``n_keys`` positions. With n_queries == n_keys this is the official
        ``2T-1`` slice used for a full (non-cached) forward.
        """
        self._ensure(max(n_keys, n_queries), device, dtype)
        centre = self._half - 1  # row of position 0
        start = centre - (n_keys - 1)
        return self._table[start : centre + n_queries].unsqueeze(0)

    def non_negative(self, n_positions: int, device: torch.device, dtype: torch.dtype) -> torch.Tensor:
        """[1, n, d]: positions 0, 1, ..., n-1 in ascending order (used to cache projections for decoding)."""
        self._ensure(n_positions, device, dtype)
        centre = self._half - 1
        return self._table[centre - n_positions + 1 : centre + 1].flip(0).unsqueeze(0)
