"""Triton kernel for the causal estimator's convolutions on time-major rows: a resnet half in one kernel.

Why (H200, v2 CFM step at bucket 128, profile of probe 19 at f6c8922): the 14 resnet blocks of a step were 13
kernels each (~50 us: shifted-copy kernel + cuBLAS GEMM per conv, LayerNorm as two reductions, Mish, the
time MLP, the 1x1 residual conv, transposes between the [B, C, T] convs and the [B, T, C] transformers), a
third of the 2.2 ms step. Here activations stay rows [B*T, C] and one kernel computes, for a tile of frames and
every output channel (LayerNorm needs whole rows):

    out = [mish(LN(conv(x * mask) + bias)) * mask] + add[b] + [res_conv(res_x * mask) + res_bias]

with each bracket optional (``norm``, ``add``, ``res``): ``ConvNormMish`` + time projection is one call
(block 1 of a resnet), ``ConvNormMish`` + the residual 1x1 conv another (block 2), a plain causal conv (the
resample conv) or the masked 1x1 output projection a third form. The conv is left-padded (causal): frame t
sees frames t-k+1..t of its own batch row.

Numerics follow ``cosydesk.model.unet`` in float16: float32 accumulation and LayerNorm statistics, float16
at the module boundaries (conv output before the bias add, normed values, Mish, mask, each sum).

The channel-tiled form (``ChannelTiles``; where PDL runs, ``row_estimator`` tries it first) splits a conv with
LayerNorm in two kernels: ``conv_taps_kernel`` computes the conv (and the residual 1x1 conv) for a tile of
frames x output channels, every tap's weights loaded before the previous kernel is awaited, one product per
tap; ``norm_rows_kernel`` then takes whole rows for LayerNorm + Mish + mask + time add + residual. One more
kernel per conv, but ~16x more programs sharing the weights: H200, CFM step graph (probe 33), 1.64 -> 1.49 ms
at bucket 128 and 1.88 -> 1.70 ms at 256 (64-channel tiles of 16 frames, 4 warps).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import triton
import triton.language as tl

from cosydesk.runtime.backends.cudagraph.pdl import launch_args, pdl_start, pdl_wait


@triton.jit
def _round(x, dtype):
    """x rounded to the model dtype and back to float32 (where the module stores an intermediate)."""
    return x.to(dtype).to(tl.float32)


@triton.jit
def _mish(y):
    """y * tanh(softplus(y)) in float32, with exp only: tanh(log(1 + e)) = n / (n + 2) for n = e (e + 2), e = exp(y),
    which keeps its precision for very negative y (no 1 - 2/(...) cancellation); y itself past 20, as torch's
    softplus threshold."""
    e = tl.exp(tl.minimum(y, 20.0))
    n = e * (e + 2.0)
    return tl.where(y > 20.0, y, y * n / (n + 2.0))


@triton.jit
def _norm_mish(h, cmask, gamma, beta, eps, COUT: tl.constexpr, dtype: tl.constexpr):
    """mish(LayerNorm(h)) over the COUT valid channels of float32 rows h, rounded where the module stores."""
    mean = tl.sum(tl.where(cmask[None, :], h, 0.0), 1) / COUT
    centred = tl.where(cmask[None, :], h - mean[:, None], 0.0)
    rstd = 1.0 / tl.sqrt(tl.sum(centred * centred, 1) / COUT + eps)
    h = _round(centred * rstd[:, None] * gamma[None, :] + beta[None, :], dtype)
    return _round(_mish(h), dtype)


@triton.jit
def conv_rows_kernel(x_ptr, mask_ptr, w_ptr, bias_ptr, ln_w_ptr, ln_b_ptr, add_ptr, add_stride, rx_ptr, rw_ptr,
                     rb_ptr, out_ptr, T, eps, CIN: tl.constexpr, CRES: tl.constexpr, COUT: tl.constexpr,
                     KS: tl.constexpr, NORM: tl.constexpr, HAS_ADD: tl.constexpr, HAS_RES: tl.constexpr,
                     MASK_OUT: tl.constexpr, BLOCK_T: tl.constexpr, BLOCK_C: tl.constexpr, BLOCK_K: tl.constexpr,
                     PDL: tl.constexpr):
    """One (frame tile, batch row, channel tile): rows x [B*T, CIN], mask [B*T], taps w [KS, CIN, COUT], res
    weight rw [CRES, COUT], out [B*T, COUT]; with NORM, BLOCK_C >= COUT (LayerNorm takes whole rows)."""
    pdl_start(PDL)
    pdl_wait(PDL)  # the loops load weights and inputs together: wait first
    b = tl.program_id(1)
    t = tl.program_id(0) * BLOCK_T + tl.arange(0, BLOCK_T)
    c = tl.program_id(2) * BLOCK_C + tl.arange(0, BLOCK_C)
    cmask = c < COUT
    kk = tl.arange(0, BLOCK_K)
    dtype = out_ptr.dtype.element_ty
    acc = tl.zeros([BLOCK_T, BLOCK_C], dtype=tl.float32)
    for j in tl.static_range(KS):
        src = t + j - (KS - 1)  # left padding: tap j of frame t reads frame t - (KS - 1) + j
        ok = (src >= 0) & (src < T)
        m = tl.load(mask_ptr + b * T + src, mask=ok, other=0.0)
        for k0 in range(0, CIN, BLOCK_K):
            ks = k0 + kk
            a = tl.load(x_ptr + (b * T + src)[:, None] * CIN + ks[None, :], mask=ok[:, None] & (ks[None, :] < CIN),
                        other=0.0)
            a = a * m[:, None].to(a.dtype)  # the module convolves x * mask (0/1: exact)
            w = tl.load(w_ptr + (j * CIN + ks)[:, None] * COUT + c[None, :],
                        mask=(ks[:, None] < CIN) & cmask[None, :], other=0.0)
            acc = tl.dot(a, w, acc)
    bias = tl.load(bias_ptr + c, mask=cmask, other=0.0).to(tl.float32)
    if KS == 1:  # a plain 1x1 Conv1d adds its bias before its one rounding
        h = _round(acc + bias[None, :], dtype)
    else:  # a kernel-3 conv runs as GemmConv1d (fuse.py): product rounded, then the bias added
        h = _round(_round(acc, dtype) + bias[None, :], dtype)
    tmask = t < T
    mrow = tl.load(mask_ptr + b * T + t, mask=tmask, other=0.0).to(tl.float32)
    if NORM:
        gamma = tl.load(ln_w_ptr + c, mask=cmask, other=0.0).to(tl.float32)
        beta = tl.load(ln_b_ptr + c, mask=cmask, other=0.0).to(tl.float32)
        h = _norm_mish(h, cmask, gamma, beta, eps, COUT, dtype)
    if MASK_OUT:
        h = _round(h * mrow[:, None], dtype)
    if HAS_ADD:
        add = tl.load(add_ptr + b * add_stride + c, mask=cmask, other=0.0).to(tl.float32)
        h = _round(h + add[None, :], dtype)
    if HAS_RES:
        racc = tl.zeros([BLOCK_T, BLOCK_C], dtype=tl.float32)
        for k0 in range(0, CRES, BLOCK_K):
            ks = k0 + kk
            a = tl.load(rx_ptr + (b * T + t)[:, None] * CRES + ks[None, :],
                        mask=tmask[:, None] & (ks[None, :] < CRES), other=0.0)
            a = a * mrow[:, None].to(a.dtype)
            w = tl.load(rw_ptr + ks[:, None] * COUT + c[None, :], mask=(ks[:, None] < CRES) & cmask[None, :],
                        other=0.0)
            racc = tl.dot(a, w, racc)
        rbias = tl.load(rb_ptr + c, mask=cmask, other=0.0).to(tl.float32)
        h = _round(h + _round(racc + rbias[None, :], dtype), dtype)
    tl.store(out_ptr + (b * T + t)[:, None] * COUT + c[None, :], h.to(dtype), mask=tmask[:, None] & cmask[None, :])


@triton.jit
def _tap_input(x_ptr, mask_ptr, b, t, T, j: tl.constexpr, ks, CIN: tl.constexpr, KS: tl.constexpr):
    """Tap j's input rows for frames t of batch row b: x[t - (KS - 1) + j] * mask, zero outside [0, T)."""
    src = t + j - (KS - 1)
    ok = (src >= 0) & (src < T)
    m = tl.load(mask_ptr + b * T + src, mask=ok, other=0.0)
    a = tl.load(x_ptr + (b * T + src)[:, None] * CIN + ks[None, :], mask=ok[:, None] & (ks[None, :] < CIN), other=0.0)
    return a * m[:, None].to(a.dtype)


