"""The one side stream every warm-up and capture of the backend runs on.

cuBLAS keeps a workspace per stream it has seen, for the life of the process (inside torch's reserved
memory): a fresh side stream per captured object would pin one workspace each. One shared stream pins one.
"""

from __future__ import annotations

import functools

import torch


@functools.lru_cache(maxsize=None)
def side_stream(device: torch.device) -> torch.cuda.Stream:
    return torch.cuda.Stream(device)
