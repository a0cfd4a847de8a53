"""Shape buckets shared by the cudagraph and TensorRT backends: geometric sets (padding waste bound, pick, profile)
and the graph backend's step lists (lookup, tiers, padding)."""

from __future__ import annotations

import pytest
import torch

from cosydesk.runtime.buckets import (FLOW_FRAME_BUCKETS, HIFT_MEL_BUCKETS, BucketSet, bucket_for, copy_padded,
                                     geometric_sizes, make_buckets, padding_waste, step_buckets, tiered_buckets)


@pytest.mark.parametrize("buckets", [FLOW_FRAME_BUCKETS, HIFT_MEL_BUCKETS, make_buckets("x", 4, 1000, 0.1, 8)])
def test_padding_waste_is_bounded(buckets: BucketSet):
    multiple = 16 if buckets.name != "x" else 8
    waste_bound = 0.25 if buckets.name != "x" else 0.1
    for n in range(1, buckets.largest + 1):
        bucket = buckets.pick(n)
        assert bucket >= n
        assert bucket - n <= max(waste_bound * n, multiple - 1), (n, bucket)


def test_sizes_are_sorted_multiples_and_cover_the_range():
    sizes = geometric_sizes(16, 3008, 0.25, 16)
    assert sizes[0] == 16 and sizes[-1] == 3008
    assert list(sizes) == sorted(set(sizes))
    assert all(s % 16 == 0 for s in sizes)
    assert len(sizes) < 30  # few buckets = few graphs to capture


def test_pick_and_profile():
    buckets = BucketSet("b", (16, 32, 64), typical=20)
    assert buckets.pick(1) == 16 and buckets.pick(16) == 16 and buckets.pick(17) == 32
    assert buckets.profile() == (16, 32, 64)
    assert BucketSet("b", (16, 32, 64)).profile() == (16, 32, 64)
    with pytest.raises(ValueError):
        buckets.pick(65)
    assert buckets.waste(17) == pytest.approx(15 / 17)


@pytest.mark.parametrize("sizes", [(), (32, 16), (0, 16), (16, 16)])
def test_bad_sizes_rejected(sizes):
    with pytest.raises(ValueError):
        BucketSet("bad", sizes)


def test_flow_profile_covers_buckets():
    lo, opt, hi = FLOW_FRAME_BUCKETS.profile()
    assert lo == FLOW_FRAME_BUCKETS.smallest and hi == FLOW_FRAME_BUCKETS.largest
    assert opt in FLOW_FRAME_BUCKETS.sizes and lo <= opt <= hi


def test_step_buckets_and_lookup():
    assert step_buckets(100, 32) == [32, 64, 96, 128]
    assert step_buckets(96, 32, start=64) == [64, 96]
    b = step_buckets(576, 32, start=64)
    assert bucket_for(1, b) == 64 and bucket_for(64, b) == 64 and bucket_for(65, b) == 96
    assert bucket_for(576, b) == 576 and bucket_for(577, b) is None
    with pytest.raises(ValueError):
        step_buckets(10, 0)


def test_tiered_buckets_cover_long_sentences():
    b = tiered_buckets(576, 32, 1408, 64, start=64)
    assert b[:17] == step_buckets(576, 32, start=64) and b[17:] == list(range(640, 1409, 64))
    assert bucket_for(577, b) == 640 and bucket_for(1408, b) == 1408 and bucket_for(1409, b) is None
    assert tiered_buckets(576, 32, 0, 64, start=64) == step_buckets(576, 32, start=64)
    assert tiered_buckets(288, 32, 704, 64) == step_buckets(288, 32) + [320, 384, 448, 512, 576, 640, 704]
    # every flow call of the bench's long corpus (20-token prompt, 25 tokens a second, characters / 4 seconds,
    # 2 frames a token) lands in a captured v2/v3 bucket
    from cosydesk.bench.inputs import read_corpus
    from cosydesk.runtime.backends.cudagraph.model import FLOW_LONG_MAX_FRAMES, FLOW_LONG_BUCKET_STEP, FLOW_MAX_FRAMES

    longest = max(len(t) for t in read_corpus("long"))
    frames = 2 * (20 + round(longest / 4 * 25))
    for version in ("v2", "v3"):
        buckets = tiered_buckets(FLOW_MAX_FRAMES[version], 32, FLOW_LONG_MAX_FRAMES[version], FLOW_LONG_BUCKET_STEP)
        assert bucket_for(frames, buckets) is not None, (version, frames)


def test_padding_waste_bounded_by_step():
    b = step_buckets(512, 32, start=32)
    lengths = list(range(40, 500, 7))
    assert 0 < padding_waste(lengths, b) < 32 / 40
    assert padding_waste([64, 96], b) == 0.0


def test_copy_padded_fills_tail():
    dst = torch.full((1, 2, 6), 7.0)
    copy_padded(dst, torch.ones(1, 2, 4))
    assert torch.equal(dst[..., :4], torch.ones(1, 2, 4)) and torch.equal(dst[..., 4:], torch.zeros(1, 2, 2))
    with pytest.raises(ValueError):
        copy_padded(dst, torch.ones(1, 2, 7))