@triton.jit
def conv_taps_kernel(x_ptr, mask_ptr, w_ptr, bias_ptr, rx_ptr, rw_ptr, rb_ptr, h_ptr, r_ptr, T, CIN: tl.constexpr,
                     CRES: tl.constexpr, COUT: tl.constexpr, KS: tl.constexpr, HAS_RES: tl.constexpr,
                     CIN_P2: tl.constexpr, CRES_P2: tl.constexpr, BLOCK_T: tl.constexpr, BLOCK_C: tl.constexpr,
                     PDL: tl.constexpr):
    """One (frame tile, batch row, channel tile) of the channel-tiled form (KS 1 or 3): h = the conv of x * mask
    + bias, rounded as ``conv_rows_kernel`` rounds it, and with HAS_RES r = the masked 1x1 residual conv + its
    bias. Every weight the program needs is loaded before ``pdl_wait``."""
    pdl_start(PDL)
    b = tl.program_id(1)
    t = tl.program_id(0) * BLOCK_T + tl.arange(0, BLOCK_T)
    c = tl.program_id(2) * BLOCK_C + tl.arange(0, BLOCK_C)
    cmask = c < COUT
    ks = tl.arange(0, CIN_P2)
    wmask = (ks[:, None] < CIN) & cmask[None, :]
    w0 = tl.load(w_ptr + ks[:, None] * COUT + c[None, :], mask=wmask, other=0.0)
    if KS == 3:
        w1 = tl.load(w_ptr + (CIN + ks)[:, None] * COUT + c[None, :], mask=wmask, other=0.0)
        w2 = tl.load(w_ptr + (2 * CIN + ks)[:, None] * COUT + c[None, :], mask=wmask, other=0.0)
    bias = tl.load(bias_ptr + c, mask=cmask, other=0.0).to(tl.float32)
    if HAS_RES:
        rk = tl.arange(0, CRES_P2)
        rw = tl.load(rw_ptr + rk[:, None] * COUT + c[None, :], mask=(rk[:, None] < CRES) & cmask[None, :], other=0.0)
        rbias = tl.load(rb_ptr + c, mask=cmask, other=0.0).to(tl.float32)
    pdl_wait(PDL)  # weights and biases are constant: loaded before the input is awaited
    dtype = h_ptr.dtype.element_ty
    acc = tl.dot(_tap_input(x_ptr, mask_ptr, b, t, T, 0, ks, CIN, KS), w0)
    if KS == 3:
        acc = tl.dot(_tap_input(x_ptr, mask_ptr, b, t, T, 1, ks, CIN, KS), w1, acc)
        acc = tl.dot(_tap_input(x_ptr, mask_ptr, b, t, T, 2, ks, CIN, KS), w2, acc)
        h = _round(_round(acc, dtype) + bias[None, :], dtype)
    else:
        h = _round(acc + bias[None, :], dtype)
    tmask = t < T
    omask = tmask[:, None] & cmask[None, :]
    tl.store(h_ptr + (b * T + t)[:, None] * COUT + c[None, :], h.to(dtype), mask=omask)
    if HAS_RES:
        mrow = tl.load(mask_ptr + b * T + t, mask=tmask, other=0.0)
        a = tl.load(rx_ptr + (b * T + t)[:, None] * CRES + rk[None, :], mask=tmask[:, None] & (rk[None, :] < CRES),
                    other=0.0)
        r = _round(tl.dot(a * mrow[:, None].to(a.dtype), rw) + rbias[None, :], dtype)
        tl.store(r_ptr + (b * T + t)[:, None] * COUT + c[None, :], r.to(dtype), mask=omask)


