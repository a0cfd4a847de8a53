"""The causal U-Net estimator (v2) on time-major rows: conv kernels for the resnets, no transposes.

``CausalConditionalDecoder.forward`` keeps [B, C, T] for its convs and transposes to [B, T, C] around every
stack of transformer blocks; each resnet is a dozen small kernels. ``RowCausalDecoder.forward`` computes the
same function on rows [B*T, C] throughout: every resnet is two ``conv_kernels.conv_rows`` calls, the 14
per-resnet time projections are one GEMM, and the transformer blocks (Triton kernels of ``flow_kernels`` when
those are on, else the module) read and write rows directly. Only the one-level layout of the released v2
model is handled (its resample convs keep the length); anything else keeps the module's forward.

``use_row_estimator`` switches an estimator after ``fuse.convs_as_gemm`` / ``flow_kernels.use_flow_kernels``:
it first runs the row form against the module on a random input (and captures it in a CUDA graph), trying
launch settings from fastest to most portable, and leaves the estimator alone with a warning if none works.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from cosydesk.model.norms import Fp32LayerNorm
from cosydesk.model.unet import (CausalConditionalDecoder, ConvNormMish, LeftPaddedConv1d, attention_allowed,
                                 sinusoidal_time_features)
from cosydesk.runtime.backends.cudagraph.capture import capture_graphs
from cosydesk.runtime.backends.cudagraph.conv_kernels import ChannelTiles, conv_rows, conv_taps
from cosydesk.runtime.backends.cudagraph.fuse import GemmConv1d
from cosydesk.runtime.backends.cudagraph.pdl import pdl_available
from cosydesk.runtime.backends.cudagraph.variants import first_working

# (frames per program, reduction chunk, warps). H200, one kernel in isolation at 2 x 128 frames, width 256
# (probe 21, us): block 1 (conv + LayerNorm + Mish + time add) 10.8, block 2 (+ 1x1 residual conv) 12.6 with
# this tile; 32 frames per program is slower (fewer programs, each streaming all weights), (16, 64, 8) and
# (16, 128, 8) within noise in the CFM step. The small tile fits GPUs with 64 KB of shared memory per block.
TUNED_CONV_TILE = (16, 64, 4)
SMALL_CONV_TILE = (16, 32, 4)
# the channel-tiled form (``conv_kernels`` docstring), fastest of 6 shapes in the CFM step graph (probe 33);
# tried first where PDL runs (its gain comes from loading the weights before the wait)
CHANNEL_TILES = ChannelTiles(block_t=16, block_c=64, warps=4)


def _causal_conv(conv) -> bool:
    """A stride-1 left-padded conv of kernel 3 with a bias, before or after ``convs_as_gemm``."""
    if type(conv) is LeftPaddedConv1d:
        left, right = conv.left_context, 0
    elif type(conv) is GemmConv1d:
        left, right = conv.pad_left, conv.pad_right
    else:
        return False
    k = conv.kernel_size[0]
    return (conv.bias is not None and left == k - 1 and right == 0 and conv.stride == (1,)
            and conv.dilation == (1,) and conv.groups == 1)


def _conv_norm_mish(block) -> bool:
    return (type(block) is ConvNormMish and _causal_conv(block.block[0])
            and type(block.block[2]) is Fp32LayerNorm and block.block[2].elementwise_affine)


def _resnets(estimator) -> list:
    """The U-Net's resnet blocks in forward order (down, mid, up)."""
    return [blocks[0] for group in (estimator.down_blocks, estimator.mid_blocks, estimator.up_blocks)
            for blocks in group]


def why_not_rows(estimator) -> str | None:
    """Why ``RowCausalDecoder`` cannot stand in for ``estimator``, or None when it can."""
    if type(estimator) is not CausalConditionalDecoder:
        return f"{type(estimator).__name__} is not the causal U-Net"
    if len(estimator.down_blocks) != 1 or len(estimator.up_blocks) != 1:
        return "more than one U-Net level (resample convs change the length)"
    for r in _resnets(estimator):
        if not (_conv_norm_mish(r.block1) and _conv_norm_mish(r.block2) and r.res_conv.kernel_size == (1,)
                and r.res_conv.bias is not None):
            return "a resnet block that is not causal conv + LayerNorm + Mish"
    resamples = [estimator.down_blocks[0][2], estimator.up_blocks[0][2]]
    if not all(_causal_conv(r) for r in resamples):
        return "resample convs that are not causal kernel-3 convs"
    if not _conv_norm_mish(estimator.final_block) or estimator.final_proj.kernel_size != (1,):
        return "an unexpected final block"
    if estimator.final_proj.bias is None:
        return "a final projection without bias"
    return None


