"""The CUDA memory allocator setting every CosyDesk process runs with: torch's expandable segments.

Why: the benchmarks that set the memory figures in the README ran with it, and the app must run what was measured.
On the H200 (wave 6, v3 after the build) it is 2.75 GB of NVML process memory with it and 3.03 GB without: without
it, blocks freed while loading (cast weights, warm-up temporaries) stay cut out of segments that are still in use.
A user's own ``PYTORCH_CUDA_ALLOC_CONF`` (or ``PYTORCH_ALLOC_CONF``) wins. torch reads the setting when CUDA
starts in the process, so this is called before anything touches the GPU (the CLI's entry, ``Synthesizer``).
"""

from __future__ import annotations

import os
import sys

ALLOC_CONF_VARIABLES = ("PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_ALLOC_CONF")
EXPANDABLE_SEGMENTS = "expandable_segments:True"


def prefer_expandable_segments() -> bool:
    """Set ``PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True`` unless an allocator setting is given or CUDA has
    already started in this process (then it could no longer take effect); returns whether it set it."""
    if any(os.environ.get(name) for name in ALLOC_CONF_VARIABLES):
        return False
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_initialized():
        return False
    os.environ["PYTORCH_CUDA_ALLOC_CONF"] = EXPANDABLE_SEGMENTS
    return True
