"""v1's speech LM (``TransformerLM``: a wenet TransformerEncoder decoded one token at a time) over a static KV
cache, its decode step captured in a CUDA graph.

Why: decoded by the module itself (its cache grows every step, so no graph), v1's LLM is ~25 small kernels per
layer launched from Python: 9.7 ms per token on the H200, slower than real time for streaming. Here the step has
static shapes: the key/value cache is preallocated for ``max_len`` positions, the query at position p attends
over all of them with keys > p masked, and the relative-position term is looked up instead of sliced:

    score(p, j) = [(q + u) . k_j + (q + v) . W_pos e(p - j)] / sqrt(d_k)

``W_pos e(r)`` (``linear_pos`` of the ESPnet table) is projected once at load for r = 0..max_len-1, in the model
dtype as the module does per call; the step computes (q + v) against every r and gathers r = p - j per key.
Everything else is the module's math in the same order and dtype (LayerNorm statistics in float32, scores in the
model dtype, softmax in float32). The layer is compiled once for all layers where Inductor runs (multiply +
reduce form, see ``qwen._linear``). The cache is sized for the longest request the app accepts; each step
attends over the smallest bucket of cache rows that holds its position.

Prefill (text encoder + the prompt through the body) is captured per length bucket too (``prefill_buckets``):
eagerly its 20 layers of small kernels are launched from Python, 23 ms per sentence on the H200 (3.6 ms as
graphs). A prompt of L positions runs at the smallest bucket B >= L, padded at the end. Padding is invisible to
the L real rows: the text encoder masks the padded keys (and is causal, as configured), the body is causal, and
relative positions depend only on query - key distance (read from tables owned here, sized for the largest
bucket: the modules' own tables may be regrown by eager calls, which would leave a graph reading freed memory).
The body's keys/values go straight into cache rows 0..B-1; rows L.. are cleared after, as every prefill does.
The sequence [sos, speaker, text, task, prompt speech] is assembled on the device by one index_select, so one
graph serves every split of a bucket between text and prompt. Longer prompts run the module eagerly.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from cosydesk.model.norms import fp32_layer_norm
from cosydesk.model.positional import EspnetRelPositionalEncoding
from cosydesk.model.sampling import RepetitionAwareSampler
from cosydesk.model.transformer import TransformerEncoder
from cosydesk.runtime.backends.cudagraph.compile import compile_enabled, compiled
from cosydesk.runtime.backends.cudagraph.fuse import concat_parameters
from cosydesk.runtime.backends.cudagraph.qwen import DECODE_COMPILE_OPTIONS, _linear
from cosydesk.runtime.backends.cudagraph.static_lm import StaticDecodeState, StaticSpeechLM

_ACTIVATIONS = {nn.ReLU: "relu", nn.SiLU: "silu", nn.GELU: "gelu"}

# Prefill lengths captured (positions: sos, speaker, prompt text + text, task, prompt speech tokens). v1's
# tokens run at 50 Hz: 64 holds a built-in voice's sentence or the bench's 20-token prompt with one, 512 a ~9 s
# voice prompt; longer ones run the module. The 512 bucket's attention temporaries (relative-position scores,
# tens of MB) live in the LLM's graph pool.
PREFILL_BUCKETS = (64, 96, 128, 192, 256, 384, 512)


def supports(lm) -> str | None:
    """Why ``lm`` cannot be decoded here, or None: a pre-norm TransformerEncoder body with a known activation."""
    body = getattr(lm, "llm", None)
    if type(body) is not TransformerEncoder:
        return f"the LM body is a {type(body).__name__}, not a TransformerEncoder"
    if not body.normalize_before:
        return "post-norm encoder layers"
    activation = body.encoders[0].feed_forward.activation
    if type(activation) not in _ACTIVATIONS or getattr(activation, "approximate", "none") != "none":
        return f"feed-forward activation {activation}"
    return None


@dataclass
class RelPosLayerWeights:
    """One encoder layer's tensors, q/k/v as one projection; ``positions`` [heads, max_len, d_k] = linear_pos of
    relative positions 0..max_len-1."""

    norm1_w: torch.Tensor
    norm1_b: torch.Tensor
    w_qkv: torch.Tensor
    b_qkv: torch.Tensor
    w_out: torch.Tensor
    b_out: torch.Tensor
    bias_u: torch.Tensor
    bias_v: torch.Tensor
    positions: torch.Tensor
    norm2_w: torch.Tensor
    norm2_b: torch.Tensor
    w_1: torch.Tensor
    b_1: torch.Tensor
    w_2: torch.Tensor
    b_2: torch.Tensor
    eps1: float
    eps2: float

    def tensors(self, length: int) -> tuple[torch.Tensor, ...]:
        """The layer's arguments of ``rel_pos_decode_layer``, relative positions up to ``length``."""
        return (self.norm1_w, self.norm1_b, self.w_qkv, self.b_qkv, self.w_out, self.b_out, self.bias_u,
                self.bias_v, self.positions[:, :length], self.norm2_w, self.norm2_b, self.w_1, self.b_1, self.w_2,
                self.b_2)