class RowCausalDecoder(CausalConditionalDecoder):
    """``CausalConditionalDecoder`` computing on rows [B*T, C] (module docstring); set up by
    ``use_row_estimator``, which attaches the re-laid conv weights (``taps``) to the conv modules."""

    conv_tile = TUNED_CONV_TILE
    pdl = False

    def time_projections(self, t: torch.Tensor) -> torch.Tensor:
        """What every resnet adds after its first block, side by side [B, sum of widths], for flow times t [B]:
        the time embedding, then each resnet's Mish + Linear as one GEMM over the stacked weights."""
        time_emb = self.time_mlp(sinusoidal_time_features(t, self.in_channels).to(self.time_weight.dtype))
        return F.linear(F.mish(time_emb), self.time_weight, self.time_bias)

    def attention_mask(self, mask: torch.Tensor, streaming: bool) -> torch.Tensor:
        """The transformer blocks' key mask bool [B, T, T] for frame mask [B, 1, T]."""
        return attention_allowed(mask, self.static_chunk_size if streaming else 0)

    def forward(self, x, mask, mu, t, spks, cond, streaming: bool = False, times: torch.Tensor | None = None,
                allowed: torch.Tensor | None = None):
        """The module's forward on rows. ``times`` / ``allowed``: ``time_projections(t)`` and
        ``attention_mask(mask, streaming)`` computed by the caller (the graphed solver computes them once per
        step value / per request instead of inside every captured step)."""
        batch, _, frames = x.shape
        tile, pdl = self.conv_tile, self.pdl
        times = self.time_projections(t) if times is None else times
        allowed = self.attention_mask(mask, streaming) if allowed is None else allowed
        parts = [x, mu, spks.unsqueeze(-1).expand(-1, -1, frames), cond]
        hidden = torch.cat([p.transpose(1, 2) for p in parts], dim=2).reshape(batch * frames, -1)
        rows_mask = mask.reshape(batch * frames).contiguous()
        widths = [r.block1.block[0].out_channels for r in self.resnets]

        def resnet(index: int, rows: torch.Tensor) -> torch.Tensor:
            r = self.resnets[index]
            start = sum(widths[:index])
            b1, b2 = r.block1.block, r.block2.block
            mid = conv_rows(rows, rows_mask, batch, b1[0].taps, b1[0].bias, norm=b1[2],
                            add=times[:, start:start + widths[index]], tile=tile, pdl=pdl)
            return conv_rows(mid, rows_mask, batch, b2[0].taps, b2[0].bias, norm=b2[2],
                             res=(rows, r.res_conv.taps, r.res_conv.bias), tile=tile, pdl=pdl)

        def transformers(stack, rows: torch.Tensor) -> torch.Tensor:
            h = rows.view(batch, frames, -1)
            for block in stack:
                h = block(h, allowed)
            return h.reshape(batch * frames, -1)

        def plain_conv(conv, rows: torch.Tensor, mask_out: bool = False) -> torch.Tensor:
            return conv_rows(rows, rows_mask, batch, conv.taps, conv.bias, mask_out=mask_out, tile=tile, pdl=pdl)

        _, stack, resample = self.down_blocks[0]
        hidden = transformers(stack, resnet(0, hidden))
        skip = hidden
        hidden = plain_conv(resample, hidden)
        for i, (_, stack) in enumerate(self.mid_blocks):
            hidden = transformers(stack, resnet(1 + i, hidden))
        _, stack, resample = self.up_blocks[0]
        hidden = torch.cat([hidden, skip], dim=1)
        hidden = transformers(stack, resnet(len(self.resnets) - 1, hidden))
        hidden = plain_conv(resample, hidden)
        final = self.final_block.block
        hidden = conv_rows(hidden, rows_mask, batch, final[0].taps, final[0].bias, norm=final[2], tile=tile, pdl=pdl)
        out = plain_conv(self.final_proj, hidden, mask_out=True)
        return out.view(batch, frames, -1).transpose(1, 2)