@triton.jit
def norm_rows_kernel(h_ptr, mask_ptr, ln_w_ptr, ln_b_ptr, add_ptr, add_stride, r_ptr, out_ptr, T, eps,
                     COUT: tl.constexpr, HAS_ADD: tl.constexpr, HAS_RES: tl.constexpr, BLOCK_T: tl.constexpr,
                     BLOCK_C: tl.constexpr, PDL: tl.constexpr):
    """out = [mish(LN(h)) * mask] + add[b] + r on whole rows (BLOCK_C >= COUT), rounded as ``conv_rows_kernel``."""
    pdl_start(PDL)
    c = tl.arange(0, BLOCK_C)
    cmask = c < COUT
    gamma = tl.load(ln_w_ptr + c, mask=cmask, other=0.0).to(tl.float32)
    beta = tl.load(ln_b_ptr + c, mask=cmask, other=0.0).to(tl.float32)
    pdl_wait(PDL)
    b = tl.program_id(1)
    t = tl.program_id(0) * BLOCK_T + tl.arange(0, BLOCK_T)
    tmask = t < T
    omask = tmask[:, None] & cmask[None, :]
    dtype = out_ptr.dtype.element_ty
    h = tl.load(h_ptr + (b * T + t)[:, None] * COUT + c[None, :], mask=omask, other=0.0).to(tl.float32)
    mrow = tl.load(mask_ptr + b * T + t, mask=tmask, other=0.0).to(tl.float32)
    h = _round(_norm_mish(h, cmask, gamma, beta, eps, COUT, dtype) * mrow[:, None], dtype)
    if HAS_ADD:
        add = tl.load(add_ptr + b * add_stride + c, mask=cmask, other=0.0).to(tl.float32)
        h = _round(h + add[None, :], dtype)
    if HAS_RES:
        r = tl.load(r_ptr + (b * T + t)[:, None] * COUT + c[None, :], mask=omask, other=0.0).to(tl.float32)
        h = _round(h + r, dtype)
    tl.store(out_ptr + (b * T + t)[:, None] * COUT + c[None, :], h.to(dtype), mask=omask)