def layer_weights(layer, position_table: torch.Tensor) -> RelPosLayerWeights:
    """The tensors of a TransformerEncoderLayer; its q/k/v weights are re-pointed at slices of one fused tensor
    (held once). ``position_table`` [1, max_len, d]: the ESPnet encodings of relative positions 0..max_len-1."""
    attn = layer.self_attn
    projections = (attn.linear_q, attn.linear_k, attn.linear_v)
    w_qkv = concat_parameters([p.weight for p in projections])
    b_qkv = torch.cat([p.bias if p.bias is not None else torch.zeros_like(p.weight[:, 0]) for p in projections])
    ff = layer.feed_forward
    return RelPosLayerWeights(
        layer.norm1.weight, layer.norm1.bias, w_qkv, b_qkv, attn.linear_out.weight, attn.linear_out.bias,
        attn.pos_bias_u.data, attn.pos_bias_v.data, attn.project_positions(position_table)[0].contiguous(),
        layer.norm2.weight, layer.norm2.bias, ff.w_1.weight, ff.w_1.bias, ff.w_2.weight, ff.w_2.bias,
        float(layer.norm1.eps), float(layer.norm2.eps))


def _activate(x: torch.Tensor, name: str) -> torch.Tensor:
    if name == "relu":
        return F.relu(x)
    if name == "silu":
        return F.silu(x)
    return F.gelu(x)


def rel_pos_decode_layer(x: torch.Tensor, norm1_w, norm1_b, w_qkv, b_qkv, w_out, b_out, bias_u, bias_v, positions,
                         norm2_w, norm2_b, w_1, b_1, w_2, b_2, k_cache: torch.Tensor, v_cache: torch.Tensor,
                         position: torch.Tensor, relative: torch.Tensor, visible: torch.Tensor, heads: int,
                         activation: str, eps1: float, eps2: float, gemv: bool = False) -> torch.Tensor:
    """One pre-norm encoder layer for the row x [1, D] at ``position`` [1]: writes its key/value into the caches
    [heads, L, d_k] and attends over all L under ``visible`` [L] (keys <= position); ``relative`` [L] = position -
    key, clamped at 0. ``gemv``: products as multiply + reduce (compiled form, see ``qwen._linear``)."""
    width = x.shape[-1]
    d_k = width // heads
    h = fp32_layer_norm(x, norm1_w.shape, norm1_w, norm1_b, eps1)
    q, k, v = _linear(h, w_qkv, b_qkv, gemv).view(3, heads, d_k).unbind(0)
    k_cache.index_copy_(1, position, k.unsqueeze(1))
    v_cache.index_copy_(1, position, v.unsqueeze(1))
    # the module's rounding points: both score terms in the model dtype, summed and scaled there, softmax in f32
    if gemv:
        content = ((q + bias_u).float().unsqueeze(1) * k_cache.float()).sum(-1).to(x.dtype)
        by_distance = ((q + bias_v).float().unsqueeze(1) * positions.float()).sum(-1).to(x.dtype)
    else:
        content = torch.matmul((q + bias_u).unsqueeze(1), k_cache.transpose(1, 2)).squeeze(1)  # [heads, L]
        by_distance = torch.matmul((q + bias_v).unsqueeze(1), positions.transpose(1, 2)).squeeze(1)
    scores = (content + by_distance.gather(1, relative.expand(heads, -1))) / math.sqrt(d_k)
    weights = torch.softmax(scores.masked_fill(~visible, float("-inf")).float(), dim=-1).to(v_cache.dtype)
    if gemv:
        context = (weights.float().unsqueeze(-1) * v_cache.float()).sum(1).to(x.dtype)
    else:
        context = torch.matmul(weights.unsqueeze(1), v_cache).squeeze(1)  # [heads, d_k]
    x = x + _linear(context.reshape(1, width), w_out, b_out, gemv)
    h = fp32_layer_norm(x, norm2_w.shape, norm2_w, norm2_b, eps2)
    return x + _linear(_activate(_linear(h, w_1, b_1, gemv), activation), w_2, b_2, gemv)


