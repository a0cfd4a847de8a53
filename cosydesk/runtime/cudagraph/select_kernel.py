"""The decode graph's choice of the next speech token (``DeviceTokenSelector.body``) as one Triton program.

Why: compiled, the torch form is a chain of ~15 small kernels (softmax, an int64-key top-k, two running sums,
the fallback softmax, the window update) costing ~78 us per token on the H200, an eighth of a decode step. Here
one program holds the whole vocabulary in registers and does the same steps in order:

1. scores: the logits in float32, the min-length ids at -inf while ``step < min_len``;
2. probabilities: softmax (float32);
3. stable top-k: each probability's bit pattern (monotonic for non-negative floats) packed with its reversed id
   into one int64 key, so keys are unique and descending key order is ``sort(descending=True, stable=True)``;
   ``TOP_K`` rounds of "largest key below the previous one";
4. nucleus (``nucleus_keep_mask``) and the inverse-CDF pick with the step's first uniform;
5. the repetition check over the window; only when it fires, the fallback draw over everything but the pick
   (second uniform) - the torch form computes it every step and selects;
6. greedy / forced overrides, ``chosen`` = -1 when a logit was not finite, the window shifted, ``step`` + 1.

Same ids as the torch form (tests compare them step by step, in Triton's CPU interpreter and on the GPU), up
to float32 rounding: on the GPU ``tl.exp`` and the division are the fast approximate forms and the sums run in
another order, so a probability may differ from torch's in its last bits. That can move a draw when its uniform
lies within rounding of a bucket edge, or swap two entries whose probabilities are within a few ulps of each
other (ties of equal logits stay ties: the same input gives the same value).
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl


@triton.jit
def _inverse_cdf(weights, u, positions, in_range):
    """First position whose running sum of ``weights`` exceeds ``u`` x total, never one of zero weight."""
    running = tl.cumsum(weights, 0)
    total = tl.max(running, 0)  # the last running sum (a running sum of non-negative floats hardly decreases)
    index = tl.sum(((running <= u * total) & in_range).to(tl.int32), 0)
    last_positive = tl.max(tl.where((weights > 0) & in_range, positions, 0), 0)
    return tl.minimum(index, last_positive)


@triton.jit
def select_kernel(logits_ptr, length_masked_ptr, step_ptr, min_len_ptr, uniforms_ptr, recent_ptr, forced_ptr,
                  force_ptr, greedy_ptr, token_ptr, chosen_ptr, V, max_steps, top_p, repeat_threshold,
                  TOP_K: tl.constexpr, K_BLOCK: tl.constexpr, WIN: tl.constexpr, WIN_BLOCK: tl.constexpr,
                  BLOCK_V: tl.constexpr, ID_BITS: tl.constexpr):
    ids = tl.arange(0, BLOCK_V)
    valid = ids < V
    step = tl.load(step_ptr)
    index = tl.minimum(step, max_steps - 1)  # a dropped decode-ahead step may run past the last uniform
    u_pick = tl.load(uniforms_ptr + index * 2)
    u_fallback = tl.load(uniforms_ptr + index * 2 + 1)
    slots = tl.arange(0, WIN_BLOCK)
    recent = tl.load(recent_ptr + slots, mask=slots < WIN, other=-1)
    recent_next = tl.load(recent_ptr + slots + 1, mask=slots + 1 < WIN, other=-1)

    raw = tl.load(logits_ptr + ids, mask=valid, other=0.0).to(tl.float32)
    all_finite = tl.min(tl.where(valid, (tl.abs(raw) < float("inf")).to(tl.int32), 1), 0)
    banned_for_length = (tl.load(length_masked_ptr + ids, mask=valid, other=0) != 0) & (step < tl.load(min_len_ptr))
    scores = tl.where(banned_for_length | (ids >= V), float("-inf"), raw)

    top = tl.max(scores, 0)
    e = tl.exp(scores - top)
    probs = e / tl.sum(e, 0)
    keys = tl.where(valid, probs.to(tl.int32, bitcast=True).to(tl.int64) * BLOCK_V + (BLOCK_V - 1 - ids), -1)

    ranks = tl.arange(0, K_BLOCK)
    best = tl.full([K_BLOCK], -1, tl.int64)
    below = tl.max(keys, 0) + 1
    for r in range(TOP_K):
        below = tl.max(tl.where(keys < below, keys, -1), 0)
        best = tl.where(ranks == r, below, best)
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
        banned = tl.where(ids == pick, float("-inf"), scores)
        e2 = tl.exp(banned - tl.max(banned, 0))
        sampled = _inverse_cdf(e2 / tl.sum(e2, 0), u_fallback, ids, valid).to(tl.int64)

    choice = tl.where(tl.load(greedy_ptr) != 0, tl.argmax(scores, 0).to(tl.int64), sampled)
    choice = tl.where(tl.load(force_ptr) != 0, tl.load(forced_ptr + index), choice)
    choice = tl.minimum(tl.maximum(choice, 0), V - 1)  # always a valid id (NaN logits draw nonsense)

    tl.debug_barrier()  # every thread has read the window and the step before any writes them
    tl.store(token_ptr, choice)
    tl.store(chosen_ptr, tl.where(all_finite != 0, choice, -1))
    tl.store(recent_ptr + slots, tl.where(slots == WIN - 1, choice, recent_next), mask=slots < WIN)
    tl.store(step_ptr, step + 1)


def supports(vocab: int, top_k: int) -> bool:
    """Vocabularies the one-program kernel holds in registers (float32 + int64 keys per id), and top-k small
    enough for its K_BLOCK x K_BLOCK shift matrix and TOP_K passes over the vocabulary."""
    return 0 < top_k <= min(vocab, 128) and vocab <= 16384


def select_next(selector, logits: torch.Tensor, warps: int = 8) -> None:
    """``selector.body(logits)`` (a ``DeviceTokenSelector``) as one kernel launch; static shapes, capturable."""
    vocab = logits.shape[0]
    sampling = selector.sampling
    block_v = triton.next_power_of_2(vocab)
    win = selector.recent.shape[0]
    select_kernel[(1,)](
        logits, selector.length_masked, selector.step, selector.min_len, selector.uniforms, selector.recent,
        selector.forced, selector.force, selector.greedy, selector.token, selector.chosen, vocab,
        selector.max_steps, float(sampling.top_p), float(sampling.repeat_threshold),
        TOP_K=min(sampling.top_k, vocab), K_BLOCK=triton.next_power_of_2(max(sampling.top_k, 2)), WIN=win,
        WIN_BLOCK=triton.next_power_of_2(max(win, 2)), BLOCK_V=block_v, ID_BITS=block_v.bit_length() - 1,
        num_warps=warps)
