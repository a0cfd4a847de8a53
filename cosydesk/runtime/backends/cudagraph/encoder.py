"""The flow encoders as CUDA graphs: v2's UpsampleConformerEncoder per token bucket and attention mode, v1's
full-attention ConformerEncoder per token bucket (``GraphedFullAttentionEncoder``, at the end).

Why: eagerly the encoder is ~430 small kernels launched from Python, ~10 ms per flow call on the H200 (more
while the LLM thread competes for the GIL); replayed from a graph it is ~1.3 ms. (Compiling its conformer layers
with Inductor took a graph to ~0.8 ms on the H200, but capturing 4 of its 9 buckets then took 17.5 s with a cold
compile cache, for ~1 ms per sentence: not done.)

``GraphedEncoder`` replaces ``flow.encoder`` on the backend's own flow and keeps its call signature. A request
of T tokens (+ up to 3 withheld look-ahead tokens) is written into the smallest bucket >= T + look-ahead, and
the bucket's graph runs the encoder's own layers on it. Padding is invisible to the T valid frames:
- the official code pads with zeros *after* the input embedding (look-ahead conv): the padded rows are
  zeroed after ``embed`` here, so the look-ahead conv sees exactly the official right context;
- every later conv is causal (looks left only) and attention masks the padded keys;
- relative positions depend only on query - key distance: each bucket reads its slice of one table owned
  here (the modules' own tables may be regrown by eager calls, which would leave a graph reading freed memory).
Longer requests run the plain encoder.
"""

from __future__ import annotations

import functools

import torch
from torch import nn

from cosydesk.model.positional import EspnetRelPositionalEncoding
from cosydesk.model.transformer import attention_mask, padding_mask
from cosydesk.runtime.backends.cudagraph.capture import capture_graphs
from cosydesk.runtime.backends.cudagraph.graph_table import GraphTable, TableViews, shared_prefix_views


