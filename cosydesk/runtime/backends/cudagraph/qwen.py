"""Qwen2 speech LM (v2/v3) over a static KV cache: the decode step and prefill buckets as CUDA graphs.

The decoder math is written out here on the module's own weights (so shapes stay static): RMSNorm with
float32 statistics, rotary embedding computed in float32, grouped-query attention over the whole preallocated
cache with a position mask (keys at positions <= the query's), SwiGLU MLP; q/k/v and gate/up as single GEMMs.
The decode step runs the Triton kernels of ``decode_kernels.py`` on a GPU with Triton (else its layer compiled,
``compile.py``); the prefill layer is compiled once with a symbolic length. The text-embedding table stays in
host memory. One sequence at a time: the cache belongs to the object, a new ``prefill`` starts over.

``generate_speech_tokens`` is the fast generation loop: the decode graph ends by choosing the next id on the
device (``select.py``; with the decode kernels as Triton kernels, ``select_kernel.py``), so step n+1 is
launched before the host reads id n (decode-ahead).

Prefill pads the prompt up to a bucket; the padded query rows write junk K/V at positions P..bucket-1, which
is harmless: every later query at position p first overwrites position p and only reads keys <= p.
Logits returned by ``prefill`` / ``decode_step`` live in static buffers, valid until the next call.
"""

from __future__ import annotations

import functools
import warnings
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from cosydesk.model.sampling import RepetitionAwareSampler
from cosydesk.runtime.buckets import bucket_for
from cosydesk.runtime.backends.cudagraph.capture import capture_graphs
from cosydesk.runtime.backends.cudagraph.compile import compile_enabled, compiled
from cosydesk.runtime.options import active as active_options
from cosydesk.runtime.backends.cudagraph.fuse import concat_parameters
from cosydesk.runtime.backends.cudagraph.graph_table import shared_prefix_views
from cosydesk.runtime.backends.cudagraph.static_lm import StaticDecodeState, StaticSpeechLM


# Inductor tunes the block sizes of the decode layer's few kernels (its matrix-vector reductions are ~80 % of
# the step); the layer is one compiled graph, so the tuning costs seconds once.
DECODE_COMPILE_OPTIONS = {"coordinate_descent_tuning": True}


def decode_kernels_available(device: torch.device) -> bool:
    """The Triton decode kernels are used by default on CUDA with Triton. ``EngineOptions.decode_kernels``
    turns them off alone; ``compile=False`` (no generated kernels at all) turns them off too."""
    return active_options().decode_kernels and compile_enabled(device)


def _rms(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    xf = x.float()
    xf = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)
    return weight * xf.to(x.dtype)