@dataclass(frozen=True)
class ChannelTiles:
    """Launch shape of the channel-tiled form: frames and output channels per program, warps."""

    block_t: int = 16
    block_c: int = 64
    warps: int = 4


def conv_taps(weight: torch.Tensor) -> torch.Tensor:
    """A Conv1d weight [COUT, CIN, k] as the kernel reads it: [k, CIN, COUT] contiguous (a copy)."""
    return weight.detach().permute(2, 1, 0).contiguous()


def conv_rows(x: torch.Tensor, mask: torch.Tensor, batch: int, taps: torch.Tensor, bias: torch.Tensor,
              norm: torch.nn.LayerNorm | None = None, add: torch.Tensor | None = None,
              res: tuple[torch.Tensor, torch.Tensor, torch.Tensor] | None = None, mask_out: bool = False,
              tile: tuple[int, int, int] | ChannelTiles = (16, 64, 4), block_c: int | None = None,
              pdl: bool = False) -> torch.Tensor:
    """The fused conv (module docstring) of rows ``x`` [batch*T, CIN] under ``mask`` [batch*T] (0/1, x's dtype)
    -> [batch*T, COUT]. ``taps``: ``conv_taps`` of the conv weight; ``norm``: LayerNorm + Mish + mask after it;
    ``add``: [batch, COUT] added after that (any row stride); ``res``: (rows [batch*T, CRES], taps [1, CRES,
    COUT], bias) of a masked 1x1 conv added last; ``mask_out``: multiply by the mask (implied by ``norm``).
    ``tile``: frames per program, reduction chunk, warps; ``block_c``: output channels per program (without
    ``norm`` only; default all). A ``ChannelTiles`` tile takes the channel-tiled form (module docstring) for the
    kernel-1/3 convs with a norm and for plain ones; the masked projection and other combinations keep the
    fused kernel at the same frames and warps."""
    rows, cin = x.shape
    ks, tap_in, cout = taps.shape
    if tap_in != cin or rows % batch or mask.numel() != rows or not x.is_contiguous():
        raise ValueError(f"conv_rows: rows {tuple(x.shape)}, taps {tuple(taps.shape)}, mask {tuple(mask.shape)}, "
                         f"batch {batch} do not fit (contiguous rows [B*T, CIN], taps [k, CIN, COUT])")
    frames = rows // batch
    rx, rw, rb = res if res is not None else (x, taps, bias)
    if res is not None and (rw.shape[0] != 1 or rw.shape[2] != cout or rx.shape[0] != rows):
        raise ValueError(f"conv_rows: residual rows {tuple(rx.shape)} / taps {tuple(rw.shape)} do not fit")
    if isinstance(tile, ChannelTiles):
        plain = add is None and res is None and not mask_out
        if ks in (1, 3) and (norm is not None or plain):
            return _channel_tiled(x, mask, batch, taps, bias, norm, add, res, tile, pdl)
        tile = (tile.block_t, 64, tile.warps)
    out = torch.empty(rows, cout, device=x.device, dtype=x.dtype)
    block_t, block_k, warps = tile
    ln_w, ln_b, eps = (norm.weight, norm.bias, float(norm.eps)) if norm is not None else (bias, bias, 0.0)
    # tl.dot takes tiles of at least 16 on a GPU
    block_c = max(16, triton.next_power_of_2(cout)) if norm is not None or block_c is None else block_c
    grid = (triton.cdiv(frames, block_t), batch, triton.cdiv(cout, block_c))
    conv_rows_kernel[grid](x, mask, taps, bias, ln_w, ln_b, add if add is not None else bias,
                           add.stride(0) if add is not None else 0, rx, rw, rb, out, frames, eps, CIN=cin,
                           CRES=rx.shape[1], COUT=cout, KS=ks, NORM=norm is not None, HAS_ADD=add is not None,
                           HAS_RES=res is not None, MASK_OUT=mask_out or norm is not None, BLOCK_T=block_t,
                           BLOCK_C=block_c, BLOCK_K=block_k, num_warps=warps,
                           **launch_args(pdl))
    return out


