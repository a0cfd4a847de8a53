"""The flow's CFM solver (estimator + CFG combine + Euler update) as CUDA graphs: one Euler step per length bucket.

``GraphedSampler`` replaces ``flow.decoder`` (a ``FlowMatchingSampler``) on the backend's own copy of the flow:
``flow.inference`` calls it as ``decoder(z, mask, mu, spks, cond, streaming=...)`` and gets x at t=1.
Requests are padded to the bucket with mask 0 and zero z/mu/cond; the estimator masks padded frames, and the
causal (v2/v3) decoders never look right and v1's GroupNorm is rewritten to masked statistics (``fuse.py``), so
valid frames do not change (checked in tests).
The Euler state stays float32 and the CFG combine is done in float32; the estimator runs in the model dtype.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Protocol, runtime_checkable

import torch
from torch import nn

from cosydesk.model.cfm import cosine_time_grid
from cosydesk.runtime.buckets import copy_padded
from cosydesk.runtime.backends.cudagraph.capture import capture_graphs
from cosydesk.runtime.backends.cudagraph.graph_table import GraphTable, TableViews, shared_prefix_views


@runtime_checkable
class PreparedEstimator(Protocol):
    """An estimator that takes its time projections and attention mask precomputed (``row_estimator``'s): the
    captured step then skips them."""

    def time_projections(self, t: torch.Tensor) -> torch.Tensor: ...

    def attention_mask(self, mask: torch.Tensor, streaming: bool) -> torch.Tensor: ...


def guided_increment(sampler, x, mask2, mu2, t2, spks2, cond2, dt, streaming: bool, **prepared) -> torch.Tensor:
    """One Euler increment dt * CFG velocity, in float32, for the float32 state x [1,80,T]. The estimator runs on
    the CFG batch (row 0 conditioned, row 1 with zero mu/spks/cond) in mu2's dtype; ``prepared``: inputs the
    estimator accepts precomputed (the row estimator's ``times`` / ``allowed``)."""
    cfg = sampler.inference_cfg_rate
    both = sampler.estimator(x.to(mu2.dtype).expand(2, -1, -1), mask2, mu2, t2, spks2, cond2,
                             streaming=streaming, **prepared).float()
    return dt * ((1.0 + cfg) * both[:1] - cfg * both[1:])


def solve_cfm(sampler, z, mask, mu, spks, cond, streaming: bool, grid: torch.Tensor,
              time_table: torch.Tensor | None = None) -> torch.Tensor:
    """Euler + CFG like FlowMatchingSampler, with the state and the guidance combine in float32 -> [1,80,T] f32.
    ``time_table``: a prepared estimator's time projections per step (its mask is then prepared here too)."""
    zeros = torch.zeros_like(mu)
    mask_in = torch.cat([mask, mask], dim=0)
    mu_in = torch.cat([mu, zeros], dim=0)
    spks_in = torch.cat([spks, torch.zeros_like(spks)], dim=0)
    cond_in = torch.cat([cond, zeros], dim=0)
    prepared = {}
    if time_table is not None:
        prepared["allowed"] = sampler.estimator.attention_mask(mask_in, streaming)
    x = z.float()
    for step in range(sampler.n_steps):
        t_in = grid[step].reshape(1).expand(2).to(mu.dtype)
        if time_table is not None:
            prepared["times"] = time_table[step]
        x = x + guided_increment(sampler, x, mask_in, mu_in, t_in, spks_in, cond_in, grid[step + 1] - grid[step],
                                 streaming, **prepared)
    return x


class GraphedSampler(TableViews, nn.Module):
    """Drop-in for FlowMatchingSampler with one captured *Euler step* per (bucket, streaming).

    One step (estimator on the CFG batch + combine + update of the float32 state) is captured, and replayed
    n_steps times with the step's t and dt written into device scalars before each replay. Capturing the
    whole 10-step solve would make graphs ten times larger: instantiated graphs live in device memory outside
    torch's allocator (~2 GB of NVML process memory for 36 whole-solver graphs), while the 9 extra launches
    cost microseconds.
    """

    def __init__(self, sampler, buckets: list[int], streaming_modes: tuple[bool, ...], spk_dim: int = 80,
                 mel_dim: int = 80):
        super().__init__()
        self.sampler = sampler
        self.streaming_modes = streaming_modes
        param = next(sampler.estimator.parameters())
        self.device, self.dtype = param.device, param.dtype
        # buffers per bucket, graphs per (bucket, attention mode)
        self.table = GraphTable("flow", self.device, buckets)
        self.grid = cosine_time_grid(sampler.n_steps, device=self.device, dtype=torch.float32)
        self.t = torch.zeros(2, device=self.device, dtype=self.dtype)  # flow time of the step, both CFG rows
        self.dt = torch.zeros((), device=self.device, dtype=torch.float32)
        # Every bucket's inputs are views of one allocation per name (``shared_prefix_views``): a call rewrites
        # all of them before its steps, including CFG row 1 of mu / cond (zeros), which a larger bucket's row 0
        # overlaps. Per bucket they held ~50 MB over the 31 full-size buckets, the attention masks most of it.
        def shared(dims, dtype=self.dtype, fill=0):
            return shared_prefix_views({b: dims(b) for b in self.buckets}, self.device, dtype, fill)

        x = shared(lambda b: (1, mel_dim, b), torch.float32)
        mu, cond = shared(lambda b: (2, mel_dim, b)), shared(lambda b: (2, mel_dim, b))
        mask = shared(lambda b: (2, 1, b))
        self.bufs.update({b: {"x": x[b], "mu": mu[b], "cond": cond[b], "mask": mask[b],
                              "spks": torch.zeros(2, spk_dim, device=self.device, dtype=self.dtype)}
                          for b in self.buckets})
        # called on the host with the step index right after each step is launched (not finished): the
        # pipeline uses it to let the held-back LLM resume during a first chunk's last steps
        self.after_step: Callable[[int], None] | None = None
        # The row estimator takes its time projections and attention mask from outside: they depend only on the
        # step's t (10 fixed values) and the request's mask, so they are computed once per step value at load
        # (the table) and once per request, not in every captured step (~24 small kernels per step).
        self.prepared = isinstance(sampler.estimator, PreparedEstimator)
        if self.prepared:
            host_table = getattr(sampler.estimator, "host_time_table", None)  # built before the GPU (v3's DiT)
            if host_table is not None:
                self.time_table = host_table.to(device=self.device, dtype=self.dtype)
            else:
                with torch.inference_mode():
                    steps = [self.grid[s].expand(2).to(self.dtype) for s in range(sampler.n_steps)]
                    self.time_table = torch.stack([sampler.estimator.time_projections(t) for t in steps])
            self.times = torch.zeros_like(self.time_table[0])
            # the DiT's time-only weights (0.28 GB at full size) are not needed once their outputs are in the table
            release = getattr(sampler.estimator, "release_time_weights", None)
            if release is not None and not getattr(sampler.estimator, "released", False):
                release()
            allowed = shared(lambda b: (2, b, b), torch.bool, True)
            for b in self.buckets:
                self.bufs[b]["allowed"] = allowed[b]

    @property
    def estimator(self):
        return self.sampler.estimator

    @property
    def n_steps(self):
        return self.sampler.n_steps

    def _step(self, bucket: int, streaming: bool) -> None:
        """x += dt * CFG(estimator(x, t)) on the bucket's static buffers (row 1 of mu/spks/cond stays zero)."""
        b = self.bufs[bucket]
        prepared = {"times": self.times, "allowed": b["allowed"]} if self.prepared else {}
        b["x"].add_(guided_increment(self.sampler, b["x"], b["mask"], b["mu"], self.t, b["spks"], b["cond"], self.dt,
                                     streaming, **prepared))

    def _set_time(self, step: int) -> None:
        self.t.copy_(self.grid[step].expand(2))
        self.dt.copy_(self.grid[step + 1] - self.grid[step])
        if self.prepared:
            self.times.copy_(self.time_table[step])

    def _graph_mode(self, streaming: bool) -> bool:
        """The attention mode whose graph serves ``streaming``: with a prepared estimator the step does the same
        work in both modes (only the mask buffer differs), so one graph per bucket serves both."""
        return self.streaming_modes[-1] if self.prepared else bool(streaming)

    def _set_mask(self, bucket: int, streaming: bool) -> None:
        if self.prepared:
            b = self.bufs[bucket]
            b["allowed"].copy_(self.estimator.attention_mask(b["mask"], streaming))

    def capture(self, pool=None, progress=None) -> None:
        with torch.inference_mode():
            for bucket in self.buckets:  # realistic values while warming kernels up (and compiling blocks)
                self.bufs[bucket]["mask"].fill_(1.0)
                self.bufs[bucket]["x"].normal_()
                if self.prepared:  # every key allowed: one bucket's mask is the others' too (shared buffers)
                    self.bufs[bucket]["allowed"].fill_(True)
            self._set_time(0)
        modes = sorted({self._graph_mode(s) for s in self.streaming_modes})  # prepared: half the graphs
        jobs = [((b, s), functools.partial(self._step, b, s)) for b in self.buckets for s in modes]
        # an uncapturable estimator is recorded in capture_errors and runs eagerly
        self.table.capture(jobs, pool, progress, capture=capture_graphs, keep_going=True)

    def forward(self, z, mask, mu, spks, cond, streaming: bool = False) -> torch.Tensor:
        frames = z.shape[2]
        bucket = self.table.pick(frames)
        if bucket is None:  # longer than every bucket: the plain solver
            return self.table.eager(solve_cfm, self.sampler, z, mask, mu, spks, cond, streaming, self.grid,
                                    self.time_table if self.prepared else None).to(mu.dtype)
        # None when not captured (CPU, or a capture error): the same step on the same buffers, eagerly
        graph = self.table.graph((bucket, self._graph_mode(streaming)))
        b = self.bufs[bucket]
        copy_padded(b["x"], z)
        copy_padded(b["mu"][:1], mu)
        copy_padded(b["cond"][:1], cond)
        b["mu"][1:].zero_()  # the unconditioned CFG row (a larger bucket's row 0 may have been written here)
        b["cond"][1:].zero_()
        copy_padded(b["mask"], mask.to(self.dtype).expand(2, -1, -1))
        b["spks"][:1].copy_(spks)
        self._set_mask(bucket, bool(streaming))
        for step in range(self.sampler.n_steps):
            self._set_time(step)
            if graph is not None:
                graph.replay()
            else:
                self._step(bucket, bool(streaming))
            if self.after_step is not None:
                self.after_step(step)
        return b["x"][:, :, :frames].to(self.dtype, copy=True)  # a copy: the buffer is every bucket's
