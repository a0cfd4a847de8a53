"""HostSampler: the runtime samples speech tokens on the host whatever the LLM's device."""

from __future__ import annotations

import torch

from cosydesk.runtime.host_sampler import HostSampler


def test_host_sampler_hands_float32_cpu_scores_through():
    seen = []

    def inner(scores, decoded, generator=None):
        seen.append((scores.dtype, scores.device.type, list(decoded), generator))
        return scores.argmax()

    gen = torch.Generator().manual_seed(0)
    out = HostSampler(inner)(torch.tensor([0.1, 2.0, 0.3], dtype=torch.float16), [4, 5], gen)
    assert int(out) == 1
    assert seen == [(torch.float32, "cpu", [4, 5], gen)]
