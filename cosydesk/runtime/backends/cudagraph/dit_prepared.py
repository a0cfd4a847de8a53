"""v3's DiT estimator with its per-step inputs prepared outside the captured step: one CUDA graph per frame bucket
serves both attention modes, and the time-only weights leave the GPU.

``GraphedSampler`` treats an estimator with ``time_projections`` / ``attention_mask`` as *prepared* (v2's row
estimator is one). For the DiT, ``time_projections`` is every modulation the time decides: the time MLP, and
each block's AdaLN linear (6 x dim) and the output's (2 x dim) applied to it. The solver's 10 times are fixed, so
the sampler computes them once at load (a table of 10 x 2 x 137,216 values at full size, 5.5 MB) and then
``release_time_weights`` drops those linears: 139 M parameters, 0.28 GB of float16 that every CFM step read
to recompute the same values (23 matrix-vector products a step). When the model is placed for this backend
(``place_model``), ``prepare_dit_on_host`` does all of this on the host, so those weights never reach the GPU.
The attention mask (and the rotary table) are made once per request into per-bucket buffers, and since the only
difference between a streaming (chunk-causal) and a full-attention call is then the mask buffer's content, the
step is captured once per bucket instead of once per bucket and mode (v3: 60 -> 30 flow graphs; instantiated
graphs hold device memory outside torch's allocator). Same math as ``DiT.forward``: the same time embedding and
AdaLN products, the same ``attention_masks``.

Fewer kernels per block for the compiled step (~13 -> 9 a block, 22 blocks a CFM step; each costs a few
microseconds however small its work): q, k and v are one product of the three matrices stacked
(``FusedQKVAttention``, made on the host before the weights move); the boolean mask becomes its additive form once
per step instead of inside every block's attention; and each block's last residual (h + gate_mlp * ff) is added at
the start of the next block, where Inductor fuses it into that block's first LayerNorm (``ModulatedDiTBlock``).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from cosydesk.model.dit import AdaLayerNormZeroFinal, Attention, DiT, DiTBlock, attention_masks


class FusedQKVAttention(Attention):
    """``Attention`` whose q, k and v come from one product (``qkv``: the three weights stacked, [3*inner, dim]),
    one launch instead of three; ``fuse_qkv`` makes it from a plain one."""

    def forward(self, h: torch.Tensor, allowed: torch.Tensor, query_valid: torch.Tensor,
                rope: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
        q, k, v = self.qkv(h).chunk(3, dim=-1)
        return self.attend(q, k, v, allowed, query_valid, rope)


def fuse_qkv(attn: Attention) -> bool:
    """Turn ``attn`` into a ``FusedQKVAttention`` in place: ``qkv`` takes the stacked weights and biases and
    ``to_q`` / ``to_k`` / ``to_v`` go, so no weight is held twice. Returns False when it already was one."""
    if isinstance(attn, FusedQKVAttention):
        return False
    parts = (attn.to_q, attn.to_k, attn.to_v)
    # shaped on the meta device, then given the stacked tensors: no random init of 3 x inner x dim values to overwrite
    qkv = nn.Linear(parts[0].in_features, sum(p.out_features for p in parts), device="meta")
    grad = parts[0].weight.requires_grad
    with torch.no_grad():
        qkv.weight = nn.Parameter(torch.cat([p.weight for p in parts]), requires_grad=grad)
        qkv.bias = nn.Parameter(torch.cat([p.bias for p in parts]), requires_grad=grad)
    del attn.to_q, attn.to_k, attn.to_v
    attn.qkv = qkv
    attn.__class__ = FusedQKVAttention
    return True


class ModulatedDiTBlock(nn.Module):
    """A ``DiTBlock`` (held) called with its modulations ([B, 6*dim], ``attn_norm``'s output) instead of the time
    embedding, and with the previous block's last residual still to add: ``forward(h, fed, gate, ...)`` starts
    from h + gate * fed and returns this block's (h, fed), leaving its own h + gate_mlp * fed to the next one. A
    module of its own so that it is compiled like the plain block (``compile.ESTIMATOR_BLOCKS``)."""

    def __init__(self, block: DiTBlock):
        super().__init__()
        self.block = block

    def forward(self, h: torch.Tensor, fed: torch.Tensor, gate: torch.Tensor, modulation: torch.Tensor,
                allowed: torch.Tensor, query_valid: torch.Tensor,
                rope: tuple[torch.Tensor, torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
        h = h + gate[:, None, :] * fed
        return self.block.attend_and_feed(h, modulation.chunk(6, dim=-1), allowed, query_valid, rope)


class PreparedDiT(nn.Module):
    """``DiT`` (held, not copied) taking ``times`` (every time-decided modulation, ``time_projections``) and
    ``allowed`` (the attention mask [B, T, T] bool, ``attention_mask``) precomputed; without them it is the plain
    ``DiT.forward`` until ``release_time_weights``."""

    def __init__(self, dit: DiT):
        super().__init__()
        self.dit = dit
        self.released = False
        self._rope: dict[tuple[int, torch.device], tuple[torch.Tensor, torch.Tensor]] = {}
        self.blocks = nn.ModuleList(ModulatedDiTBlock(block) for block in dit.transformer_blocks)

    def __getattr__(self, name: str):
        try:
            return super().__getattr__(name)
        except AttributeError:
            return getattr(self._modules["dit"], name)

    @property
    def width(self) -> int:
        """Values of ``time_projections`` per batch row: 6 x dim per block, then the output's 2 x dim."""
        return (6 * len(self.dit.transformer_blocks) + 2) * self.dit.dim

    def time_projections(self, t: torch.Tensor) -> torch.Tensor:
        """t [B] -> [B, width]: each block's AdaLN linear and then the output's, applied to SiLU(time embedding)."""
        if self.released:
            raise RuntimeError("the DiT's time weights were released after its modulation table was built")
        dit = self.dit
        act = F.silu(dit.embed_time(t, t.shape[0]))
        parts = [block.attn_norm.linear(act) for block in dit.transformer_blocks]
        return torch.cat(parts + [dit.norm_out.linear(act)], dim=-1)

    def release_time_weights(self) -> int:
        """Drop the time MLP and the AdaLN linears (their outputs are in the caller's table); returns the parameters
        dropped. The DiT then runs only with ``times`` given."""
        dit = self.dit
        modules = [dit.time_embed, dit.norm_out.linear] + [block.attn_norm for block in dit.transformer_blocks]
        dropped = sum(p.numel() for m in modules for p in m.parameters())
        dit.time_embed = None
        dit.norm_out.linear = None
        for block in dit.transformer_blocks:
            block.attn_norm = None
        self.released = True
        return dropped

    def attention_mask(self, mask: torch.Tensor, streaming: bool) -> torch.Tensor:
        """Padding mask [B, 1, T] -> allowed [B, T, T] bool (query, key) as ``DiT.masks`` builds it. Called before
        the step is captured or replayed, so it also keeps the rotary table of T frames for the step to read."""
        frames = mask.shape[-1]
        if (frames, mask.device) not in self._rope:
            self._rope[frames, mask.device] = self.dit.rotary_embed(frames, mask.device)
        allowed, _ = attention_masks(mask, self.dit.static_chunk_size if streaming else 0)
        return allowed[:, 0]

    def forward(self, x: torch.Tensor, mask: torch.Tensor, mu: torch.Tensor, t: torch.Tensor, spks: torch.Tensor,
                cond: torch.Tensor, streaming: bool = False, times: torch.Tensor | None = None,
                allowed: torch.Tensor | None = None) -> torch.Tensor:
        dit = self.dit
        if times is None or allowed is None:
            if self.released:
                raise RuntimeError("the DiT's time weights were released: pass times= and allowed=")
            return self._plain(x, mask, mu, t, spks, cond, streaming)
        h = dit.embed_input(x, cond, mu, spks)
        full = allowed[:, None]  # [B, 1, T, T]
        query_valid = full[:, 0, -1, :, None]  # the last query row, where DiT reads the output mask
        # the mask's additive form, once: SDPA would otherwise convert the boolean one in every block
        additive = torch.zeros(full.shape, device=h.device, dtype=h.dtype).masked_fill_(~full, float("-inf"))
        frames = h.shape[1]
        rope = self._rope.get((frames, h.device)) or dit.rotary_embed(frames, h.device)
        dim = dit.dim
        per_block = 6 * dim
        # no residual is pending before the first block: gate 0 (h + 0 * 0 is h exactly), strided like the later
        # gates (slices of ``times``) so that every block hits the same compiled entry
        fed, gate = torch.zeros_like(h), torch.zeros_like(times)[:, :dim]
        for i, block in enumerate(self.blocks):
            modulation = times[:, i * per_block:(i + 1) * per_block]
            h, fed = block(h, fed, gate, modulation, additive, query_valid, rope)
            gate = modulation[:, 5 * dim:]  # gate_mlp, the sixth chunk
        h = h + gate[:, None, :] * fed
        final = AdaLayerNormZeroFinal.apply_modulation(h, times[:, len(dit.transformer_blocks) * per_block:])
        return dit.proj_out(final).transpose(1, 2)

    def _plain(self, x, mask, mu, t, spks, cond, streaming: bool) -> torch.Tensor:
        """``DiT.forward`` with the blocks' modulations computed from the time embedding."""
        return self.forward(x, mask, mu, t, spks, cond, times=self.time_projections(t.reshape(-1).expand(x.shape[0])),
                            allowed=self.attention_mask(mask, streaming))


def use_prepared_dit(sampler) -> bool:
    """Wrap ``sampler.estimator`` in ``PreparedDiT`` when it is the plain ``DiT``, its blocks' q/k/v fused
    (``fuse_qkv``, where the weights are: on the host when ``prepare_dit_on_host`` calls it); returns whether it
    did."""
    if type(sampler.estimator) is not DiT:
        return False
    for block in sampler.estimator.transformer_blocks:
        fuse_qkv(block.attn)
    sampler.estimator = PreparedDiT(sampler.estimator)
    return True


def prepare_dit_on_host(sampler, dtype: torch.dtype) -> bool:
    """Before the flow moves to the GPU: wrap a plain DiT (``use_prepared_dit``), build its modulation table for the
    solver's times here (float32 math, kept as ``host_time_table`` in ``dtype``, a buffer that moves with the module)
    and drop the time weights, so they never reach the GPU. Released there instead, the 22 AdaLN matrices (12.6 MB
    each at full size) left holes between the weights kept around them that the allocator never returned (~0.23 GB
    of v3's reserved memory, H200 wave 6). Returns whether it prepared one."""
    from cosydesk.model.cfm import cosine_time_grid

    if not use_prepared_dit(sampler):
        return False
    estimator = sampler.estimator
    grid = cosine_time_grid(sampler.n_steps, device=torch.device("cpu"), dtype=torch.float32)
    # each step's t as the graphed solver passes it (rounded to the model dtype), the products in float32
    times = [grid[s].expand(2).to(dtype).float() for s in range(sampler.n_steps)]
    with torch.inference_mode():
        table = torch.stack([estimator.time_projections(t) for t in times]).to(dtype)
    estimator.register_buffer("host_time_table", table.clone())  # out of inference mode: a plain buffer
    estimator.release_time_weights()
    return True
