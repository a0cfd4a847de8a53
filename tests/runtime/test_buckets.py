"""Shape buckets shared by the cudagraph and TensorRT backends: padding waste bound, pick, profile."""

from __future__ import annotations

import pytest

from cosydesk.runtime.buckets import FLOW_FRAME_BUCKETS, HIFT_MEL_BUCKETS, BucketSet, geometric_sizes, make_buckets


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