def _rotate(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    xf = x.float()
    half = xf.shape[-1] // 2
    rotated = torch.cat([-xf[..., half:], xf[..., :half]], dim=-1)
    return (xf * cos + rotated * sin).to(x.dtype)


@dataclass
class LayerWeights:
    """One decoder layer's weights, with q/k/v and gate/up fused into single GEMMs (fewer kernels per step)."""

    ln1: torch.Tensor
    w_qkv: torch.Tensor
    b_qkv: torch.Tensor
    w_o: torch.Tensor
    ln2: torch.Tensor
    w_gate_up: torch.Tensor
    w_down: torch.Tensor
    eps: float


def fuse_layer(layer) -> LayerWeights:
    """Concatenate a transformers Qwen2DecoderLayer's projections; the module's own parameters are re-pointed
    at slices of the fused tensors, so the weights exist once in memory and the module still works."""
    attn, mlp = layer.self_attn, layer.mlp
    projections = (attn.q_proj, attn.k_proj, attn.v_proj)
    w_qkv = concat_parameters([p.weight for p in projections])
    b_qkv = concat_parameters([p.bias for p in projections])
    w_gate_up = concat_parameters([mlp.gate_proj.weight, mlp.up_proj.weight])
    return LayerWeights(layer.input_layernorm.weight, w_qkv, b_qkv, attn.o_proj.weight, layer.post_attention_layernorm.weight,
                        w_gate_up, mlp.down_proj.weight, float(layer.input_layernorm.variance_epsilon))


def _linear(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None, gemv: bool) -> torch.Tensor:
    """x @ weight.T + bias. ``gemv`` (one row, compiled decode only): written as multiply + reduce over the
    input features, which Inductor emits as one bandwidth-bound kernel spread over every output row (the GEMM
    library's tiles leave most SMs idle for a single row) and fuses with what comes before and after.
    Accumulates in float32, like the GEMM."""
    if not gemv:
        return F.linear(x, weight, bias)
    out = (x.float().unsqueeze(-2) * weight.float()).sum(-1)
    if bias is not None:
        out = out + bias.float()
    return out.to(x.dtype)


def _attend_one(q: torch.Tensor, k_cache: torch.Tensor, v_cache: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Grouped-query attention of one query row q [1, heads, 1, d] over the cache [1, kv_heads, L, d] under
    ``mask`` [1, 1, 1, L], as plain reductions in float32 (compiled decode only) -> [1, heads, 1, d]."""
    _, heads, _, head_dim = q.shape
    kv_heads, length = k_cache.shape[1], k_cache.shape[2]
    q = q.reshape(kv_heads, heads // kv_heads, 1, head_dim).float()
    scores = (q * k_cache[0].float().unsqueeze(1)).sum(-1) * head_dim ** -0.5  # [kv, group, L]
    scores = scores.masked_fill(~mask.view(1, 1, length), float("-inf"))
    weights = scores.softmax(-1).unsqueeze(-1)  # [kv, group, L, 1]
    out = (weights * v_cache[0].float().unsqueeze(1)).sum(2)  # [kv, group, d]
    return out.reshape(1, heads, 1, head_dim).to(v_cache.dtype)


def decoder_layer(x: torch.Tensor, ln1: torch.Tensor, w_qkv: torch.Tensor, b_qkv: torch.Tensor, w_o: torch.Tensor,
                  ln2: torch.Tensor, w_gate_up: torch.Tensor, w_down: torch.Tensor, eps: float, k_cache: torch.Tensor,
                  v_cache: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, positions: torch.Tensor,
                  mask: torch.Tensor, heads: int, kv_heads: int, gemv: bool = False) -> torch.Tensor:
    """One Qwen2 decoder layer on x [1, q, H] at ``positions`` [q]; writes K/V of those positions into the layer's
    cache [1, kv_heads, max_len, head_dim] and attends over the whole cache under ``mask`` [1, 1, q, max_len].
    Plain tensors in, no objects: one compiled entry then serves every layer (guards see only shapes).
    ``gemv`` (q = 1 only): projections and attention as multiply + reduce (see ``_linear``)."""
    q_len = x.shape[1]
    head_dim = k_cache.shape[-1]
    h = _rms(x, ln1, eps)
    qkv = _linear(h, w_qkv, b_qkv, gemv)
    q, k, v = qkv.split([heads * head_dim, kv_heads * head_dim, kv_heads * head_dim], dim=-1)
    q = _rotate(q.view(1, q_len, heads, head_dim).transpose(1, 2), cos, sin)
    k = _rotate(k.view(1, q_len, kv_heads, head_dim).transpose(1, 2), cos, sin)
    k_cache.index_copy_(2, positions, k)
    v_cache.index_copy_(2, positions, v.view(1, q_len, kv_heads, head_dim).transpose(1, 2))
    if gemv:
        o = _attend_one(q, k_cache, v_cache, mask)
    else:
        o = F.scaled_dot_product_attention(q, k_cache, v_cache, attn_mask=mask, enable_gqa=True)
    x = x + _linear(o.transpose(1, 2).reshape(1, q_len, heads * head_dim), w_o, None, gemv)
    h = _rms(x, ln2, eps)
    gate, up = _linear(h, w_gate_up, None, gemv).chunk(2, dim=-1)
    return x + _linear(F.silu(gate) * up, w_down, None, gemv)


def decode_layer_gemv(*args) -> torch.Tensor:
    """``decoder_layer`` for the one-row decode step in its compiled form (``gemv=True``)."""
    return decoder_layer(*args, gemv=True)


class StaticQwenLM(StaticSpeechLM):
    """Drop-in for the runtime's LLM calls (``prefill``, ``decode_step``) on a Qwen2LM / CosyVoice3LM."""

    def __init__(self, lm, max_len: int = 512, prefill_buckets: tuple[int, ...] = (32, 64, 96, 128, 192, 256),
                 use_graphs: bool = True, pool=None, progress=None, compile_backend: str | None = None,
                 host_text_embeddings: bool | None = None,
                 decode_compile_options: dict | None = DECODE_COMPILE_OPTIONS,
                 sampling: RepetitionAwareSampler | None = None, decode_kernels: bool | None = None):
        backbone = lm.llm.model.model
        self.layers = [fuse_layer(layer) for layer in backbone.layers]
        self.final_norm = backbone.norm
        cfg = lm.llm.config
        self.heads = cfg.num_attention_heads
        self.kv_heads = cfg.num_key_value_heads
        self.head_dim = getattr(cfg, "head_dim", None) or cfg.hidden_size // self.heads
        self.hidden = cfg.hidden_size
        weight = lm.llm_decoder.weight
        self._init_generation(lm, weight.shape[0], max_len, weight.device, sampling)
        self.dtype = weight.dtype
        if host_text_embeddings is None:
            host_text_embeddings = self.device.type == "cuda"
        if host_text_embeddings:
            self._move_text_embeddings_to_host()
        self.prefill_buckets = [b for b in prefill_buckets if b <= max_len]
        shape = (len(self.layers), 1, self.kv_heads, max_len, self.head_dim)
        self.k_cache = torch.zeros(shape, device=self.device, dtype=self.dtype)
        self.v_cache = torch.zeros(shape, device=self.device, dtype=self.dtype)
        rotary = backbone.rotary_emb
        inv_freq = rotary.inv_freq.to(device=self.device, dtype=torch.float32)
        scale = float(getattr(rotary, "attention_scaling", 1.0) or 1.0)
        freqs = torch.outer(torch.arange(max_len, device=self.device, dtype=torch.float32), inv_freq)
        table = torch.cat([freqs, freqs], dim=-1)
        self.cos, self.sin = table.cos() * scale, table.sin() * scale
        self.key_positions = torch.arange(max_len, device=self.device)
        # one allocation for every bucket's input rows: a prefill rewrites its bucket's rows whole
        self.prefill_in = shared_prefix_views({b: (1, b, self.hidden) for b in self.prefill_buckets}, self.device,
                                              self.dtype)
        self.prefill_pos = {b: torch.arange(b, device=self.device) for b in self.prefill_buckets}
        self.table.bufs.update({f"prefill{b}": {"in": self.prefill_in[b], "positions": self.prefill_pos[b]}
                                for b in self.prefill_buckets})
        self.table.bufs["decode"] = {"k_cache": self.k_cache, "v_cache": self.v_cache}
        self.prefill_last = torch.zeros(1, dtype=torch.long, device=self.device)
        self.eager_prefills = 0
        # The decode step is the hot loop. With Triton on a GPU it runs the hand-written kernels of
        # ``decode_kernels.py`` (5 per layer; H200: see that module). Otherwise its layer is compiled where
        # Inductor is available, in the multiply + reduce form (``gemv``), which only pays once compiled;
        # uncompiled it is the plain layer.
        self.triton_decoder = self._make_triton_decoder(decode_kernels)
        self.decode_layer = None if self.triton_decoder is not None else compiled(
            decode_layer_gemv, self.device, dynamic=False, backend=compile_backend, options=decode_compile_options,
            eager=decoder_layer)
        # Prefill: the plain layer compiled once with a symbolic length, shared by every bucket (H200, bucket 64:
        # 3.1 -> 1.3 ms per prefill: RMSNorm, rotary and the residual adds fused).
        self.prefill_layer = compiled(decoder_layer, self.device, dynamic=True, backend=compile_backend)
        # the choice of the next id: with the decode kernels Triton kernels (``select_kernel.py``), else its ~25
        # small ops compiled (H200: 0.156 -> 0.078 ms per token); the Triton form also writes the next step's
        # input row and position, so the decode graph is the Triton kernels alone, each launched with PDL
        embed = None
        if self.triton_decoder is not None:
            from cosydesk.runtime.backends.cudagraph.select_kernel import Embed

            embed = Embed(lm.speech_embedding.weight, self.triton_decoder.x.view(self.hidden), self.position)
        self._choose_select(self.triton_decoder is not None, compile_backend, embed,
                            pdl=self.triton_decoder is not None and self.triton_decoder.uses_pdl)
        if use_graphs:
            self.capture(pool, progress)

    def _make_triton_decoder(self, wanted: bool | None):
        """The Triton decode step when ``wanted`` (None: on CUDA with Triton importable, unless
        ``COSYDESK_DECODE_KERNELS=0``) and the shapes suit it; else None (the compiled/plain layer)."""
        if wanted is None:
            wanted = decode_kernels_available(self.device)
        if not wanted:
            return None
        from cosydesk.runtime.backends.cudagraph import decode_kernels

        if not decode_kernels.supports(self.heads, self.kv_heads, self.head_dim):
            return None
        decoder = self.lm.llm_decoder
        built = []

        def build_and_step(pdl: bool | None):  # writes position 0 of the cache, which every prefill overwrites
            built[:] = [decode_kernels.TritonDecoder(
                self.layers, self.final_norm.weight, self.final_norm.variance_epsilon, decoder.weight, decoder.bias,
                self.heads, self.kv_heads, self.head_dim, decode_kernels.DecodeKernelConfig(pdl=pdl))]
            step = functools.partial(built[0].step, self.k_cache, self.v_cache, self.cos, self.sin, self.position,
                                     self.decode_logits)
            if self.device.type == "cuda":  # run once, then captured: PDL launches need driver support for graphs
                capture_graphs([("trial", step)], self.device)
            else:
                step()

        error = self._trial_run(lambda: build_and_step(None))
        if error and decode_kernels.pdl_available(self.device):
            pdl_error, error = error, self._trial_run(lambda: build_and_step(False))
            if not error:
                warnings.warn(f"programmatic dependent launch unavailable ({pdl_error}); the decode kernels use "
                              "plain launches", RuntimeWarning, stacklevel=3)
        if error:
            warnings.warn(f"Triton decode kernels unavailable ({error}); the LLM decode step uses the compiled "
                          "layer", RuntimeWarning, stacklevel=3)
            return None
        return built[0]

    def _move_text_embeddings_to_host(self) -> None:
        """The Qwen text table (151,936 x 896, 272 MB in float16) is read a few rows per sentence, at prefill:
        it stays in host memory and only the gathered rows travel. (Its tied ``lm_head`` is never evaluated.)"""
        lm = self.lm
        lm.llm.embed_tokens.to("cpu")
        lm.llm.model.lm_head.to("cpu")  # tied to the table (a no-op then), else a second unused copy
        plain = type(lm).embed_text
        device = self.device

        def embed_text_on_host(ids: torch.Tensor) -> torch.Tensor:
            return plain(lm, torch.as_tensor(ids).to("cpu")).to(device)

        lm.embed_text = embed_text_on_host  # instance attribute: lm_input() picks it up

    # --- math ------------------------------------------------------------------------------------------
    def forward(self, embeds: torch.Tensor, positions: torch.Tensor, layer_fn=decoder_layer) -> torch.Tensor:
        """Final-norm hidden states [1, q, H] of ``embeds`` [1, q, H] at ``positions`` [q]; writes the cache."""
        q_len = embeds.shape[1]
        mask = (self.key_positions.unsqueeze(0) <= positions.unsqueeze(1)).view(1, 1, q_len, self.max_len)
        cos = self.cos.index_select(0, positions).view(1, 1, q_len, self.head_dim)
        sin = self.sin.index_select(0, positions).view(1, 1, q_len, self.head_dim)
        x = embeds
        for i, w in enumerate(self.layers):
            x = layer_fn(x, w.ln1, w.w_qkv, w.b_qkv, w.w_o, w.ln2, w.w_gate_up, w.w_down, w.eps, self.k_cache[i],
                         self.v_cache[i], cos, sin, positions, mask, self.heads, self.kv_heads)
        return _rms(x, self.final_norm.weight, self.final_norm.variance_epsilon)

    def _decode_body(self) -> None:
        """One step: logits of ``token`` at ``position``, then the next id chosen into ``token`` and the
        position advanced (for ``generate_speech_tokens``; ``decode_step`` sets both from the host anyway)."""
        if self.triton_decoder is not None:
            if not self.select_embeds:  # else the previous choice wrote it
                self._embed_token()
            self.triton_decoder.step(self.k_cache, self.v_cache, self.cos, self.sin, self.position,
                                     self.decode_logits)
        else:
            table = self.lm.speech_embedding.weight
            hidden = self.forward(table.index_select(0, self.token).view(1, 1, self.hidden), self.position,
                                  self.decode_layer)
            self.decode_logits.copy_(self.lm.llm_decoder(hidden[0, -1]).float())
        self.select(self.decode_logits)
        if not self.select_embeds:
            self.position.add_(1)

    def _embed_token(self) -> None:
        row = self.triton_decoder.x.view(1, self.hidden)
        torch.index_select(self.lm.speech_embedding.weight, 0, self.token, out=row)

    def _prefill_body(self, bucket: int) -> None:
        hidden = self.forward(self.prefill_in[bucket], self.prefill_pos[bucket], self.prefill_layer)
        last = hidden[0].index_select(0, self.prefill_last)
        self.prefill_logits.copy_(self.lm.llm_decoder(last[0]).float())

    # --- capture ---------------------------------------------------------------------------------------
    def capture(self, pool=None, progress=None) -> None:
        jobs = [("decode", self._decode_body)]
        jobs += [(f"prefill{b}", functools.partial(self._prefill_body, b)) for b in self.prefill_buckets]
        self._capture(jobs, pool, progress)

    # --- runtime API (the rest: ``StaticSpeechLM``) ----------------------------------------------------
    @torch.inference_mode()
    def prefill(self, text, prompt_text, prompt_speech_token, embedding=None):
        self._after_previous_generation()
        embeds = self.lm.lm_input(text, prompt_text, prompt_speech_token, embedding).to(self.dtype)
        length = embeds.shape[1]
        bucket = bucket_for(length, self.prefill_buckets)
        self._prompt_fits(length)
        self._clear_cache_from(length)
        if f"prefill{bucket}" not in self.graphs:
            self.eager_prefills += 1
        if bucket is None:  # longer than every bucket: the plain layer on the exact length
            hidden = self.forward(embeds, torch.arange(length, device=self.device))
            self.prefill_logits.copy_(self.lm.llm_decoder(hidden[0, -1]).float())
        else:  # the bucket's graph, or (no graphs) the same body on the same buffers
            buf = self.prefill_in[bucket]
            buf[:, :length].copy_(embeds)
            buf[:, length:].zero_()
            self.prefill_last.fill_(length - 1)
            self._replay(f"prefill{bucket}", functools.partial(self._prefill_body, bucket))
        return self.prefill_logits, StaticDecodeState(length=length)
