"""PinnedCopier: audio chunks to the host (pinned buffer + event on a GPU, a plain copy on the CPU)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from cosydesk.runtime.host_copy import PinnedCopier


def test_cpu_chunks_come_back_as_independent_float32_arrays():
    copier = PinnedCopier(torch.device("cpu"))
    pcm = torch.linspace(-1, 1, 9, dtype=torch.float16).reshape(1, 9)
    out = copier(pcm)
    assert out.dtype == np.float32 and out.shape == (9,)
    np.testing.assert_array_equal(out, pcm.float().numpy().reshape(-1))
    pcm.zero_()
    assert out[0] == -1.0  # a copy, not a view of the model's tensor


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_gpu_chunks_reuse_one_pinned_buffer_and_grow_when_needed():
    copier = PinnedCopier(torch.device("cuda"), max_samples=1000)
    assert copier.buffer.is_pinned()
    outs = []
    for n in (10, 1000, 2500, 7):  # the third chunk outgrows the buffer
        pcm = torch.randn(n, device="cuda", dtype=torch.float16)
        outs.append((copier(pcm), pcm.float().cpu().numpy()))
    assert all(np.array_equal(a, b) for a, b in outs)
    assert copier.buffer.shape[0] == 2500 and copier.buffer.is_pinned()
