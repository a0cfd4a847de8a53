"""Warm-up and capture of the backend's CUDA graphs, on one shared side stream.

Every captured object (the LLM's decode/prefill graphs, the CFM steps, the HiFT shapes) goes through
``capture_graphs``: run each job eagerly on the side stream first (cuBLAS handles, kernel choice, cuDNN/cuFFT
plans, torch.compile), then capture each into its own graph in the given memory pool.
One side stream for all of them because cuBLAS keeps a workspace per stream it has seen, for the life of the
process (inside torch's reserved memory): a fresh stream per captured object would pin one workspace each.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Hashable, Sequence

import torch

Progress = Callable[..., None] | None


@functools.lru_cache(maxsize=None)
def side_stream(device: torch.device) -> torch.cuda.Stream:
    return torch.cuda.Stream(device)


def capture_graphs(jobs: Sequence[tuple[Hashable, Callable[[], None]]], device: torch.device, pool=None,
                   progress: Progress = None, what: str = "", warmup_rounds: int = 1,
                   errors: list[str] | None = None) -> dict:
    """{key: CUDAGraph} for ``jobs`` [(key, body)]: every body runs ``warmup_rounds`` times eagerly, then each is
    captured. A failed capture raises, or with an ``errors`` list is recorded there and its key left out (the
    caller then runs that job eagerly). ``progress(done, total, what)`` after each captured graph."""
    graphs: dict = {}
    side = side_stream(device)
    with torch.inference_mode():
        side.wait_stream(torch.cuda.current_stream(device))
        with torch.cuda.stream(side):
            for _ in range(warmup_rounds):
                for _, body in jobs:
                    body()
        torch.cuda.current_stream(device).wait_stream(side)
        for done, (key, body) in enumerate(jobs, 1):
            graph = torch.cuda.CUDAGraph()
            try:
                with torch.cuda.graph(graph, pool=pool):
                    body()
            except Exception as err:  # noqa: BLE001 - reported to the caller, which falls back to eager
                if errors is None:
                    raise
                errors.append(f"{key}: {type(err).__name__}: {err}"[:300])
                torch.cuda.synchronize()
                continue
            graphs[key] = graph
            if progress:
                progress(done, len(jobs), what)
    return graphs
