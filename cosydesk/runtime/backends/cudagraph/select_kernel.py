"""The decode graph's choice of the next speech token (``DeviceTokenSelector.body``) as two Triton kernels.

Why: compiled, the torch form is a chain of ~15 small kernels (softmax, an int64-key top-k, two running sums,
the fallback softmax, the window update) costing ~78 us per token on the H200. One program holding the whole
vocabulary took 27 us (25 rounds of "largest key below the last" over 8,192 keys on one SM, serial with the
decode step). Here the vocabulary is cut into slices, one program each, and a last program merges:

1. ``slice_top_kernel`` (one program per ``slice`` ids): scores = the logits in float32, the min-length ids at
   -inf while ``step < min_len``; the slice's max score, its sum of exp(score - max), whether all were finite,
   and its ``TOP_K`` best ids by score (ties: the lower id). The global top-k by probability is among these:
   probabilities follow the scores (exp is monotonic), and every id above a slice's k-th is in that slice's list.
2. ``merge_kernel`` (one program): the softmax from the slices' (max, sum) pairs, each candidate's probability;
   its bit pattern (monotonic for non-negative floats) packed with the reversed id into one int64 key, so keys
   are unique and descending key order is ``sort(descending=True, stable=True)``; ``TOP_K`` rounds of "largest
   key below the previous one" over the candidates only; the nucleus (``nucleus_keep_mask``) and the
   inverse-CDF pick with the step's first uniform; the repetition check over the window and, only when it
   fires, the fallback draw over the whole vocabulary but the pick (second uniform; the torch form computes it
   every step and selects); greedy / forced overrides, ``chosen`` = -1 when a logit was not finite, the window
   shifted, ``step`` + 1. With ``embed`` it also writes the chosen id's embedding row into the decode step's
   input and advances the position, which saves the decode graph two small torch kernels and their launch gaps.

H200, v2 full size (docs/bench/h200-v2-select-ab): the choice 27.8 -> 18.0 us; with the embedding folded in the
decode step (graph replays back to back) 484 -> 471.5 us, the LLM 0.518 -> 0.502 ms per token inside whole
sentences, sentence mean -1.3 %.

Same ids as the torch form (tests compare them step by step, in Triton's CPU interpreter and on the GPU), up
to float32 rounding: on the GPU ``tl.exp`` and the division are the fast approximate forms and the sums run in
another order, so a probability may differ from torch's in its last bits. That can move a draw when its uniform
lies within rounding of a bucket edge, or swap two entries whose probabilities are within a few ulps of each
other (ties of equal logits stay ties: the same input gives the same value).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import triton
import triton.language as tl

from cosydesk.runtime.backends.cudagraph.pdl import launch_args, pdl_start, pdl_wait


@triton.jit
def _inverse_cdf(weights, u, positions, in_range):
    """First position whose running sum of ``weights`` exceeds ``u`` x total, never one of zero weight."""
    running = tl.cumsum(weights, 0)
    total = tl.max(running, 0)  # the last running sum (a running sum of non-negative floats hardly decreases)
    index = tl.sum(((running <= u * total) & in_range).to(tl.int32), 0)
    last_positive = tl.max(tl.where((weights > 0) & in_range, positions, 0), 0)
    return tl.minimum(index, last_positive)


@triton.jit
def _score_keys(scores, ids, BLOCK_V: tl.constexpr):
    """int64 keys in the order of float32 ``scores`` (-0 counted as +0), equal scores: the lower id first."""
    bits = tl.where(scores == 0.0, 0.0, scores).to(tl.int32, bitcast=True).to(tl.int64)
    order = tl.where(bits >= 0, bits + 2147483648, -1 - bits)  # negative floats: larger magnitude, lower
    return order * BLOCK_V + (BLOCK_V - 1 - ids)


@triton.jit
def _key_score(keys, ID_BITS: tl.constexpr):
    """The float32 score a ``_score_keys`` key was made from."""
    order = keys >> ID_BITS
    bits = tl.where(order >= 2147483648, order - 2147483648, -1 - order)
    return bits.to(tl.int32).to(tl.float32, bitcast=True)


@triton.jit
def _largest_keys(keys, ranks, TOP_K: tl.constexpr, K_BLOCK: tl.constexpr):
    """The ``TOP_K`` largest of the non-negative int64 ``keys``, descending, in a [K_BLOCK] vector (-1 after)."""
    best = tl.full([K_BLOCK], -1, tl.int64)
    below = tl.max(keys, 0) + 1
    for r in range(TOP_K):
        below = tl.max(tl.where(keys < below, keys, -1), 0)
        best = tl.where(ranks == r, below, best)
    return best


@triton.jit
def slice_top_kernel(logits_ptr, length_masked_ptr, step_ptr, min_len_ptr, cand_ptr, stats_ptr, V,
                     SLICE: tl.constexpr, TOP_K: tl.constexpr, K_BLOCK: tl.constexpr, BLOCK_V: tl.constexpr,
                     PDL: tl.constexpr):
    s = tl.program_id(0)
    ids = s * SLICE + tl.arange(0, SLICE)
    valid = ids < V
    maskable = tl.load(length_masked_ptr + ids, mask=valid, other=0) != 0  # fixed at load: read before the wait
    pdl_wait(PDL)
    pdl_start(PDL)
    raw = tl.load(logits_ptr + ids, mask=valid, other=0.0).to(tl.float32)
    finite = tl.min(tl.where(valid, (tl.abs(raw) < float("inf")).to(tl.int32), 1), 0)
    banned = maskable & (tl.load(step_ptr) < tl.load(min_len_ptr))
    scores = tl.where(banned | ~valid, float("-inf"), raw)
    top = tl.max(scores, 0)
    total = tl.sum(tl.exp(scores - tl.where(top == float("-inf"), 0.0, top)), 0)  # a slice all banned: 0

    ranks = tl.arange(0, K_BLOCK)
    best = _largest_keys(tl.where(valid, _score_keys(scores, ids, BLOCK_V), -1), ranks, TOP_K, K_BLOCK)
    tl.store(cand_ptr + s * K_BLOCK + ranks, best)
    tl.store(stats_ptr + s * 4, top)
    tl.store(stats_ptr + s * 4 + 1, total)
    tl.store(stats_ptr + s * 4 + 2, finite.to(tl.float32))


@triton.jit
def merge_kernel(cand_ptr, stats_ptr, logits_ptr, length_masked_ptr, step_ptr, min_len_ptr, uniforms_ptr,
                 recent_ptr, forced_ptr, force_ptr, greedy_ptr, token_ptr, chosen_ptr, table_ptr, x_ptr, position_ptr,
                 V, n_slices, max_steps, top_p, repeat_threshold, table_rows, hidden,
                 NS_BLOCK: tl.constexpr, TOP_K: tl.constexpr, K_BLOCK: tl.constexpr, WIN: tl.constexpr,
                 WIN_BLOCK: tl.constexpr, BLOCK_V: tl.constexpr, ID_BITS: tl.constexpr, EMBED: tl.constexpr,
                 HIDDEN_BLOCK: tl.constexpr, PDL: tl.constexpr):
    pdl_wait(PDL)
    pdl_start(PDL)
    step = tl.load(step_ptr)
    index = tl.minimum(step, max_steps - 1)  # a dropped decode-ahead step may run past the last uniform
    u_pick = tl.load(uniforms_ptr + index * 2)
    u_fallback = tl.load(uniforms_ptr + index * 2 + 1)
    slots = tl.arange(0, WIN_BLOCK)
    recent = tl.load(recent_ptr + slots, mask=slots < WIN, other=-1)
    recent_next = tl.load(recent_ptr + slots + 1, mask=slots + 1 < WIN, other=-1)

    # the softmax's max and sum from the slices'
    sl = tl.arange(0, NS_BLOCK)
    in_slices = sl < n_slices
    tops = tl.load(stats_ptr + sl * 4, mask=in_slices, other=float("-inf"))
    totals = tl.load(stats_ptr + sl * 4 + 1, mask=in_slices, other=0.0)
    all_finite = tl.min(tl.load(stats_ptr + sl * 4 + 2, mask=in_slices, other=1.0), 0)
    top = tl.max(tops, 0)
    total = tl.sum(tl.where(tops > float("-inf"), totals * tl.exp(tops - top), 0.0), 0)

    # every slice's candidates, as probability keys
    c = tl.arange(0, NS_BLOCK * K_BLOCK)
    score_keys = tl.load(cand_ptr + c, mask=c < n_slices * K_BLOCK, other=-1)
    present = score_keys >= 0
    cand_ids = (BLOCK_V - 1) - (score_keys & (BLOCK_V - 1))
    probs = tl.exp(_key_score(score_keys, ID_BITS) - top) / total
    keys = tl.where(present, probs.to(tl.int32, bitcast=True).to(tl.int64) * BLOCK_V + (BLOCK_V - 1 - cand_ids), -1)

    ranks = tl.arange(0, K_BLOCK)
    best = _largest_keys(keys, ranks, TOP_K, K_BLOCK)
    exists = best >= 0
    top_ids = (BLOCK_V - 1) - (best & (BLOCK_V - 1))
    values = tl.where(exists, (best >> ID_BITS).to(tl.int32).to(tl.float32, bitcast=True), 0.0)

    # nucleus: kept while the mass before an entry is below top_p (exclusive running sum: the inclusive one
    # shifted by one rank, so the rounding is that of the inclusive sums, as in nucleus_keep_mask)
    inclusive = tl.cumsum(values, 0)
    exclusive = tl.sum(tl.where(ranks[None, :] == ranks[:, None] - 1, inclusive[None, :], 0.0), 1)
    in_top = (ranks < TOP_K) & exists
    weights = tl.where((exclusive < top_p) & in_top, values, 0.0)
    pick_rank = _inverse_cdf(weights, u_pick, ranks, in_top)
    pick = tl.sum(tl.where(ranks == pick_rank, top_ids, 0), 0)

    repeats = tl.sum(((recent == pick) & (slots < WIN)).to(tl.int32), 0)
    sampled = pick
    if repeats.to(tl.float32) >= repeat_threshold:  # everything but the pick, from the whole distribution
        ids = tl.arange(0, BLOCK_V)
        valid = ids < V
        raw = tl.load(logits_ptr + ids, mask=valid, other=0.0).to(tl.float32)
        maskable = tl.load(length_masked_ptr + ids, mask=valid, other=0) != 0
        scores = tl.where((maskable & (step < tl.load(min_len_ptr))) | ~valid | (ids == pick), float("-inf"), raw)
        e2 = tl.exp(scores - tl.max(scores, 0))
        sampled = _inverse_cdf(e2 / tl.sum(e2, 0), u_fallback, ids, valid).to(tl.int64)

    greedy = (BLOCK_V - 1) - (tl.max(score_keys, 0) & (BLOCK_V - 1))  # the best score, the lowest id of a tie
    choice = tl.where(tl.load(greedy_ptr) != 0, greedy, sampled)
    choice = tl.where(tl.load(force_ptr) != 0, tl.load(forced_ptr + index), choice)
    choice = tl.minimum(tl.maximum(choice, 0), V - 1)  # always a valid id (NaN logits draw nonsense)

    tl.debug_barrier()  # every thread has read the window and the step before any writes them
    tl.store(token_ptr, choice)
    tl.store(chosen_ptr, tl.where(all_finite != 0, choice, -1))
    tl.store(recent_ptr + slots, tl.where(slots == WIN - 1, choice, recent_next), mask=slots < WIN)
    tl.store(step_ptr, step + 1)
    if EMBED:  # the next decode step's input row, and its position
        cols = tl.arange(0, HIDDEN_BLOCK)
        row = tl.minimum(choice, table_rows - 1)
        tl.store(x_ptr + cols, tl.load(table_ptr + row * hidden + cols, mask=cols < hidden), mask=cols < hidden)
        tl.store(position_ptr, tl.load(position_ptr) + 1)


@dataclass(frozen=True)
class SelectConfig:
    """Ids per slice program, warps of a slice program and of the merge (powers of two). Defaults: the fastest
    of a sweep on the H200 (v2 vocabulary, 50 calls per graph, docs/bench/h200-v2-select-ab): 18.0 us a call
    (slices of 128 / 256 / 512 ids, 1 / 2 / 4 and 4 / 8 warps: 18.0-22.7 us; the one-program kernel 27.8 us)."""

    slice: int = 256
    slice_warps: int = 1
    merge_warps: int = 8


@dataclass
class Embed:
    """Where the merge writes the chosen id's embedding: ``table`` [rows, hidden] -> ``x`` [hidden], and the
    position scalar it advances."""

    table: torch.Tensor
    x: torch.Tensor
    position: torch.Tensor


class SelectScratch:
    """The slices' candidate keys and (max, sum, finite) statistics: static buffers, allocated once at load."""

    def __init__(self, vocab: int, top_k: int, device, config: SelectConfig = SelectConfig()):
        self.config = config
        self.slices = triton.cdiv(vocab, config.slice)
        self.k_block = triton.next_power_of_2(max(top_k, 2))
        self.candidates = torch.full((self.slices * self.k_block,), -1, dtype=torch.int64, device=device)
        self.stats = torch.zeros(self.slices, 4, dtype=torch.float32, device=device)


