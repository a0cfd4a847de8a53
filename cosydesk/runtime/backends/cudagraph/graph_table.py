"""One table of captured CUDA graphs over static buffers, the pattern every graphed part shares.

A graphed part (the LLM's decode step and prefill buckets, the CFM Euler step per frame bucket, the flow encoders
per token bucket, HiFT per chunk shape / padded bucket) keeps, per key: the static input/output buffers its body
reads and writes, and the graph captured from that body. A call picks its key (``pick``: the smallest bucket that
holds it), copies its inputs into the key's buffers and replays the graph; where no graph exists for the key
(CPU, a capture error, a length past every bucket) it runs eagerly, and the table counts those eager fallbacks
(``eager_calls``), which the bench reports. ``buffer_bytes`` is the device memory the static buffers hold.
Buckets whose inputs are rewritten whole before each replay share one allocation (``shared_prefix_views``).

What this module must not do: know any part's math; it only stores, captures, replays and counts.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Hashable, Sequence
from typing import Any

import torch

from cosydesk.runtime.buckets import bucket_for
from cosydesk.runtime.backends.cudagraph.capture import Progress, capture_graphs

Job = tuple[Hashable, Callable[[], Any]]


def shared_prefix_views(shapes: dict[Hashable, tuple[int, ...]], device: torch.device, dtype: torch.dtype,
                        fill: float | bool = 0) -> dict[Hashable, torch.Tensor]:
    """One tensor per key of ``shapes``, each a contiguous view of the start of one allocation as large as the
    largest: static inputs of graphs that run one at a time, on one stream, and whose caller rewrites every
    element a graph reads before it replays. Separate buffers per bucket add up over the buckets (the
    vocoders' noise and the flow's attention masks held 45-65 MB each at full size); shared, they cost the
    largest one."""
    sizes = {key: math.prod(shape) for key, shape in shapes.items()}
    storage = torch.full((max(sizes.values(), default=0),), fill, device=device, dtype=dtype)
    return {key: storage[:sizes[key]].view(shape) for key, shape in shapes.items()}


class GraphTable:
    """Static buffers and graphs per key, with the eager fallbacks counted.

    ``bufs[key]``: the key's buffers (a dict of tensors, or any object); ``graphs[key]``: its captured graph.
    ``buckets``: the sorted lengths ``pick`` chooses from (empty for exact-shape tables)."""

    def __init__(self, what: str, device: torch.device, buckets: Sequence[int] = ()):
        self.what = what
        self.device = device
        self.buckets = sorted(buckets)
        self.bufs: dict[Hashable, Any] = {}
        self.graphs: dict[Hashable, Any] = {}
        self.eager_calls = 0
        self.capture_errors: list[str] = []

    def pick(self, length: int) -> int | None:
        """The smallest bucket >= length, None past every bucket."""
        return bucket_for(length, self.buckets)

    def capture(self, jobs: Sequence[Job], pool=None, progress: Progress = None, capture=capture_graphs,
                keep_going: bool = False, **kwargs) -> None:
        """Capture ``jobs`` [(key, body)] into ``graphs`` (``capture_graphs``; ``capture``: a stand-in, for the
        graphed parts' tests). ``keep_going``: a job that fails to capture is recorded in ``capture_errors`` and
        runs eagerly, instead of failing the load."""
        if keep_going:
            kwargs["errors"] = self.capture_errors
        self.graphs.update(capture(jobs, self.device, pool, progress, self.what, **kwargs))

    def graph(self, key: Hashable):
        """The key's graph, or None (and one eager call counted): the caller then runs the body eagerly."""
        graph = self.graphs.get(key)
        if graph is None:
            self.eager_calls += 1
        return graph

    def run(self, key: Hashable, body: Callable[[], Any], count: bool = True) -> None:
        """Replay the key's graph, or run ``body`` eagerly where none was captured (counted unless ``count`` is
        False: a part whose eager bodies are its normal CPU path)."""
        graph = self.graphs.get(key)
        if graph is not None:
            graph.replay()
            return
        if count:
            self.eager_calls += 1
        body()

    def eager(self, fn: Callable[..., Any], *args, **kwargs) -> Any:
        """A call no key serves (past every bucket, an unsupported form): ``fn(*args, **kwargs)``, counted."""
        self.eager_calls += 1
        return fn(*args, **kwargs)

    def buffer_bytes(self) -> int:
        """Bytes of device memory the static buffers hold (tensors directly in ``bufs`` values, in their dicts or
        in dataclasses there), each allocation counted once however many buffers view it."""
        storages: dict[int, int] = {}
        for value in self.bufs.values():
            items = list(value.values()) if isinstance(value, dict) else [value]
            for item in list(items):
                if dataclasses.is_dataclass(item) and not isinstance(item, type):
                    items += [getattr(item, f.name) for f in dataclasses.fields(item)]
            for t in items:
                if isinstance(t, torch.Tensor):
                    storage = t.untyped_storage()
                    storages[storage.data_ptr()] = storage.nbytes()
        return sum(storages.values())

    def report(self) -> dict[str, int]:
        """Graphs captured, eager fallbacks so far, static buffer bytes: what a benchmark records."""
        return {"graphs": len(self.graphs), "eager_calls": self.eager_calls, "buffer_bytes": self.buffer_bytes()}


class TableViews:
    """Mixin for a graphed part that owns one ``table``: its contents under the names the bench and the tests
    read (``buckets``, ``bufs``, ``graphs``, ``eager_calls``, ``capture_errors``)."""

    table: GraphTable

    @property
    def buckets(self) -> list[int]:
        return self.table.buckets

    @property
    def bufs(self) -> dict:
        return self.table.bufs

    @property
    def graphs(self) -> dict:
        return self.table.graphs

    @property
    def eager_calls(self) -> int:
        return self.table.eager_calls

    @property
    def capture_errors(self) -> list[str]:
        return self.table.capture_errors
