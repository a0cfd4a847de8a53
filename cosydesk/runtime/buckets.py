"""Shape buckets shared by the compiled backends (CUDA graphs, TensorRT): the one bucket module.

A compiled module only runs a fixed set of lengths: a request of n frames is padded up to the smallest bucket
>= n (the padding is masked out), and a length above the largest bucket has no graph / engine (callers fall
back to eager). Two ways to make the lists:
- step lists (``step_buckets``, ``tiered_buckets``): multiples of a step, fine where most calls land and coarse
  past that; the CUDA-graph backend captures one graph per entry (``bucket_for`` picks, ``copy_padded`` pads);
- geometric ``BucketSet``s (``make_buckets``), whose padding waste stays bounded: for every n in [1, max],
  ``pick(n) - n <= max(max_waste * n, multiple - 1)``; a TensorRT optimisation profile is (smallest, a typical
  one, largest) of such a set, and the graph backend's padded HiFT graphs use ``HIFT_MEL_BUCKETS``.

What this module must not do: import torch or TensorRT (``copy_padded`` only calls tensor methods); it is plain
integer arithmetic shared by both backends.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import torch


# --------------------------------------------------------------------------------------------------------
# step lists (CUDA graphs)
# --------------------------------------------------------------------------------------------------------
def step_buckets(max_len: int, step: int, start: int | None = None) -> list[int]:
    """Multiples of ``step`` from ``start`` (default ``step``) up to the first one >= ``max_len``."""
    if step <= 0 or max_len <= 0:
        raise ValueError("step and max_len must be positive")
    first = start if start is not None else step
    out = list(range(first, max_len + step, step))
    while len(out) > 1 and out[-2] >= max_len:
        out.pop()
    return out


def tiered_buckets(short_max: int, step: int, long_max: int, long_step: int, start: int | None = None) -> list[int]:
    """``step_buckets(short_max, step, start)`` then multiples of ``long_step`` past it up to ``long_max``: fine
    buckets where most calls land (little padding) and coarse ones for long sentences (fewer graphs; the
    padding is a smaller share of a long call)."""
    out = step_buckets(short_max, step, start)
    if long_max > out[-1]:
        if long_step <= 0:
            raise ValueError("long_step must be positive")
        first = (out[-1] // long_step + 1) * long_step
        out += step_buckets(long_max, long_step, start=first)
    return out


def bucket_for(length: int, buckets: list[int]) -> int | None:
    """The smallest bucket >= length, or None when the length is above every bucket."""
    i = bisect.bisect_left(buckets, length)
    return buckets[i] if i < len(buckets) else None


def padding_waste(lengths: list[int], buckets: list[int]) -> float:
    """Fraction of padded positions over all positions computed, for lengths that fit a bucket."""
    fitted = [(n, bucket_for(n, buckets)) for n in lengths]
    fitted = [(n, b) for n, b in fitted if b is not None]
    total = sum(b for _, b in fitted)
    return (total - sum(n for n, _ in fitted)) / total if total else 0.0


def copy_padded(dst: "torch.Tensor", src: "torch.Tensor", fill: float = 0.0) -> None:
    """Write ``src`` into the first ``src.shape[-1]`` positions of ``dst`` (last axis) and ``fill`` the rest."""
    n = src.shape[-1]
    if n > dst.shape[-1]:
        raise ValueError(f"length {n} does not fit the {dst.shape[-1]} bucket")
    dst[..., :n].copy_(src)
    if n < dst.shape[-1]:
        dst[..., n:].fill_(fill)


# --------------------------------------------------------------------------------------------------------
# geometric sets (TensorRT profiles, padded HiFT graphs)
# --------------------------------------------------------------------------------------------------------


def geometric_sizes(min_size: int, max_size: int, max_waste: float = 0.25, multiple: int = 16) -> tuple[int, ...]:
    """Increasing sizes from min_size to max_size (both included), multiples of ``multiple`` where possible,
    each at most (1 + max_waste) x the previous one once the step exceeds ``multiple``."""
    if min_size < 1 or max_size < min_size:
        raise ValueError(f"bad bucket range [{min_size}, {max_size}]")
    if not 0 < max_waste <= 4:
        raise ValueError(f"max_waste must be in (0, 4], got {max_waste}")
    sizes = [min_size]
    while sizes[-1] < max_size:
        previous = sizes[-1]
        # Largest multiple within the waste bound for lengths just above `previous`.
        limit = int((previous + 1) * (1 + max_waste))
        nxt = (limit // multiple) * multiple
        if nxt <= previous:  # bound tighter than one multiple: step by a multiple (waste < multiple frames)
            nxt = (previous // multiple + 1) * multiple
        sizes.append(min(nxt, max_size))
    return tuple(sizes)


@dataclass(frozen=True)
class BucketSet:
    """A named, sorted tuple of lengths with the padding rule and the matching TensorRT profile range."""

    name: str
    sizes: tuple[int, ...]
    typical: int | None = None  # the length the engine is tuned for (profile "opt"); default: the median bucket

    def __post_init__(self) -> None:
        if not self.sizes or list(self.sizes) != sorted(set(self.sizes)) or self.sizes[0] < 1:
            raise ValueError(f"bucket sizes must be increasing positive integers: {self.sizes}")

    @property
    def smallest(self) -> int:
        return self.sizes[0]

    @property
    def largest(self) -> int:
        return self.sizes[-1]

    def pick(self, n: int) -> int:
        """Smallest bucket that holds n; raises ValueError when n is above the largest bucket."""
        if n > self.largest:
            raise ValueError(f"{self.name}: length {n} exceeds the largest bucket {self.largest}")
        return self.sizes[bisect.bisect_left(self.sizes, max(n, 1))]

    def waste(self, n: int) -> float:
        """Padding fraction (bucket - n) / n for a request of n."""
        return (self.pick(n) - n) / max(n, 1)

    def profile(self) -> tuple[int, int, int]:
        """(min, opt, max) lengths of a TensorRT optimisation profile covering every bucket."""
        opt = self.typical if self.typical is not None else self.sizes[len(self.sizes) // 2]
        return self.smallest, self.pick(opt), self.largest


def make_buckets(name: str, min_size: int, max_size: int, max_waste: float = 0.25, multiple: int = 16,
                 typical: int | None = None) -> BucketSet:
    """A geometric ``BucketSet`` from ``min_size`` to ``max_size`` (``geometric_sizes``)."""
    return BucketSet(name, geometric_sizes(min_size, max_size, max_waste, multiple), typical)


# Flow estimator frame lengths (mel frames, prompt included). v2/v3 run 50 frames per streamed chunk and the
# whole utterance so far, so ~60 s of speech at 50 Hz fits; "typical" ~ 4 s (a first chunk plus prompt).
FLOW_FRAME_BUCKETS = make_buckets("flow_frames", 16, 3008, max_waste=0.25, multiple=16, typical=200)

# HiFT input mel lengths (v1 22050/256 Hz, v2/v3 50 Hz); same range as the flow.
HIFT_MEL_BUCKETS = make_buckets("hift_mel", 16, 3008, max_waste=0.25, multiple=16, typical=200)
