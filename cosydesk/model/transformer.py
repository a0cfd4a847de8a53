"""wenet/ESPnet-style encoders used by CosyVoice v1/v2 (and the look-ahead conv shared with v3).

Classes (state-dict names follow the official files, see the fixtures' keys.txt):

- ``ConformerEncoder``  - v1 LLM text encoder and v1 flow encoder: ``embed`` (Linear+LayerNorm, x sqrt(d),
  rel-pos) -> ``encoders.N`` (pre-norm self-attention + swish feed-forward; no macaron, no conv module)
  -> ``after_norm``.
- ``TransformerEncoder`` - the v1 LLM body: ``embed`` of type ``linear_legacy`` (Linear+LayerNorm+ReLU),
  ``encoders.N`` with ``norm1``/``norm2`` and a ReLU feed-forward, ``after_norm``; supports incremental
  decoding with a key/value cache (``new_cache`` + ``forward_incremental``).
- ``UpsampleConformerEncoder`` (v2 flow encoder) and ``PreLookaheadLayer`` (also v3) live in
  cosydesk.model.upsample_encoder; masks, layers and the yaml reading in cosydesk.model.encoder_layers. Both are
  re-exported here, so ``transformer.<class name>`` resolves every encoder class a yaml names.

Inference only: no dropout modules (they hold no weights), no training-time dynamic chunks. Pure torch
math, dtype-agnostic (LayerNorm and softmax statistics in float32).
"""

from __future__ import annotations

import torch
from torch import nn

from cosydesk.model.config import Node
from cosydesk.model.encoder_layers import (  # noqa: F401 - re-exported for the encoders' users
    ConformerEncoderLayer,
    LinearInput,
    PositionwiseFeedForward,
    TransformerEncoderLayer,
    _encoder_kwargs,
    _PreNormLayer,
    attention_mask,
    chunk_mask,
    make_activation,
    make_input_layer,
    padding_mask,
)
from cosydesk.model.norms import Fp32LayerNorm
from cosydesk.model.upsample_encoder import PreLookaheadLayer, Upsample1D, UpsampleConformerEncoder  # noqa: F401

__all__ = [
    "ConformerEncoder",
    "TransformerEncoder",
    "UpsampleConformerEncoder",
    "PreLookaheadLayer",
    "Upsample1D",
    "EncoderKVCache",
    "padding_mask",
    "chunk_mask",
]


# ---------------------------------------------------------------------------------------------- KV cache


