"""Shape buckets: the lengths graphs are captured for, and the padding of a request up to its bucket.

Pure Python/torch, CPU-testable. A length above the largest bucket has no graph (callers fall back to eager).
"""

from __future__ import annotations

import bisect

import torch


def make_buckets(max_len: int, step: int, start: int | None = None) -> list[int]:
    """Multiples of ``step`` from ``start`` (default ``step``) up to the first one >= ``max_len``."""
    if step <= 0 or max_len <= 0:
        raise ValueError("step and max_len must be positive")
    first = start if start is not None else step
    out = list(range(first, max_len + step, step))
    while len(out) > 1 and out[-2] >= max_len:
        out.pop()
    return out


def tiered_buckets(short_max: int, step: int, long_max: int, long_step: int, start: int | None = None) -> list[int]:
    """``make_buckets(short_max, step, start)`` then multiples of ``long_step`` past it up to ``long_max``: fine
    buckets where most calls land (little padding) and coarse ones for long sentences (fewer graphs; the
    padding is a smaller share of a long call)."""
    out = make_buckets(short_max, step, start)
    if long_max > out[-1]:
        if long_step <= 0:
            raise ValueError("long_step must be positive")
        first = (out[-1] // long_step + 1) * long_step
        out += make_buckets(long_max, long_step, start=first)
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


def copy_padded(dst: torch.Tensor, src: torch.Tensor, fill: float = 0.0) -> None:
    """Write ``src`` into the first ``src.shape[-1]`` positions of ``dst`` (last axis) and ``fill`` the rest."""
    n = src.shape[-1]
    if n > dst.shape[-1]:
        raise ValueError(f"length {n} does not fit the {dst.shape[-1]} bucket")
    dst[..., :n].copy_(src)
    if n < dst.shape[-1]:
        dst[..., n:].fill_(fill)