def _channel_tiled(x: torch.Tensor, mask: torch.Tensor, batch: int, taps: torch.Tensor, bias: torch.Tensor,
                   norm: torch.nn.LayerNorm | None, add: torch.Tensor | None,
                   res: tuple[torch.Tensor, torch.Tensor, torch.Tensor] | None, tile: ChannelTiles,
                   pdl: bool) -> torch.Tensor:
    """``conv_rows`` in the channel-tiled form: ``conv_taps_kernel``, then (with ``norm``) ``norm_rows_kernel``."""
    rows, cin = x.shape
    ks, _, cout = taps.shape
    frames = rows // batch
    h = torch.empty(rows, cout, device=x.device, dtype=x.dtype)
    r = torch.empty(rows, cout, device=x.device, dtype=x.dtype) if res is not None else h
    rx, rw, rb = res if res is not None else (x, taps, bias)
    grid = (triton.cdiv(frames, tile.block_t), batch, triton.cdiv(cout, tile.block_c))
    conv_taps_kernel[grid](x, mask, taps, bias, rx, rw, rb, h, r, frames, CIN=cin, CRES=rx.shape[1], COUT=cout, KS=ks,
                           HAS_RES=res is not None, CIN_P2=max(16, triton.next_power_of_2(cin)),
                           CRES_P2=max(16, triton.next_power_of_2(rx.shape[1])), BLOCK_T=tile.block_t,
                           BLOCK_C=tile.block_c, num_warps=tile.warps, **launch_args(pdl))
    if norm is None:
        return h
    out = torch.empty(rows, cout, device=x.device, dtype=x.dtype)
    norm_rows_kernel[(triton.cdiv(frames, tile.block_t), batch)](
        h, mask, norm.weight, norm.bias, add if add is not None else bias, add.stride(0) if add is not None else 0, r,
        out, frames, float(norm.eps), COUT=cout, HAS_ADD=add is not None, HAS_RES=res is not None,
        BLOCK_T=tile.block_t, BLOCK_C=max(16, triton.next_power_of_2(cout)), num_warps=4, **launch_args(pdl))
    return out