class GraphedEncoder(TableViews, nn.Module):
    """Drop-in for ``UpsampleConformerEncoder`` (batch 1) with captured buckets; ``capture()`` on CUDA only."""

    def __init__(self, encoder, buckets: list[int], streaming_modes: tuple[bool, ...] = (False, True),
                 projection: nn.Module | None = None):
        """``projection``: a module applied to the encoder's output inside the graphs (the flow's ``encoder_proj``,
        which the caller then replaces by an identity): eagerly it was the request's one cuBLAS product outside a
        graph, and cuBLAS allocates a 32 MiB workspace for every new stream it runs on."""
        super().__init__()
        self.encoder = encoder
        self.projection = projection
        self.streaming_modes = streaming_modes
        param = next(encoder.parameters())
        self.device, self.dtype = param.device, param.dtype
        self.table = GraphTable("encoder", self.device, buckets)  # buffers per bucket, graphs per (bucket, mode)
        in_dim = encoder.embed.out[0].in_features
        width = encoder.output_size()
        stride = encoder.up_stride
        # one relative-position table for every bucket (both embeds share d_model, so the values are equal), sized
        # for the largest one so it is never regrown; moved to the device by the first (warm-up) call
        self.positions = EspnetRelPositionalEncoding(width, initial_positions=stride * self.buckets[-1])
        # one allocation per input for every bucket: a call rewrites all of a bucket's x and keep (forward)
        x = shared_prefix_views({b: (1, b, in_dim) for b in self.buckets}, self.device, self.dtype)
        keep = shared_prefix_views({b: (1, b, 1) for b in self.buckets}, self.device, self.dtype)
        self.bufs.update({b: {"x": x[b], "keep": keep[b],
                              "length": torch.zeros(1, device=self.device, dtype=torch.int32)} for b in self.buckets})
        self.outputs: dict[tuple[int, bool], torch.Tensor] = {}

    def _relative(self, frames: int) -> torch.Tensor:
        return self.positions.relative(frames, frames, self.device, self.dtype)

    def _body(self, bucket: int, streaming: bool) -> torch.Tensor:
        """The encoder on the bucket's buffers -> [1, stride*bucket, width] (valid rows first)."""
        enc, b = self.encoder, self.bufs[bucket]
        chunk = enc.static_chunk_size if streaming else 0
        xs = enc.embed(b["x"]) * b["keep"]  # rows past tokens + look-ahead are zeros, as officially padded
        xs = enc.pre_lookahead_layer(xs, None)
        mask = attention_mask(padding_mask(b["length"], bucket, 1, self.device), chunk)
        positions = self._relative(bucket)
        for layer in enc.encoders:
            xs = layer(xs, mask, positions)
        xs, _ = enc.up_layer(xs.transpose(1, 2), None)
        xs = enc.up_embed(xs.transpose(1, 2))
        frames = xs.shape[1]
        mask = attention_mask(padding_mask(b["length"] * enc.up_stride, frames, 1, self.device), chunk * enc.up_stride)
        positions = self._relative(frames)
        for layer in enc.up_encoders:
            xs = layer(xs, mask, positions)
        if enc.normalize_before:
            xs = enc.after_norm(xs)
        if self.projection is not None:
            xs = self.projection(xs)
        self.outputs[(bucket, streaming)] = xs
        return xs

    def capture(self, pool=None, progress=None) -> None:
        with torch.inference_mode():
            for b in self.bufs.values():  # realistic values while warming up
                b["x"].normal_()
                b["keep"].fill_(1.0)
                b["length"].fill_(b["x"].shape[1])
        jobs = [((b, s), functools.partial(self._body, b, s)) for b in self.buckets for s in self.streaming_modes]
        self.table.capture(jobs, pool, progress, capture=capture_graphs)

    def forward(self, xs: torch.Tensor, xs_lens: torch.Tensor | None, context: torch.Tensor | None = None,
                streaming: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
        """As ``UpsampleConformerEncoder.forward`` for one utterance whose ``xs_lens`` is its row count (what the
        v2 flow passes): (out [1, 2T, width], pad mask [1, 1, 2T])."""
        tokens = xs.shape[1]
        extra = 0 if context is None else context.shape[1]
        bucket = self.table.pick(tokens + extra)
        if xs.shape[0] != 1 or bucket is None or extra > self.encoder.pre_lookahead_len:
            out, mask = self.table.eager(self.encoder, xs, xs_lens, context=context, streaming=streaming)
            return (out if self.projection is None else self.projection(out)), mask
        b = self.bufs[bucket]
        b["x"][:, :tokens].copy_(xs)
        if extra:
            b["x"][:, tokens:tokens + extra].copy_(context)
        b["x"][:, tokens + extra:].zero_()
        b["keep"].zero_()
        b["keep"][:, :tokens + extra].fill_(1.0)
        b["length"].fill_(tokens)
        key = (bucket, bool(streaming))
        self.table.run(key, functools.partial(self._body, *key))  # not captured (CPU tests): the body, eagerly
        out = self.outputs[key]
        frames = tokens * self.encoder.up_stride
        mask = torch.ones(1, 1, frames, dtype=torch.bool, device=xs.device)
        return out[:, :frames], mask


class GraphedFullAttentionEncoder(TableViews, nn.Module):
    """Drop-in for v1's flow ``ConformerEncoder`` (batch 1) with captured token buckets; ``capture()`` on CUDA only.

    Why: eagerly it is ~200 small kernels launched from Python each flow call (v2's encoder: ~10 ms eager ->
    1.3 ms as graphs). Padding to a bucket is invisible to the valid frames: the input layer works row by row
    (linear, LayerNorm, scale), the attention is full with the padded keys masked, the layers have no convolution,
    and relative positions depend only on query - key distance (one table owned here, as in ``GraphedEncoder``).
    Encoders with chunked attention, batches and requests longer than every bucket run the plain module.
    """

    def __init__(self, encoder, buckets: list[int]):
        super().__init__()
        if encoder.static_chunk_size or encoder.use_dynamic_chunk:
            raise ValueError("GraphedFullAttentionEncoder needs an encoder with full attention (no chunk mask)")
        self.encoder = encoder
        param = next(encoder.parameters())
        self.device, self.dtype = param.device, param.dtype
        self.table = GraphTable("encoder", self.device, buckets)  # buffers and graphs per bucket
        in_dim = encoder.embed.out[0].in_features
        self.positions = EspnetRelPositionalEncoding(encoder.output_size(), initial_positions=self.buckets[-1])
        x = shared_prefix_views({b: (1, b, in_dim) for b in self.buckets}, self.device, self.dtype)  # rewritten whole
        self.bufs.update({b: {"x": x[b], "length": torch.zeros(1, device=self.device, dtype=torch.int32)}
                          for b in self.buckets})
        self.outputs: dict[int, torch.Tensor] = {}

    def _body(self, bucket: int) -> torch.Tensor:
        """The encoder on the bucket's buffers -> [1, bucket, width] (valid rows first)."""
        b = self.bufs[bucket]
        positions = self.positions.relative(bucket, bucket, self.device, self.dtype)
        xs, _ = self.encoder(b["x"], b["length"], pos_emb=positions)
        self.outputs[bucket] = xs
        return xs

    def capture(self, pool=None, progress=None) -> None:
        with torch.inference_mode():
            for b in self.bufs.values():  # realistic values while warming up
                b["x"].normal_()
                b["length"].fill_(b["x"].shape[1])
        jobs = [(b, functools.partial(self._body, b)) for b in self.buckets]
        self.table.capture(jobs, pool, progress, capture=capture_graphs)

    def forward(self, xs: torch.Tensor, xs_lens: torch.Tensor | None, decoding_chunk_size: int = 0,
                num_decoding_left_chunks: int = -1) -> tuple[torch.Tensor, torch.Tensor]:
        """As ``ConformerEncoder.forward``: (out [1, T, width], pad mask [1, 1, T])."""
        tokens = xs.shape[1]
        bucket = self.table.pick(tokens)
        if xs.shape[0] != 1 or bucket is None:
            return self.table.eager(self.encoder, xs, xs_lens, decoding_chunk_size, num_decoding_left_chunks)
        b = self.bufs[bucket]
        b["x"][:, :tokens].copy_(xs)
        b["x"][:, tokens:].zero_()
        if xs_lens is None:
            b["length"].fill_(tokens)
        else:  # a device copy: no wait for the host
            b["length"].copy_(xs_lens.reshape(1).clamp(max=tokens))  # more than T: all valid, as in the module
        self.table.run(bucket, functools.partial(self._body, bucket))  # not captured (CPU tests): eagerly
        out = self.outputs[bucket]
        return out[:, :tokens], padding_mask(xs_lens, tokens, 1, xs.device)