def _attach_weights(estimator) -> None:
    """Re-laid conv weights on the conv modules (``taps``) and the resnets' time projections stacked into one
    weight (``time_weight`` / ``time_bias``) on the estimator: copies, a few MB, made once."""
    resnets = estimator.resnets = _resnets(estimator)
    convs = [c for r in resnets for c in (r.block1.block[0], r.block2.block[0], r.res_conv)]
    convs += [estimator.down_blocks[0][2], estimator.up_blocks[0][2], estimator.final_block.block[0],
              estimator.final_proj]
    for conv in convs:
        conv.taps = conv_taps(conv.weight)
    estimator.time_weight = torch.cat([r.mlp[1].weight.detach() for r in resnets], dim=0)
    estimator.time_bias = torch.cat([r.mlp[1].bias.detach() for r in resnets], dim=0)


def _detach_weights(estimator) -> None:
    """Drop what ``_attach_weights`` added (the switch did not happen)."""
    for module in estimator.modules():
        if "taps" in module.__dict__:
            del module.taps
    for name in ("resnets", "time_weight", "time_bias", "pdl", "conv_tile"):  # the trials set the last two
        estimator.__dict__.pop(name, None)


def use_row_estimator(estimator, frames: int = 96) -> bool:
    """Switch ``estimator`` (a ``CausalConditionalDecoder``) to ``RowCausalDecoder`` when it is supported and a
    trial run agrees with the module (module docstring); returns whether it was switched."""
    why = why_not_rows(estimator)
    if why is not None:
        return False
    param = estimator.final_proj.weight
    if param.device.type == "cuda" and param.dtype != torch.float16:
        return False  # float32: tl.dot would run at TF32 precision; bfloat16: never validated
    _attach_weights(estimator)
    pdl = pdl_available(param.device)
    variants = [(True, CHANNEL_TILES), (True, TUNED_CONV_TILE)] if pdl else []
    variants += [(False, TUNED_CONV_TILE), (False, SMALL_CONV_TILE)]
    chosen = first_working(variants, lambda pdl, tile: _trial(estimator, frames, pdl, tile), "estimator row kernels",
                           "the estimator keeps its module form")
    if chosen is None:
        _detach_weights(estimator)
        return False
    pdl, tile = chosen
    estimator.__class__ = RowCausalDecoder
    estimator.pdl, estimator.conv_tile = pdl, tile
    return True


def _trial(estimator, frames: int, pdl: bool, tile) -> str | None:
    """Why the row form with these launch settings cannot stand in for ``estimator``, or None when it can."""
    try:
        param = estimator.final_proj.weight
        mel = estimator.out_channels
        g = torch.Generator(device=param.device).manual_seed(0)
        rand = lambda *shape: torch.randn(*shape, device=param.device, generator=g).to(param.dtype)  # noqa: E731
        x, mu, cond, spks = rand(2, mel, frames), rand(2, mel, frames), rand(2, mel, frames), rand(2, mel)
        mask = torch.ones(2, 1, frames, device=param.device, dtype=param.dtype)
        mask[1, :, frames - frames // 4:] = 0
        t = torch.full((2,), 0.3, device=param.device, dtype=param.dtype)

        def rows_form():
            cls = estimator.__class__
            estimator.__class__ = RowCausalDecoder
            estimator.pdl, estimator.conv_tile = pdl, tile
            try:
                return estimator(x, mask, mu, t, spks, cond, streaming=True)
            finally:
                estimator.__class__ = cls

        with torch.inference_mode():
            ours = rows_form().float()
            ref = CausalConditionalDecoder.forward(estimator, x, mask, mu, t, spks, cond, streaming=True).float()
        error = float((ours - ref).abs().max() / ref.abs().max().clamp_min(1e-6))
        if not error < 5e-2:
            return f"row form disagrees with the module (relative error {error:.3g})"
        if param.device.type == "cuda":  # the launches must also be capturable (PDL needs driver support)
            capture_graphs([("trial", rows_form)], param.device)
    except Exception as exc:  # noqa: BLE001 - any failure means: try the next variant
        return f"{type(exc).__name__}: {exc}"[:300]
    return None
