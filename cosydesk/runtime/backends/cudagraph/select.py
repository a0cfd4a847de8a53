"""The next speech token chosen on the device, at the end of the decode graph (decode-ahead).

Why: a host-side choice costs every token a round trip (graph done -> id copied -> Python samples -> next graph
launched); measured on the H200 that was 0.4 ms per token next to a 0.87 ms decode graph (0.75 ms with the
repetition-aware sampler on the host). Chosen on the device, the id is already the next step's input, so the
host launches step n+1 before it reads id n, and reads ids one step behind the GPU (``HostIds``). The stop
check then comes one step late: the extra step's work is simply dropped.

What the selector holds (static buffers, reset per sentence by ``start``): the step counter, the min-length
rule (ids masked while step < min_len), the last ``win_size`` ids for the repetition check, one pair of
uniforms per step (drawn on the host from the request's generator, so seeded requests stay reproducible),
and optionally forced ids (the benchmark feeds forced ids; the choice is still computed, then overridden).
The id for the host goes to ``chosen``: -1 when the logits were not finite (the reference sampler raises there;
softmax of a NaN would otherwise quietly pick id 0 at every step).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import torch

from cosydesk.model.sampling import RepetitionAwareSampler, ras_select


class DeviceTokenSelector:
    """Writes the chosen id into ``token`` (the decode step's static input) from a logits buffer."""

    def __init__(self, token: torch.Tensor, vocab: int, max_steps: int, length_masked_ids: Iterable[int],
                 sampling: RepetitionAwareSampler | None = None):
        device = token.device
        self.token = token
        self.chosen = torch.zeros(1, dtype=torch.long, device=device)  # what the host reads; -1: not finite
        self.sampling = sampling or RepetitionAwareSampler()
        self.step = torch.zeros(1, dtype=torch.long, device=device)
        self.min_len = torch.zeros(1, dtype=torch.long, device=device)
        self.length_masked = torch.zeros(vocab, dtype=torch.bool, device=device)
        masked = [int(i) for i in length_masked_ids]
        if masked:
            self.length_masked[torch.tensor(masked, device=device)] = True
        self.recent = torch.full((self.sampling.win_size,), -1, dtype=torch.long, device=device)
        self.uniforms = torch.zeros(max_steps, 2, device=device)
        self.forced = torch.zeros(max_steps, dtype=torch.long, device=device)
        self.force = torch.zeros(1, dtype=torch.bool, device=device)
        self.greedy = torch.zeros(1, dtype=torch.bool, device=device)

    @property
    def max_steps(self) -> int:
        return self.uniforms.shape[0]

    def body(self, logits: torch.Tensor) -> None:
        """Choose the id of step ``self.step`` from ``logits`` [V] and advance (static shapes, capturable)."""
        sampling = self.sampling
        index = self.step.clamp(max=self.max_steps - 1)  # a dropped decode-ahead step may run past the end
        scores = logits.float().masked_fill(self.length_masked & (self.step < self.min_len), float("-inf"))
        uniforms = self.uniforms.index_select(0, index).reshape(2)
        sampled = ras_select(scores, self.recent, uniforms, sampling.top_p, sampling.top_k, sampling.repeat_threshold)
        choice = torch.where(self.greedy, scores.argmax(), sampled).reshape(1)
        choice = torch.where(self.force, self.forced.index_select(0, index), choice)
        self.token.copy_(choice)  # always a valid id: the next step may already be queued when the host sees -1
        self.chosen.copy_(torch.where(torch.isfinite(logits).all(), choice, torch.full_like(choice, -1)))
        if self.recent.numel():
            self.recent.copy_(torch.cat([self.recent[1:], choice]))
        self.step.add_(1)

    def start(self, min_len: int, greedy: bool, uniforms: torch.Tensor, forced: Sequence[int] | None = None) -> None:
        """Reset for a new sentence: ``uniforms`` [n, 2] (host, n <= max_steps) for steps 0..n-1."""
        n = uniforms.shape[0]
        if n > self.max_steps or (forced is not None and len(forced) > self.max_steps):
            raise ValueError(f"a sentence of more than {self.max_steps} tokens exceeds the static buffers")
        self.step.zero_()
        self.min_len.fill_(int(min_len))
        self.recent.fill_(-1)
        self.greedy.fill_(bool(greedy))
        self.uniforms[:n].copy_(uniforms)
        self.force.fill_(forced is not None)
        if forced is not None and len(forced):
            self.forced[:len(forced)].copy_(torch.as_tensor(list(forced), dtype=torch.long))


class HostIds:
    """Ids copied from the device one step behind it: ``enqueue(n)`` queues step n's copy of ``source`` (a
    one-element device buffer) into pinned memory on the current stream and records an event; ``read(n)`` waits
    for that event only. ``depth`` copies in flight."""

    def __init__(self, source: torch.Tensor, depth: int = 4):
        self.source = source
        self.cuda = source.device.type == "cuda"
        self.depth = depth
        self.slots = torch.zeros(depth, dtype=torch.long, pin_memory=self.cuda)
        self.events = [torch.cuda.Event() for _ in range(depth)] if self.cuda else []

    def enqueue(self, n: int) -> None:
        slot = n % self.depth
        self.slots[slot:slot + 1].copy_(self.source, non_blocking=self.cuda)
        if self.cuda:
            self.events[slot].record()

    def read(self, n: int) -> int:
        slot = n % self.depth
        if self.cuda:
            self.events[slot].synchronize()
        return int(self.slots[slot])
