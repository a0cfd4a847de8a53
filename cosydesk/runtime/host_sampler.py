"""Speech-token sampling on the host for the generic generation loop (eager backends, on any device).

The cudagraph backend does not use it: its LLM chooses ids on the GPU inside the decode graph and runs one step
ahead of the host (``runtime/backends/cudagraph/select.py``); with a host round trip per token that loop cannot exist.

Why: the repetition-aware sampler is ~25 tiny tensor ops per token. On a GPU each is a kernel launch plus a
scheduling bubble, and the chosen id still needs one host sync: measured on the H200, decode step + sampler
took 1.76 ms per token against 1.19 ms with a bare argmax (0.86 ms for the sampler alone). The logits are only
~6.5k floats (26 KB), so they are copied to the host once per token - the copy *is* that one sync - and sampled
there, where the sampler takes its host form (top-k candidates instead of a full sort, the fallback drawn only
when the pick repeats, as in the reference).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from cosydesk.model.sampling import SpeechTokenSampler


class HostSampler:
    """Wraps a sampler so that it always sees float32 CPU scores (draw from a CPU ``generator``)."""

    def __init__(self, sampler: SpeechTokenSampler):
        self.sampler = sampler

    def __call__(self, scores: torch.Tensor, decoded: Sequence[int],
                 generator: torch.Generator | None = None) -> torch.Tensor:
        return self.sampler(scores.float().cpu(), decoded, generator)
