"""Multi-head self-attention with Transformer-XL relative positions (``rel_selfattn`` in the yamls).

score(i, j) = [(q_i + u) . k_j + (q_i + v) . W_pos p(i - j)] / sqrt(d_k), where p is the ESPnet
relative table (see positional.py), u/v are the learned ``pos_bias_u``/``pos_bias_v`` per head and
W_pos is ``linear_pos`` (no bias). Masked keys get -inf before the softmax and exactly 0 after it.

Incremental decoding: the caller may pass a key/value cache object (``update(k, v) -> (k_all, v_all)``)
so that new queries attend to everything seen before; the relative table must then cover the full
key range (see ``EspnetRelPositionalEncoding.relative``). Pure math: no dropout, no host syncs.
"""

from __future__ import annotations

import math
from typing import Protocol

import torch
from torch import nn


class KeyValueStore(Protocol):
    def update(self, keys: torch.Tensor, values: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Append [B,H,T,d_k] keys/values; return all keys/values so far [B,H,K,d_k]."""
        ...


def skew_relative_scores(scores: torch.Tensor, n_keys: int) -> torch.Tensor:
    """Turn scores against relative positions into scores against keys.

    ``scores`` is [B,H,Tq,P] with P = n_keys + Tq - 1 columns for relative positions n_keys-1 down to
    -(Tq-1); query i is absolute position n_keys - Tq + i. Key j then has relative position
    n_keys - Tq + i - j, found in column (Tq - 1 - i) + j. That is a strided view of the contiguous
    tensor: start at column Tq-1 and step P-1 elements per query row.
    """
    batch, heads, n_queries, n_cols = scores.shape
    if n_queries == 1:
        return scores[..., :n_keys]
    scores = scores.contiguous()
    return scores.as_strided(
        (batch, heads, n_queries, n_keys),
        (heads * n_queries * n_cols, n_queries * n_cols, n_cols - 1, 1),
        scores.storage_offset() + n_queries - 1,
    )


class RelPositionMultiHeadedAttention(nn.Module):
    """Key names as the official module: linear_q/k/v/out, linear_pos, pos_bias_u, pos_bias_v."""

    def __init__(self, n_head: int, n_feat: int, key_bias: bool = True):
        super().__init__()
        if n_feat % n_head:
            raise ValueError(f"attention width {n_feat} is not a multiple of {n_head} heads")
        self.h = int(n_head)
        self.d_k = n_feat // n_head
        self.linear_q = nn.Linear(n_feat, n_feat)
        self.linear_k = nn.Linear(n_feat, n_feat, bias=key_bias)
        self.linear_v = nn.Linear(n_feat, n_feat)
        self.linear_out = nn.Linear(n_feat, n_feat)
        self.linear_pos = nn.Linear(n_feat, n_feat, bias=False)
        self.pos_bias_u = nn.Parameter(torch.empty(self.h, self.d_k))
        self.pos_bias_v = nn.Parameter(torch.empty(self.h, self.d_k))
        nn.init.xavier_uniform_(self.pos_bias_u)
        nn.init.xavier_uniform_(self.pos_bias_v)

    def _heads(self, x: torch.Tensor) -> torch.Tensor:
        """[B,T,H*d_k] -> [B,H,T,d_k]."""
        return x.view(x.size(0), x.size(1), self.h, self.d_k).transpose(1, 2)

    def project_positions(self, pos_emb: torch.Tensor) -> torch.Tensor:
        """[1,P,D] relative table -> [1,H,P,d_k] (linear_pos, split into heads)."""
        return self._heads(self.linear_pos(pos_emb))

    def forward(
        self,
        x: torch.Tensor,
        mask: torch.Tensor | None,
        pos_emb: torch.Tensor | None = None,
        *,
        pos_proj: torch.Tensor | None = None,
        kv_cache: KeyValueStore | None = None,
    ) -> torch.Tensor:
        """x [B,Tq,D]; mask bool [B,Tq or 1,K] (True = may attend) or None.

        Give either ``pos_emb`` [1,K+Tq-1,D] (raw relative table) or ``pos_proj`` [1,H,K+Tq-1,d_k]
        (already through linear_pos). Returns [B,Tq,D].
        """
        q = self._heads(self.linear_q(x))
        k = self._heads(self.linear_k(x))
        v = self._heads(self.linear_v(x))
        if kv_cache is not None:
            k, v = kv_cache.update(k, v)
        n_keys = k.size(2)
        if pos_proj is None:
            pos_proj = self.project_positions(pos_emb)

        bias_u = self.pos_bias_u.unsqueeze(1)  # [H,1,d_k] broadcasts over time
        bias_v = self.pos_bias_v.unsqueeze(1)
        content = torch.matmul(q + bias_u, k.transpose(-2, -1))
        position = skew_relative_scores(torch.matmul(q + bias_v, pos_proj.transpose(-2, -1)), n_keys)
        scores = (content + position) / math.sqrt(self.d_k)

        if mask is not None:
            blocked = ~mask.unsqueeze(1)  # [B,1,Tq|1,K]
            scores = scores.masked_fill(blocked, -float("inf"))
            weights = torch.softmax(scores.float(), dim=-1).masked_fill(blocked, 0.0).to(v.dtype)
        else:
            weights = torch.softmax(scores.float(), dim=-1).to(v.dtype)
        context = torch.matmul(weights, v).transpose(1, 2).reshape(x.size(0), -1, self.h * self.d_k)
        return self.linear_out(context)
