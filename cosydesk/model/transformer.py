"""wenet/ESPnet-style encoders used by CosyVoice v1/v2 (and the look-ahead conv shared with v3).

Classes (state-dict names follow the official files, see the fixtures' keys.txt):

- ``ConformerEncoder``  - v1 LLM text encoder and v1 flow encoder: ``embed`` (Linear+LayerNorm, x sqrt(d),
  rel-pos) -> ``encoders.N`` (pre-norm self-attention + swish feed-forward; no macaron, no conv module)
  -> ``after_norm``.
- ``TransformerEncoder`` - the v1 LLM body: ``embed`` of type ``linear_legacy`` (Linear+LayerNorm+ReLU),
  ``encoders.N`` with ``norm1``/``norm2`` and a ReLU feed-forward, ``after_norm``; supports incremental
  decoding with a key/value cache (``new_cache`` + ``forward_incremental``).
- ``UpsampleConformerEncoder`` - the v2 flow encoder: embed -> ``pre_lookahead_layer`` -> ``encoders``
  -> ``up_layer`` (nearest x2, left pad 4, Conv1d k5) -> ``up_embed`` -> ``up_encoders`` (4) -> ``after_norm``.
- ``PreLookaheadLayer`` - right-context conv also used by the v3 flow.

Masks: bool, True = may attend. Padding mask [B,1,T]; with a static chunk size c every frame sees its own
chunk and all earlier ones (c = 1 is plain causal).

Inference only: no dropout modules (they hold no weights), no training-time dynamic chunks. Pure torch
math, dtype-agnostic (LayerNorm and softmax statistics in float32).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from cosydesk.model.attention import RelPositionMultiHeadedAttention
from cosydesk.model.config import ConfigError, Node
from cosydesk.model.norms import Fp32LayerNorm
from cosydesk.model.positional import EspnetRelPositionalEncoding

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


# ---------------------------------------------------------------------------------------------- masks


def padding_mask(lengths: torch.Tensor | None, n_frames: int, batch: int, device: torch.device) -> torch.Tensor:
    """[B,1,T] True on valid frames. Lengths above T simply mean 'all valid' (the official v2 flow
    passes the un-shortened token count when it withholds look-ahead tokens)."""
    if lengths is None:
        return torch.ones(batch, 1, n_frames, dtype=torch.bool, device=device)
    frames = torch.arange(n_frames, device=lengths.device)
    return (frames.unsqueeze(0) < lengths.to(torch.int64).unsqueeze(1)).unsqueeze(1).to(device)


def chunk_mask(n_frames: int, chunk_size: int, device: torch.device) -> torch.Tensor:
    """[T,T]: frame i may see frame j iff j lies in i's chunk or an earlier one."""
    frames = torch.arange(n_frames, device=device)
    chunk_end = (frames // chunk_size + 1) * chunk_size
    return frames.unsqueeze(0) < chunk_end.unsqueeze(1)


def attention_mask(pad_mask: torch.Tensor, chunk_size: int) -> torch.Tensor:
    """Combine the padding mask with an optional chunk mask.

    Like the official helper, a query row with no visible key (only possible for a zero-length item)
    is opened completely instead of producing NaNs; its output is padding anyway.
    """
    if chunk_size > 0:
        mask = pad_mask & chunk_mask(pad_mask.size(-1), chunk_size, pad_mask.device).unsqueeze(0)
    else:
        mask = pad_mask
    return mask | ~mask.any(dim=-1, keepdim=True)


# ---------------------------------------------------------------------------------------------- pieces


_ACTIVATIONS = {"swish": nn.SiLU, "silu": nn.SiLU, "relu": nn.ReLU, "gelu": nn.GELU}


def make_activation(name: str) -> nn.Module:
    if name not in _ACTIVATIONS:
        raise ConfigError(f"unsupported activation_type {name!r}")
    return _ACTIVATIONS[name]()


class PositionwiseFeedForward(nn.Module):
    """w_2(activation(w_1(x)))."""

    def __init__(self, idim: int, hidden_units: int, activation: nn.Module):
        super().__init__()
        self.w_1 = nn.Linear(idim, hidden_units)
        self.activation = activation
        self.w_2 = nn.Linear(hidden_units, idim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.w_2(self.activation(self.w_1(x)))


class LinearInput(nn.Module):
    """Input layer without subsampling: ``out`` = Linear -> LayerNorm(1e-5) [-> ReLU for 'linear_legacy'],
    then x * sqrt(d) (the rel-pos encoding adds nothing to x, it only supplies the table)."""

    def __init__(self, idim: int, odim: int, legacy: bool):
        super().__init__()
        layers: list[nn.Module] = [nn.Linear(idim, odim), Fp32LayerNorm(odim, eps=1e-5), nn.Identity()]
        if legacy:
            layers.append(nn.ReLU())  # index 3 as in the official Sequential (index 2 was dropout)
        self.out = nn.Sequential(*layers)
        self.pos_enc = EspnetRelPositionalEncoding(odim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.pos_enc.scale(self.out(x))


def make_input_layer(kind: str, idim: int, odim: int) -> LinearInput:
    if kind not in ("linear", "linear_legacy"):
        raise ConfigError(f"unsupported input_layer {kind!r} (only 'linear' and 'linear_legacy')")
    return LinearInput(idim, odim, legacy=kind == "linear_legacy")


class _PreNormLayer(nn.Module):
    """Self-attention block then feed-forward block, each residual, with LayerNorm(1e-12) before (or after)."""

    attn_norm_name = ""
    ff_norm_name = ""

    def __init__(self, size: int, heads: int, linear_units: int, activation: nn.Module, normalize_before: bool, key_bias: bool):
        super().__init__()
        self.self_attn = RelPositionMultiHeadedAttention(heads, size, key_bias)
        self.feed_forward = PositionwiseFeedForward(size, linear_units, activation)
        self.normalize_before = normalize_before

    def _norms(self) -> tuple[nn.Module, nn.Module]:
        raise NotImplementedError

    def forward(
        self,
        x: torch.Tensor,
        mask: torch.Tensor | None,
        pos_emb: torch.Tensor | None = None,
        *,
        pos_proj: torch.Tensor | None = None,
        kv_cache=None,
    ) -> torch.Tensor:
        attn_norm, ff_norm = self._norms()
        h = attn_norm(x) if self.normalize_before else x
        x = x + self.self_attn(h, mask, pos_emb, pos_proj=pos_proj, kv_cache=kv_cache)
        if not self.normalize_before:
            x = attn_norm(x)
        h = ff_norm(x) if self.normalize_before else x
        x = x + self.feed_forward(h)
        if not self.normalize_before:
            x = ff_norm(x)
        return x


class ConformerEncoderLayer(_PreNormLayer):
    """Conformer layer as configured in the CosyVoice yamls (no macaron FFN, no conv module):
    keys self_attn, feed_forward, norm_mha, norm_ff."""

    def __init__(self, size: int, heads: int, linear_units: int, activation: nn.Module, normalize_before: bool = True, key_bias: bool = True):
        super().__init__(size, heads, linear_units, activation, normalize_before, key_bias)
        self.norm_ff = Fp32LayerNorm(size, eps=1e-12)
        self.norm_mha = Fp32LayerNorm(size, eps=1e-12)

    def _norms(self):
        return self.norm_mha, self.norm_ff


class TransformerEncoderLayer(_PreNormLayer):
    """Transformer layer: keys self_attn, feed_forward, norm1 (attention), norm2 (feed-forward)."""

    def __init__(self, size: int, heads: int, linear_units: int, activation: nn.Module, normalize_before: bool = True, key_bias: bool = True):
        super().__init__(size, heads, linear_units, activation, normalize_before, key_bias)
        self.norm1 = Fp32LayerNorm(size, eps=1e-12)
        self.norm2 = Fp32LayerNorm(size, eps=1e-12)

    def _norms(self):
        return self.norm1, self.norm2


# ---------------------------------------------------------------------------------------------- config


def _encoder_kwargs(node: Node, default_activation: str, conformer: bool) -> dict:
    """Read and validate the encoder kwargs of a yaml node (sizes only from the yaml)."""
    args = node.args if isinstance(node.args, dict) else {}
    pos = args.get("pos_enc_layer_type", "rel_pos" if conformer else "abs_pos")
    if pos != "rel_pos_espnet":
        raise ConfigError(f"{node.target}: unsupported pos_enc_layer_type {pos!r} (only 'rel_pos_espnet')")
    attn = args.get("selfattention_layer_type", "rel_selfattn" if conformer else "selfattn")
    if attn != "rel_selfattn":
        raise ConfigError(f"{node.target}: unsupported selfattention_layer_type {attn!r}")
    if conformer and args.get("macaron_style", True):
        raise ConfigError(f"{node.target}: macaron_style conformer layers are not supported")
    if conformer and args.get("use_cnn_module", True):
        raise ConfigError(f"{node.target}: conformer convolution modules are not supported")
    if args.get("global_cmvn") is not None:
        raise ConfigError(f"{node.target}: global_cmvn is not supported")
    return dict(
        input_size=int(node["input_size"]),
        output_size=int(args.get("output_size", 256)),
        attention_heads=int(args.get("attention_heads", 4)),
        linear_units=int(args.get("linear_units", 2048)),
        num_blocks=int(args.get("num_blocks", 6)),
        input_layer=str(args.get("input_layer", "conv2d")),
        normalize_before=bool(args.get("normalize_before", True)),
        static_chunk_size=int(args.get("static_chunk_size", 0)),
        use_dynamic_chunk=bool(args.get("use_dynamic_chunk", False)),
        activation_type=str(args.get("activation_type", default_activation)),
        key_bias=bool(args.get("key_bias", True)),
    )


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


# ---------------------------------------------------------------------------------------------- v2 / v3 pieces


class PreLookaheadLayer(nn.Module):
    """Right-context convolution over tokens (v2 flow encoder, v3 flow).

    conv1 (kernel pre_lookahead_len+1) sees each token and the next ``pre_lookahead_len`` ones - zeros past
    the end, or the withheld look-ahead tokens given as ``context`` - then leaky_relu(0.01), then conv2
    (kernel 3, two zeros on the left, so causal), then a residual connection.
    """

    def __init__(self, in_channels: int, channels: int, pre_lookahead_len: int = 1):
        super().__init__()
        self.pre_lookahead_len = int(pre_lookahead_len)
        self.conv1 = nn.Conv1d(in_channels, channels, kernel_size=self.pre_lookahead_len + 1)
        self.conv2 = nn.Conv1d(channels, in_channels, kernel_size=3)

    def forward(self, x: torch.Tensor, context: torch.Tensor | None = None) -> torch.Tensor:
        """x [B,T,C], context [B,T_ctx,C] with T_ctx <= pre_lookahead_len (None or T_ctx = 0: end of
        stream, zeros) -> [B,T,C]."""
        h = x.transpose(1, 2)
        if context is not None and context.size(1) > 0:
            if context.size(1) > self.pre_lookahead_len:
                raise ValueError(f"look-ahead context of {context.size(1)} frames, at most {self.pre_lookahead_len} allowed")
            h = torch.cat([h, context.transpose(1, 2).to(h.dtype)], dim=2)
            missing = self.pre_lookahead_len - context.size(1)
        else:
            missing = self.pre_lookahead_len
        h = F.pad(h, (0, missing))
        h = F.leaky_relu(self.conv1(h), 0.01)
        h = self.conv2(F.pad(h, (self.conv2.kernel_size[0] - 1, 0)))
        return h.transpose(1, 2) + x


class Upsample1D(nn.Module):
    """Nearest-neighbour upsampling by ``stride`` along time, 2*stride zeros on the left, Conv1d(k=2*stride+1)."""

    def __init__(self, channels: int, out_channels: int, stride: int = 2):
        super().__init__()
        self.stride = int(stride)
        self.conv = nn.Conv1d(channels, out_channels, 2 * self.stride + 1)

    def forward(self, x: torch.Tensor, lengths: torch.Tensor | None) -> tuple[torch.Tensor, torch.Tensor | None]:
        """x [B,C,T] -> ([B,C_out,stride*T], lengths*stride)."""
        h = torch.repeat_interleave(x, self.stride, dim=2)
        h = self.conv(F.pad(h, (2 * self.stride, 0)))
        return h, None if lengths is None else lengths * self.stride


class UpsampleConformerEncoder(nn.Module):
    """Official ``cosyvoice.transformer.upsample_encoder.UpsampleConformerEncoder`` (v2 flow encoder).

    The look-ahead and upsampling convs use ``output_size`` channels (the official code hard-codes 512,
    which equals output_size in the release; the tiny fixtures were built the same way). 4 up blocks and
    stride 2 are fixed, as in the official class.
    """

    n_up_blocks = 4
    up_stride = 2
    pre_lookahead_len = 3

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
        if use_dynamic_chunk:
            raise ConfigError("UpsampleConformerEncoder: use_dynamic_chunk is not supported")
        self._output_size = output_size
        self.normalize_before = normalize_before
        self.static_chunk_size = static_chunk_size
        activation = make_activation(activation_type)

        def layers(n: int) -> nn.ModuleList:
            return nn.ModuleList(
                [ConformerEncoderLayer(output_size, attention_heads, linear_units, activation, normalize_before, key_bias) for _ in range(n)]
            )

        self.embed = make_input_layer(input_layer, input_size, output_size)
        self.pre_lookahead_layer = PreLookaheadLayer(output_size, output_size, self.pre_lookahead_len)
        self.encoders = layers(num_blocks)
        self.up_layer = Upsample1D(output_size, output_size, self.up_stride)
        self.up_embed = make_input_layer(input_layer, input_size, output_size)
        self.up_encoders = layers(self.n_up_blocks)
        self.after_norm = Fp32LayerNorm(output_size, eps=1e-5)

    @classmethod
    def from_config(cls, node: Node) -> "UpsampleConformerEncoder":
        return cls(**_encoder_kwargs(node, "swish", conformer=True))

    def output_size(self) -> int:
        return self._output_size

    @staticmethod
    def _run(layers: nn.ModuleList, embed: LinearInput, xs: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        n_frames = xs.size(1)
        pos_emb = embed.pos_enc.relative(n_frames, n_frames, xs.device, xs.dtype)
        for layer in layers:
            xs = layer(xs, mask, pos_emb)
        return xs

    def forward(
        self,
        xs: torch.Tensor,
        xs_lens: torch.Tensor | None,
        context: torch.Tensor | None = None,
        streaming: bool = False,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """xs [B,T,input_size] token embeddings (already multiplied by the token mask), xs_lens [B].

        ``context`` [B,3,input_size]: the embeddings of the look-ahead tokens withheld from ``xs`` when the
        flow runs with finalize=False (they only feed the look-ahead conv); None or a zero-length tensor
        at finalize=True (zeros are used instead). ``streaming``: chunk masks of ``static_chunk_size``
        tokens before and 2x that many frames after upsampling; otherwise full attention.

        Returns (out [B,2T,output_size], pad mask [B,1,2T]). Like the official flow, xs_lens may exceed T
        (when look-ahead tokens were withheld); frames past T do not exist and are simply not masked.
        """
        chunk = self.static_chunk_size if streaming else 0
        pad = padding_mask(xs_lens, xs.size(1), xs.size(0), xs.device)
        xs = self.embed(xs)
        if context is not None and context.size(1) > 0:
            context = self.embed(context)
        else:
            context = None
        xs = self.pre_lookahead_layer(xs, context)
        xs = self._run(self.encoders, self.embed, xs, attention_mask(pad, chunk))

        xs, up_lens = self.up_layer(xs.transpose(1, 2), xs_lens)
        xs = xs.transpose(1, 2)
        pad = padding_mask(up_lens, xs.size(1), xs.size(0), xs.device)
        xs = self.up_embed(xs)
        xs = self._run(self.up_encoders, self.up_embed, xs, attention_mask(pad, chunk * self.up_stride))
        if self.normalize_before:
            xs = self.after_norm(xs)
        return xs, pad
