"""Audio chunks from the device to the host through one reusable pinned buffer.

Why pinned: a copy out of pageable memory is staged by the driver and blocks the calling thread for its whole
duration; from page-locked memory the DMA engine copies directly and the host only waits for the copy's event.
The buffer is allocated once (one minute of 24 kHz audio, grown if ever needed), so a night of chunks allocates
nothing; each chunk is copied out of it into its own numpy array before the next chunk reuses it.
"""

from __future__ import annotations

import numpy as np
import torch

from cosydesk.model.versions import V2


class PinnedCopier:
    """``copier(pcm)`` -> float32 numpy copy of a 1-D chunk, handed over once its device->host copy completed."""

    def __init__(self, device: torch.device, max_samples: int = V2.sample_rate * 60):
        self.cuda = torch.device(device).type == "cuda"
        self.buffer = torch.empty(max_samples, dtype=torch.float32, pin_memory=True) if self.cuda else None
        self.done = torch.cuda.Event() if self.cuda else None

    def __call__(self, pcm: torch.Tensor) -> np.ndarray:
        pcm = pcm.detach().reshape(-1)
        if not self.cuda:
            return pcm.float().numpy().copy()
        n = pcm.shape[0]
        if n > self.buffer.shape[0]:
            self.buffer = torch.empty(n, dtype=torch.float32, pin_memory=True)
        self.buffer[:n].copy_(pcm.float(), non_blocking=True)
        self.done.record()
        self.done.synchronize()  # this chunk's copy (and everything before it on the stream) has landed
        return self.buffer[:n].numpy().copy()