class LayerKVCache:
    """Keys and values of one attention layer in preallocated storage [B,H,capacity,d_k], grown by doubling."""

    def __init__(self, initial_capacity: int = 256):
        self.keys: torch.Tensor | None = None
        self.values: torch.Tensor | None = None
        self.length = 0
        self.initial_capacity = initial_capacity

    def update(self, keys: torch.Tensor, values: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        new_length = self.length + keys.size(2)
        if self.keys is None or new_length > self.keys.size(2):
            capacity = max(self.initial_capacity, new_length, 2 * (0 if self.keys is None else self.keys.size(2)))
            shape = (keys.size(0), keys.size(1), capacity, keys.size(3))
            grown_k = keys.new_empty(shape)
            grown_v = values.new_empty(shape)
            if self.keys is not None:
                grown_k[:, :, : self.length] = self.keys[:, :, : self.length]
                grown_v[:, :, : self.length] = self.values[:, :, : self.length]
            self.keys, self.values = grown_k, grown_v
        self.keys[:, :, self.length : new_length] = keys
        self.values[:, :, self.length : new_length] = values
        self.length = new_length
        return self.keys[:, :, :new_length], self.values[:, :, :new_length]


class EncoderKVCache:
    """Decoding state of a TransformerEncoder/ConformerEncoder: one LayerKVCache per layer, the number of
    positions already processed, and per-layer projections of the non-negative relative positions
    (linear_pos is linear, so projecting the table once and slicing it equals projecting each slice)."""

    def __init__(self, n_layers: int, initial_capacity: int = 256):
        self.layers = [LayerKVCache(initial_capacity) for _ in range(n_layers)]
        self.offset = 0
        self.position_projections: list[torch.Tensor] | None = None  # [1,H,n,d_k], positions 0..n-1 ascending


# ---------------------------------------------------------------------------------------------- encoders


class _StackedEncoder(nn.Module):
    """embed -> layers -> after_norm, with the official chunk-mask rules."""

    layer_class: type[_PreNormLayer] = ConformerEncoderLayer

    def __init__(
        self,
        input_size: int,
        output_size: int = 256,
        attention_heads: int = 4,
        linear_units: int = 2048,
        num_blocks: int = 6,
        input_layer: str = "linear",
        normalize_before: bool = True,
        static_chunk_size: int = 0,
        use_dynamic_chunk: bool = False,
        activation_type: str = "swish",
        key_bias: bool = True,
    ):
        super().__init__()
        self._output_size = output_size
        self.embed = make_input_layer(input_layer, input_size, output_size)
        self.normalize_before = normalize_before
        self.static_chunk_size = static_chunk_size
        self.use_dynamic_chunk = use_dynamic_chunk
        # The official encoders share one activation instance between layers; it has no weights.
        activation = make_activation(activation_type)
        self.encoders = nn.ModuleList(
            [
                self.layer_class(output_size, attention_heads, linear_units, activation, normalize_before, key_bias)
                for _ in range(num_blocks)
            ]
        )
        self.after_norm = Fp32LayerNorm(output_size, eps=1e-5)

    def output_size(self) -> int:
        return self._output_size

    def _chunk_size(self, n_frames: int, decoding_chunk_size: int) -> int:
        if self.use_dynamic_chunk:
            # Decoding rules of the official helper: >0 fixed chunk, <0 full context (0 = training only).
            return decoding_chunk_size if decoding_chunk_size > 0 else 0
        return self.static_chunk_size

    def forward(
        self,
        xs: torch.Tensor,
        xs_lens: torch.Tensor | None,
        decoding_chunk_size: int = 0,
        num_decoding_left_chunks: int = -1,
        pos_emb: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Full-sequence forward, official ``BaseEncoder.forward`` semantics.

        xs [B,T,input_size], xs_lens [B] (None = all valid) -> (out [B,T,output_size], pad mask [B,1,T]).
        With ``static_chunk_size`` c > 0 in the yaml the attention is chunk-causal whatever
        ``decoding_chunk_size`` says (c = 1: causal, the v1 LLM text encoder); c = 0: full attention
        (the v1 flow encoder). ``num_decoding_left_chunks`` is accepted for signature compatibility; the
        official chunk mask ignores it too (all left chunks are visible). ``pos_emb``: the relative-position table
        for T frames from elsewhere (the same values; a CUDA graph must not read this module's table, which a
        longer eager call may regrow); None: this module's own.
        """
        n_frames = xs.size(1)
        pad = padding_mask(xs_lens, n_frames, xs.size(0), xs.device)
        xs = self.embed(xs)
        if pos_emb is None:
            pos_emb = self.embed.pos_enc.relative(n_frames, n_frames, xs.device, xs.dtype)
        mask = attention_mask(pad, self._chunk_size(n_frames, decoding_chunk_size))
        for layer in self.encoders:
            xs = layer(xs, mask, pos_emb)
        if self.normalize_before:
            xs = self.after_norm(xs)
        return xs, pad

    # -- incremental decoding (official forward_chunk with an unbounded att_cache) --------------------

    def new_cache(self, initial_capacity: int = 256) -> EncoderKVCache:
        return EncoderKVCache(len(self.encoders), initial_capacity)

    def forward_incremental(self, xs: torch.Tensor, cache: EncoderKVCache) -> torch.Tensor:
        """Process the next ``T`` positions of a single sequence, attending to everything cached.

        xs [1,T,input_size] -> [1,T,output_size]; ``cache`` is updated in place. Within the new
        positions attention is causal; towards cached positions it is unrestricted - exactly what the
        official ``forward_chunk`` does for the v1 LLM (first call: whole prompt with a tril mask and an
        empty cache; later calls: one token, no mask). Relative positions cover the full key range.
        """
        n_new = xs.size(1)
        n_keys = cache.offset + n_new
        xs = self.embed(xs)
        if n_new == 1 and cache.offset > 0:
            projections = self._position_projections(cache, n_keys, xs)
            for layer, layer_cache, table in zip(self.encoders, cache.layers, projections):
                # The one query sits at position n_keys-1: it needs relative positions n_keys-1 .. 0.
                pos_proj = table[:, :, :n_keys].flip(2)
                xs = layer(xs, None, pos_proj=pos_proj, kv_cache=layer_cache)
        else:
            pos_emb = self.embed.pos_enc.relative(n_keys, n_new, xs.device, xs.dtype)
            keys = torch.arange(n_keys, device=xs.device)
            queries = torch.arange(cache.offset, n_keys, device=xs.device)
            mask = (keys.unsqueeze(0) <= queries.unsqueeze(1)).unsqueeze(0)  # [1,T,K]
            for layer, layer_cache in zip(self.encoders, cache.layers):
                xs = layer(xs, mask, pos_emb, kv_cache=layer_cache)
        cache.offset = n_keys
        if self.normalize_before:
            xs = self.after_norm(xs)
        return xs

    def _position_projections(self, cache: EncoderKVCache, n_keys: int, like: torch.Tensor) -> list[torch.Tensor]:
        tables = cache.position_projections
        if tables is None or tables[0].size(2) < n_keys or tables[0].dtype != like.dtype or tables[0].device != like.device:
            size = max(n_keys, 2 * (0 if tables is None else tables[0].size(2)), 256)
            raw = self.embed.pos_enc.non_negative(size, like.device, like.dtype)
            tables = [layer.self_attn.project_positions(raw) for layer in self.encoders]
            cache.position_projections = tables
        return tables


class ConformerEncoder(_StackedEncoder):
    """Official ``cosyvoice.transformer.encoder.ConformerEncoder`` (as configured: no macaron, no conv)."""

    layer_class = ConformerEncoderLayer

    @classmethod
    def from_config(cls, node: Node) -> "ConformerEncoder":
        return cls(**_encoder_kwargs(node, "swish", conformer=True))


class TransformerEncoder(_StackedEncoder):
    """Official ``cosyvoice.transformer.encoder.TransformerEncoder`` (rel-pos attention, ReLU FFN)."""

    layer_class = TransformerEncoderLayer

    @classmethod
    def from_config(cls, node: Node) -> "TransformerEncoder":
        return cls(**_encoder_kwargs(node, "relu", conformer=False))
