"""The v2 flow encoder (``UpsampleConformerEncoder``) and its look-ahead conv, shared with the v3 flow.

- ``UpsampleConformerEncoder`` - embed -> ``pre_lookahead_layer`` -> ``encoders`` -> ``up_layer`` (nearest x2,
  left pad 4, Conv1d k5) -> ``up_embed`` -> ``up_encoders`` (4) -> ``after_norm``.
- ``PreLookaheadLayer`` - right-context conv over tokens (also used by the v3 flow).
- ``Upsample1D`` - nearest-neighbour upsampling along time followed by a causal conv.

State-dict names follow the official files (the fixtures' keys.txt). Inference only, pure torch math.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from cosydesk.model.config import ConfigError, Node
from cosydesk.model.encoder_layers import (
    ConformerEncoderLayer,
    LinearInput,
    _encoder_kwargs,
    attention_mask,
    make_activation,
    make_input_layer,
    padding_mask,
)
from cosydesk.model.norms import Fp32LayerNorm


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