def supports(vocab: int, top_k: int, config: SelectConfig = SelectConfig()) -> bool:
    """Vocabularies the merge holds in registers for its fallback draw (float32 per id), top-k small enough for
    its K_BLOCK x K_BLOCK shift matrix and within one slice."""
    return 0 < top_k <= min(vocab, 128, config.slice) and vocab <= 16384


def select_next(selector, logits: torch.Tensor, scratch: SelectScratch | None = None, embed: Embed | None = None,
                pdl: bool = False) -> None:
    """``selector.body(logits)`` (a ``DeviceTokenSelector``) as two kernel launches; static shapes, capturable
    when ``scratch`` was made beforehand. ``embed``: also write the chosen id's embedding and advance the
    position (see the module doc)."""
    vocab = logits.shape[0]
    sampling = selector.sampling
    top_k = min(sampling.top_k, vocab)
    if scratch is None:
        scratch = SelectScratch(vocab, top_k, logits.device)
    cfg = scratch.config
    block_v = triton.next_power_of_2(vocab)
    win = selector.recent.shape[0]
    slice_top_kernel[(scratch.slices,)](
        logits, selector.length_masked, selector.step, selector.min_len, scratch.candidates, scratch.stats, vocab,
        SLICE=cfg.slice, TOP_K=top_k, K_BLOCK=scratch.k_block, BLOCK_V=block_v, num_warps=cfg.slice_warps,
        **launch_args(pdl))
    table, x, position = (embed.table, embed.x, embed.position) if embed else (logits, logits, selector.step)
    hidden = table.shape[1] if embed else 1
    merge_kernel[(1,)](
        scratch.candidates, scratch.stats, logits, selector.length_masked, selector.step, selector.min_len,
        selector.uniforms, selector.recent, selector.forced, selector.force, selector.greedy, selector.token,
        selector.chosen, table, x, position, vocab, scratch.slices, selector.max_steps, float(sampling.top_p),
        float(sampling.repeat_threshold), table.shape[0], hidden,
        NS_BLOCK=triton.next_power_of_2(scratch.slices), TOP_K=top_k, K_BLOCK=scratch.k_block, WIN=win,
        WIN_BLOCK=triton.next_power_of_2(max(win, 2)), BLOCK_V=block_v, ID_BITS=block_v.bit_length() - 1,
        EMBED=embed is not None, HIDDEN_BLOCK=triton.next_power_of_2(hidden), num_warps=cfg.merge_warps,
        **launch_args(pdl))
