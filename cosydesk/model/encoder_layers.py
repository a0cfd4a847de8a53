"""Building blocks of the wenet/ESPnet-style encoders (cosydesk.model.transformer, .upsample_encoder).

Masks (bool, True = may attend): padding mask [B,1,T]; with a static chunk size c every frame sees its own
chunk and all earlier ones (c = 1 is plain causal). Pieces: activations, the position-wise feed-forward, the
linear input layer (Linear+LayerNorm [+ReLU], x sqrt(d), rel-pos table), the conformer / transformer layers
(state-dict names of the official files), and the reading of an encoder's yaml node.

Inference only, pure torch math, dtype-agnostic (LayerNorm and softmax statistics in float32).
"""

from __future__ import annotations

import torch
from torch import nn

from cosydesk.model.attention import RelPositionMultiHeadedAttention
from cosydesk.model.config import ConfigError, Node
from cosydesk.model.norms import Fp32LayerNorm
from cosydesk.model.positional import EspnetRelPositionalEncoding


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
