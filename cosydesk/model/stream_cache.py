"""What a frame-causal network keeps between streaming calls: convolution left contexts and attention keys/values.

Used by the incremental streaming flow (``flow_stream``): in a non-final streaming call of the v2/v3 flow every
frame depends only on itself, earlier frames and the frames of its own attention chunk, so a later call can
compute only its new frames if it is handed, per layer, the last ``kernel - 1`` inputs of every causal
convolution and the keys/values of every attention layer for the frames already done.

A `FrameCache` serves one network evaluation site (one CFM step of the estimator, or the encoder) of one request.
The network code visits its convolutions and attention layers in a fixed order; the cache hands out the matching
entries in that order (the first call creates them). Each call runs on the frames ``[first, end)`` and names a
*commit* boundary ``first <= commit <= end``: frames before it are final (they will never be recomputed), frames
after it are recomputed by the next call (their chunk was incomplete). ``commit()`` then keeps exactly the state
up to that boundary.

Pure torch: no threads, no device tricks; the caller passes the cache explicitly.
"""

from __future__ import annotations

from collections.abc import Callable

import torch


def grown_capacity(capacity: int, needed: int) -> int:
    """Capacity of a store holding ``capacity`` entries once it must hold ``needed``: unchanged while they fit,
    else at least 1.5x (amortised copies without doubling the memory a long sentence holds)."""
    return capacity if needed <= capacity else max(needed, (3 * capacity) // 2)


class KVStore:
    """Keys and values [B, H, capacity, d] of one attention layer; grown by 1.5x, truncated on commit."""

    def __init__(self) -> None:
        self.keys: torch.Tensor | None = None
        self.values: torch.Tensor | None = None
        self.length = 0

    def update(self, keys: torch.Tensor, values: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Append [B, H, n, d] keys/values; return every key/value so far [B, H, length, d]."""
        end = self.length + keys.size(2)
        if self.keys is None or end > self.keys.size(2):
            capacity = grown_capacity(self.capacity(), end)
            grown_k = keys.new_empty(keys.shape[:2] + (capacity, keys.size(3)))
            grown_v = values.new_empty(values.shape[:2] + (capacity, values.size(3)))
            if self.keys is not None:
                grown_k[:, :, : self.length] = self.keys[:, :, : self.length]
                grown_v[:, :, : self.length] = self.values[:, :, : self.length]
            self.keys, self.values = grown_k, grown_v
        self.keys[:, :, self.length : end] = keys
        self.values[:, :, self.length : end] = values
        self.length = end
        return self.keys[:, :, :end], self.values[:, :, :end]

    def capacity(self) -> int:
        return 0 if self.keys is None else self.keys.size(2)

    def truncate(self, length: int) -> None:
        """Forget the entries from ``length`` on (frames the next call recomputes)."""
        self.length = min(self.length, length)

    def nbytes(self) -> int:
        if self.keys is None:
            return 0
        return self.keys.numel() * self.keys.element_size() * 2


class FrameCache:
    """Convolution contexts and K/V stores of one network site, visited in the network's fixed order."""

    def __init__(self) -> None:
        self.contexts: list[torch.Tensor] = []
        self.stores: list[KVStore] = []
        self._pending: list[torch.Tensor] = []
        self._next_conv = 0
        self._next_store = 0
        self._commit_offset = 0

    def begin(self, commit_offset: int) -> None:
        """Start a call; ``commit_offset`` = commit boundary - first frame of the call (>= 0)."""
        if commit_offset < 0:
            raise ValueError(f"commit boundary lies {-commit_offset} frames before the call's first frame")
        self._next_conv = self._next_store = 0
        self._pending = []
        self._commit_offset = commit_offset

    def causal(self, x: torch.Tensor, left: int, apply: Callable[[torch.Tensor], torch.Tensor]) -> torch.Tensor:
        """Run a causal layer on the new frames x [B, C, n]: ``apply`` gets [left context | x] ([B, C, left + n],
        zeros before the first frame, exactly the layer's own zero padding) and must not pad itself."""
        index = self._next_conv
        self._next_conv += 1
        if index == len(self.contexts):
            self.contexts.append(x.new_zeros(x.shape[0], x.shape[1], left))
        full = torch.cat([self.contexts[index], x], dim=2)
        # the `left` inputs just before the commit boundary; a copy so the call's big tensor can be freed
        offset = self._commit_offset
        self._pending.append(full[:, :, offset : offset + left].clone())
        return apply(full)

    def store(self) -> KVStore:
        """The next attention layer's K/V store."""
        index = self._next_store
        self._next_store += 1
        if index == len(self.stores):
            self.stores.append(KVStore())
        return self.stores[index]

    def commit(self, length: int) -> None:
        """End the call: keep contexts and K/V up to the commit boundary at absolute position ``length``."""
        if len(self._pending) != len(self.contexts):
            raise RuntimeError("a streaming call visited a different number of causal layers than the cache holds")
        self.contexts = self._pending
        self._pending = []
        for store in self.stores:
            store.truncate(length)

    def nbytes(self) -> int:
        return sum(store.nbytes() for store in self.stores) + sum(c.numel() * c.element_size() for c in self.contexts)


def chunk_visibility(first: int, n_queries: int, n_keys: int, chunk: int, device: torch.device) -> torch.Tensor:
    """bool [n_queries, n_keys]: query at absolute position first + i may see key j iff j lies in the query's own
    chunk of ``chunk`` positions or an earlier one (the official streaming mask, all left chunks visible)."""
    queries = torch.arange(first, first + n_queries, device=device)
    chunk_end = (torch.div(queries, chunk, rounding_mode="floor") + 1) * chunk
    keys = torch.arange(n_keys, device=device)
    return keys.unsqueeze(0) < chunk_end.unsqueeze(1)
