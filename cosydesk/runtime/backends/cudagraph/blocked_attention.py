"""The flow encoder's relative-position attention in query blocks on long inputs: the same scores row by row, with
a working set bounded by the block instead of growing with the square of the length.

Why: ``RelPositionMultiHeadedAttention`` materialises its scores ([B, H, T, T] content, [B, H, T, 2T - 1] position
scores, their float32 softmax and masks): at v2's largest encoder bucket (704 tokens, 1,408 frames after the
upsampling) one up-block layer holds ~250 MB of them. Captured into the flow's graph pool, the largest bucket's
working set stays reserved for the session (H200: the long buckets took v2's torch reserve 1.46 -> 1.81 GB).
In blocks of ``query_block`` queries the scores of a block are exactly those rows of the full scores: the content
scores are the block's rows of q k^T, and the position scores of rows [i0, i1) read a contiguous slice of the
relative table (columns T - i1 ... T - i1 + K + rows - 2), skewed as the full matrix is; softmax is per row.
Inputs of at most ``threshold`` queries (every short-corpus bucket) run the module's own unblocked forward.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from cosydesk.model.attention import RelPositionMultiHeadedAttention, skew_relative_scores

QUERY_BLOCK = 288
THRESHOLD = 576  # queries: the fine encoder buckets' largest frame count (FLOW_MAX_FRAMES) stays unblocked


class QueryBlockedRelPositionAttention(RelPositionMultiHeadedAttention):
    """``RelPositionMultiHeadedAttention`` (same parameters) computed ``query_block`` queries at a time when the
    input has more than ``threshold`` queries and no key/value cache."""

    query_block = QUERY_BLOCK
    threshold = THRESHOLD

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None, pos_emb: torch.Tensor | None = None, *,
                pos_proj: torch.Tensor | None = None, kv_cache=None) -> torch.Tensor:
        n_queries = x.size(1)
        if kv_cache is not None or n_queries <= self.threshold:
            return super().forward(x, mask, pos_emb, pos_proj=pos_proj, kv_cache=kv_cache)
        q = self._heads(self.linear_q(x))
        k = self._heads(self.linear_k(x))
        v = self._heads(self.linear_v(x))
        n_keys = k.size(2)
        if pos_proj is None:
            pos_proj = self.project_positions(pos_emb)
        if pos_proj.size(2) != n_keys + n_queries - 1:
            raise ValueError(f"relative table of {pos_proj.size(2)} positions, expected {n_keys + n_queries - 1}")
        bias_u, bias_v = self.pos_bias_u.unsqueeze(1), self.pos_bias_v.unsqueeze(1)
        keys_t = k.transpose(-2, -1)
        contexts = []
        for start in range(0, n_queries, self.query_block):
            end = min(n_queries, start + self.query_block)
            rows = q[:, :, start:end]
            first = n_queries - end
            table = pos_proj[:, :, first:first + n_keys + (end - start) - 1]
            content = torch.matmul(rows + bias_u, keys_t)
            position = skew_relative_scores(torch.matmul(rows + bias_v, table.transpose(-2, -1)), n_keys)
            scores = (content + position) / math.sqrt(self.d_k)
            if mask is not None:
                block_mask = mask if mask.size(1) == 1 else mask[:, start:end]
                blocked = ~block_mask.unsqueeze(1)
                scores = scores.masked_fill(blocked, -float("inf"))
                weights = torch.softmax(scores.float(), dim=-1).masked_fill(blocked, 0.0).to(v.dtype)
            else:
                weights = torch.softmax(scores.float(), dim=-1).to(v.dtype)
            contexts.append(torch.matmul(weights, v))
        context = torch.cat(contexts, dim=2).transpose(1, 2).reshape(x.size(0), -1, self.h * self.d_k)
        return self.linear_out(context)


def use_query_blocks(module: nn.Module, query_block: int = QUERY_BLOCK, threshold: int = THRESHOLD) -> int:
    """Every relative-position attention under ``module`` computes in query blocks past ``threshold`` queries
    (its class swapped on this instance only; parameters untouched). Returns how many."""
    if query_block < 1:
        raise ValueError(f"query_block must be at least 1, not {query_block}")
    count = 0
    for sub in module.modules():
        if type(sub) is RelPositionMultiHeadedAttention:
            sub.__class__ = QueryBlockedRelPositionAttention
            sub.query_block, sub.threshold = int(query_block), int(threshold)
            count += 1
    return count
