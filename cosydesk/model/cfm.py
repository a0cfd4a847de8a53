"""Conditional flow matching sampler shared by every flow version (v1, v2, v3).

Facts (official behaviour, checked by the fixtures): 10 Euler steps on the cosine schedule
t_k = 1 - cos(k/10 * pi/2); classifier-free guidance with a batch of 2 where row 1 has mu, spks and cond
zeroed; v = (1 + cfg) * v_cond - cfg * v_uncond with cfg = 0.7. The estimator is called as
``estimator(x, mask, mu, t, spks, cond, streaming=...)`` on [2, 80, T] tensors and returns [2, 80, T].

The starting noise is the caller's business (v1 draws it per call, v2/v3 slice a fixed buffer), so the
sampler is deterministic given ``z``. Pure math: no caches, no graphs (the incremental streaming flow,
``flow_stream``, passes its own per-step estimator callables through ``estimator=``).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
from torch import nn


FIXED_NOISE_FRAMES = 15000  # the causal CFM's noise table: the longest decodable mel (v2, v3)
FIXED_NOISE_SEED = 0


def fixed_start_noise(channels: int = 80, frames: int = FIXED_NOISE_FRAMES, seed: int = FIXED_NOISE_SEED) -> torch.Tensor:
    """The v2/v3 starting noise: equal to ``torch.manual_seed(0); torch.randn([1, 80, 15000])`` (the official
    CausalConditionalCFM constructor), drawn from a private generator so the caller's RNG is untouched."""
    generator = torch.Generator(device="cpu").manual_seed(seed)
    return torch.randn([1, channels, frames], generator=generator, device="cpu")


def cosine_time_grid(n_steps: int, device: torch.device | str = "cpu", dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """The n_steps+1 time points of the official cosine schedule, from 0 to 1."""
    grid = torch.linspace(0, 1, n_steps + 1, device=device, dtype=dtype)
    return 1 - torch.cos(grid * 0.5 * math.pi)


class FlowMatchingSampler(nn.Module):
    """Euler ODE solver with classifier-free guidance around an estimator module."""

    def __init__(self, estimator: nn.Module, inference_cfg_rate: float = 0.7, n_steps: int = 10):
        super().__init__()
        self.estimator = estimator
        self.inference_cfg_rate = float(inference_cfg_rate)
        self.n_steps = int(n_steps)

    def guided_velocity(
        self,
        x: torch.Tensor,
        mask: torch.Tensor,
        mu: torch.Tensor,
        t: torch.Tensor,
        spks: torch.Tensor,
        cond: torch.Tensor,
        streaming: bool = False,
        estimator: Callable[..., torch.Tensor] | None = None,
    ) -> torch.Tensor:
        """One CFG estimator evaluation: x/mu/cond [1,80,T], mask [1,1,T], t scalar tensor, spks [1,80].
        ``estimator``: called instead of ``self.estimator`` with the same arguments (None: the module)."""
        x_in = torch.cat([x, x], dim=0)
        mask_in = torch.cat([mask, mask], dim=0)
        mu_in = torch.cat([mu, torch.zeros_like(mu)], dim=0)
        t_in = t.reshape(1).expand(2).to(x.dtype)
        spks_in = torch.cat([spks, torch.zeros_like(spks)], dim=0)
        cond_in = torch.cat([cond, torch.zeros_like(cond)], dim=0)
        both = (self.estimator if estimator is None else estimator)(x_in, mask_in, mu_in, t_in, spks_in, cond_in, streaming=streaming)
        v_cond, v_uncond = both[:1], both[1:]
        cfg = self.inference_cfg_rate
        return (1.0 + cfg) * v_cond - cfg * v_uncond

    def forward(
        self,
        z: torch.Tensor,
        mask: torch.Tensor,
        mu: torch.Tensor,
        spks: torch.Tensor,
        cond: torch.Tensor,
        streaming: bool = False,
    ) -> torch.Tensor:
        """Integrate from noise ``z`` [1,80,T] at t=0 to the mel at t=1."""
        return self.integrate(z, lambda x, t, step: self.guided_velocity(x, mask, mu, t, spks, cond, streaming=streaming))

    def integrate(self, z: torch.Tensor, velocity: Callable[[torch.Tensor, torch.Tensor, int], torch.Tensor]) -> torch.Tensor:
        """The Euler loop on the cosine grid: x += dt * velocity(x, t, step), from z at t=0 to t=1."""
        grid = cosine_time_grid(self.n_steps, device=z.device, dtype=torch.float32)
        x = z
        for step in range(self.n_steps):
            t = grid[step]
            dt = grid[step + 1] - grid[step]
            x = x + dt.to(x.dtype) * velocity(x, t, step)
        return x