def rel_pos_decode_layer_gemv(*args) -> torch.Tensor:
    """``rel_pos_decode_layer`` in its compiled form (``gemv=True``)."""
    return rel_pos_decode_layer(*args, gemv=True)


class StaticTransformerLM(StaticSpeechLM):
    """Drop-in for the runtime's LLM calls (``prefill``, ``decode_step``, ``generate_speech_tokens``) on a v1
    ``TransformerLM`` (see ``supports``)."""

    def __init__(self, lm, max_len: int = 512, use_graphs: bool = True, pool=None, progress=None,
                 compile_backend: str | None = None, sampling: RepetitionAwareSampler | None = None,
                 attention_buckets: tuple[int, ...] = (512, 1024, 2048),
                 prefill_buckets: tuple[int, ...] = PREFILL_BUCKETS):
        why_not = supports(lm)
        if why_not:
            raise ValueError(f"static decoding of this v1 LM is not supported: {why_not}")
        decoder = lm.llm_decoder.weight
        self._init_generation(lm, decoder.shape[0], max_len, decoder.device, sampling)
        self.dtype = decoder.dtype
        body = lm.llm
        attn = body.encoders[0].self_attn
        self.heads, self.d_k = attn.h, attn.d_k
        self.activation = _ACTIVATIONS[type(body.encoders[0].feed_forward.activation)]
        table = body.embed.pos_enc.non_negative(max_len, self.device, self.dtype)  # [1, max_len, D], 0 first
        with torch.inference_mode():
            self.layers = [layer_weights(layer, table) for layer in body.encoders]
        shape = (len(self.layers), self.heads, max_len, self.d_k)
        self.k_cache = torch.zeros(shape, device=self.device, dtype=self.dtype)
        self.v_cache = torch.zeros(shape, device=self.device, dtype=self.dtype)
        self.key_positions = torch.arange(max_len, device=self.device)
        self.table.bufs["decode"] = {"k_cache": self.k_cache, "v_cache": self.v_cache}
        # the step attends over the first L cache rows, L the smallest bucket past the position: a cache sized
        # for 30 s prompts costs a short request nothing (one graph per L, all in the same pool)
        self.attention_lengths = sorted({b for b in attention_buckets if b < max_len} | {max_len})
        self.decode_jobs = [(f"decode{n}", functools.partial(self._decode_body, n)) for n in self.attention_lengths]
        self.decode_layer = compiled(rel_pos_decode_layer_gemv, self.device, dynamic=False, backend=compile_backend,
                                     options=DECODE_COMPILE_OPTIONS, eager=rel_pos_decode_layer)
        self._choose_select(compile_enabled(self.device), compile_backend)
        self.padded_prefill = PaddedPrefill(self, [b for b in sorted(prefill_buckets) if b <= max_len])
        if use_graphs:
            self.capture(pool, progress)

    def _decode_job(self, position: int):
        return next(job for n, job in zip(self.attention_lengths, self.decode_jobs) if position < n)

    def _decode_body(self, length: int) -> None:
        """Logits of ``token`` at ``position`` (< ``length``: the cache rows attended over), then the next id
        chosen into ``token`` and the position advanced."""
        lm = self.lm
        table = lm.speech_embedding.weight
        # eos (id 4096) has no embedding row; decode-ahead still runs one step on it, whose result is dropped
        x = lm.llm.embed(table.index_select(0, self.token.clamp(max=table.shape[0] - 1)))  # [1, D]
        keys = self.key_positions[:length]
        relative = (self.position - keys).clamp(min=0)
        visible = keys <= self.position
        for i, w in enumerate(self.layers):
            x = self.decode_layer(x, *w.tensors(length), self.k_cache[i, :, :length], self.v_cache[i, :, :length],
                                  self.position, relative, visible, self.heads, self.activation, w.eps1, w.eps2)
        self.decode_logits.copy_(lm.llm_decoder(lm.llm.after_norm(x)[0]).float())
        self.select(self.decode_logits)
        self.position.add_(1)

    def capture(self, pool=None, progress=None) -> None:
        self._capture(self.decode_jobs + self.padded_prefill.jobs(), pool, progress)

    def prefill(self, text, prompt_text, prompt_speech_token, embedding=None):
        """Fill the static cache with the prompt; (logits of its last position [V] float32, state)."""
        return self.padded_prefill(text, prompt_text, prompt_speech_token, embedding)

    @torch.inference_mode()
    def module_prefill(self, text, prompt_text, prompt_speech_token, embedding=None):
        """The module's own prefill (text encoder + prompt through the body, eager), its keys/values copied into
        the static cache; the module's cache is dropped afterwards. For prompts longer than every bucket."""
        self._after_previous_generation()
        logits, state = self.lm.prefill(text, prompt_text, prompt_speech_token,
                                        embedding if embedding is not None else torch.zeros(0))
        length = state.cache.offset
        self._prompt_fits(length)
        self._clear_cache_from(length)
        for i, layer_cache in enumerate(state.cache.layers):
            self.k_cache[i, :, :length].copy_(layer_cache.keys[0, :, :length])
            self.v_cache[i, :, :length].copy_(layer_cache.values[0, :, :length])
        self.prefill_logits.copy_(logits)
        return self.prefill_logits, StaticDecodeState(length=length)


