"""v3's DiT estimator with its per-step inputs prepared outside the captured step: one CUDA graph per frame bucket
serves both attention modes.

``GraphedSampler`` treats an estimator with ``time_projections`` / ``attention_mask`` as *prepared* (v2's row
estimator is one): the time embedding of each of the 10 solver times is computed once at load (a table), the
attention mask once per request into a per-bucket buffer, and the captured step reads both. For the DiT that moves
the timestep MLP and the mask construction out of every step, and since the only difference between a streaming
(chunk-causal) and a full-attention call is then the mask buffer's content, the step is captured once per bucket
instead of once per bucket and mode (v3: 60 -> 30 flow graphs; instantiated graphs hold device memory outside
torch's allocator). Same math as ``DiT.forward``: the same time embedding, the same ``attention_masks``.
"""

from __future__ import annotations

import torch
from torch import nn

from cosydesk.model.dit import DiT, attention_masks


class PreparedDiT(nn.Module):
    """``DiT`` (held, not copied) taking ``times`` (its time embedding [B, dim]) and ``allowed`` (the attention mask
    [B, T, T] bool, ``attention_mask``) precomputed; without them it is the plain ``DiT.forward``."""

    def __init__(self, dit: DiT):
        super().__init__()
        self.dit = dit

    def __getattr__(self, name: str):
        try:
            return super().__getattr__(name)
        except AttributeError:
            return getattr(self._modules["dit"], name)

    def time_projections(self, t: torch.Tensor) -> torch.Tensor:
        """t [B] -> the time embedding [B, dim] the blocks' modulations are computed from."""
        return self.dit.embed_time(t, t.shape[0])

    def attention_mask(self, mask: torch.Tensor, streaming: bool) -> torch.Tensor:
        """Padding mask [B, 1, T] -> allowed [B, T, T] bool (query, key) as ``DiT.masks`` builds it."""
        allowed, _ = attention_masks(mask, self.dit.static_chunk_size if streaming else 0)
        return allowed[:, 0]

    def forward(self, x: torch.Tensor, mask: torch.Tensor, mu: torch.Tensor, t: torch.Tensor, spks: torch.Tensor,
                cond: torch.Tensor, streaming: bool = False, times: torch.Tensor | None = None,
                allowed: torch.Tensor | None = None) -> torch.Tensor:
        dit = self.dit
        if times is None or allowed is None:
            return dit(x, mask, mu, t, spks, cond, streaming=streaming)
        h = dit.embed_input(x, cond, mu, spks)
        full = allowed[:, None]  # [B, 1, T, T]
        query_valid = full[:, 0, -1, :, None]  # the last query row, where DiT reads the output mask
        rope = dit.rotary_embed(h.shape[1], h.device)
        for block in dit.transformer_blocks:
            h = block(h, times, full, query_valid, rope)
        return dit.proj_out(dit.norm_out(h, times)).transpose(1, 2)


def use_prepared_dit(sampler) -> bool:
    """Wrap ``sampler.estimator`` in ``PreparedDiT`` when it is the plain ``DiT``; returns whether it did."""
    if type(sampler.estimator) is not DiT:
        return False
    sampler.estimator = PreparedDiT(sampler.estimator)
    return True