class _CacheRows:
    """Stands in for a layer's ``LayerKVCache`` during the padded prefill: the keys/values of positions
    0..B-1 are written straight into that layer's rows of the static cache."""

    def __init__(self, keys: torch.Tensor, values: torch.Tensor):
        self.keys, self.values = keys, values  # [heads, max_len, d_k]

    def update(self, keys: torch.Tensor, values: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        n = keys.shape[2]
        self.keys[:, :n].copy_(keys[0])
        self.values[:, :n].copy_(values[0])
        return self.keys[:, :n].unsqueeze(0), self.values[:, :n].unsqueeze(0)


class PaddedPrefill:
    """v1's prefill on static buffers, one graph per bucket (see the module docstring); callable as
    ``StaticTransformerLM.prefill``."""

    def __init__(self, owner: StaticTransformerLM, buckets: list[int]):
        self.owner = owner
        self.buckets = buckets
        lm, device = owner.lm, owner.device
        largest = buckets[-1] if buckets else 1
        self.text_positions = EspnetRelPositionalEncoding(lm.text_encoder.output_size(), initial_positions=largest)
        self.body_positions = EspnetRelPositionalEncoding(lm.llm.output_size(), initial_positions=largest)
        spk_dim = lm.spk_embed_affine_layer.in_features
        # per bucket B, one int64 host->device copy: text ids [B], prompt speech ids [B], order [B], text length, last
        self.ids = {b: torch.zeros(3 * b + 2, dtype=torch.long, device=device) for b in buckets}
        self.speaker = torch.zeros(1, spk_dim, dtype=owner.dtype, device=device)
        self.causal = {b: torch.ones(b, b, dtype=torch.bool, device=device).tril().unsqueeze(0) for b in buckets}
        owner.table.bufs.update({f"prefill{b}": {"ids": self.ids[b], "causal": self.causal[b]} for b in buckets})
        self.eager_calls = 0

    def jobs(self) -> list:
        return [(f"prefill{b}", functools.partial(self._body, b)) for b in self.buckets]

    def _body(self, bucket: int) -> None:
        """Logits of the last prompt position and cache rows 0..bucket-1, from the bucket's buffers."""
        owner, lm = self.owner, self.owner.lm
        ids = self.ids[bucket]
        text, speech, order = ids[:bucket], ids[bucket:2 * bucket], ids[2 * bucket:3 * bucket]
        text_length, last = ids[3 * bucket:3 * bucket + 1], ids[3 * bucket + 1:]
        embedded = lm.text_embedding(text).unsqueeze(0)
        positions = self.text_positions.relative(bucket, bucket, owner.device, embedded.dtype)
        xs, _ = lm.text_encoder(embedded, text_length, decoding_chunk_size=1, pos_emb=positions)
        encoded = lm.text_encoder_affine_layer(xs)[0]  # [B, D]
        table = lm.llm_embedding.weight
        speaker = lm.spk_embed_affine_layer(F.normalize(self.speaker, dim=1))
        rows = torch.cat([table[lm.sos_row:lm.sos_row + 1], speaker, encoded,
                          table[lm.task_id_row:lm.task_id_row + 1], lm.speech_embedding(speech)])
        body = lm.llm
        x = body.embed(rows.index_select(0, order).unsqueeze(0))
        positions = self.body_positions.relative(bucket, bucket, owner.device, x.dtype)
        for i, layer in enumerate(body.encoders):
            x = layer(x, self.causal[bucket], positions, kv_cache=_CacheRows(owner.k_cache[i], owner.v_cache[i]))
        if body.normalize_before:
            x = body.after_norm(x)
        owner.prefill_logits.copy_(lm.llm_decoder(x[0].index_select(0, last)[0]).float())

    @torch.inference_mode()
    def __call__(self, text, prompt_text, prompt_speech_token, embedding=None):
        owner = self.owner
        all_text = torch.cat([torch.as_tensor(prompt_text).reshape(1, -1), torch.as_tensor(text).reshape(1, -1)], 1)
        speech = torch.as_tensor(prompt_speech_token).reshape(-1)
        has_speaker = embedding is not None and torch.as_tensor(embedding).numel() > 0
        n_text, n_speech = all_text.shape[1], speech.shape[0]
        length = 2 + int(has_speaker) + n_text + n_speech
        bucket = next((b for b in self.buckets if b >= length), None)
        if bucket is None or (owner.graphs and f"prefill{bucket}" not in owner.graphs):
            self.eager_calls += 1
            return owner.module_prefill(text, prompt_text, prompt_speech_token, embedding)
        owner._prompt_fits(length)
        owner._after_previous_generation()
        # source rows: sos 0, speaker 1, text 2.., task 2 + B, prompt speech 3 + B..
        order = [0] + ([1] if has_speaker else []) + list(range(2, 2 + n_text)) + [2 + bucket]
        order += list(range(3 + bucket, 3 + bucket + n_speech))
        host = torch.zeros(3 * bucket + 2, dtype=torch.long)
        host[:n_text] = all_text[0].to(torch.long)
        host[bucket:bucket + n_speech] = speech.to(torch.long)
        host[2 * bucket:2 * bucket + length] = torch.tensor(order)
        host[3 * bucket], host[3 * bucket + 1] = n_text, length - 1
        self.ids[bucket].copy_(host)
        if has_speaker:
            self.speaker.copy_(torch.as_tensor(embedding).reshape(1, -1))
        owner._replay(f"prefill{bucket}", functools.partial(self._body, bucket))
        owner._clear_cache_from(length)
        return owner.prefill_logits, StaticDecodeState(length=length)

