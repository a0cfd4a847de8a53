"""Neural-source-filter excitation of the HiFT vocoders: f0 per sample -> 9 noisy harmonics.

Two recipes, picked by the official rule "22050 Hz -> sample-rate phase, otherwise frame-rate phase":

- ``sample_rate_harmonics`` (v1, official SineGen): the phase of harmonic h is the running sum of
  h*f0/sr over *samples*, taken mod 1; each harmonic but the first gets a random initial phase in
  [-pi, pi); noise is Gaussian.
- ``frame_rate_harmonics`` (v2/v3, official SineGen2): the per-sample normalised frequencies are reduced
  to one value per frame (linear interpolation by 1/upsample), accumulated at frame rate, scaled back and
  upsampled ("linear" in v2, "nearest" in the causal v3). A random initial offset is added to sample 0
  before the reduction (with an integer upsample factor that sample is never read, we keep it anyway to
  follow the official recipe). v2's noise is Gaussian; v3's is a *fixed uniform* tensor drawn once when
  the official model is built (``FixedSourceNoise``).

In both, unvoiced samples (f0 <= threshold) carry no sine, and the additive noise has amplitude
``noise_std`` on voiced and ``sine_amp / 3`` on unvoiced samples.

Random numbers never come from inside this module's math: callers pass them in (``NsfDraws`` for v1/v2,
``FixedSourceNoise`` for v3), so a test can zero or replay them and a CUDA graph sees plain tensors.
Everything here runs in float32 whatever the model dtype (the phase accumulation needs it).
``with_cached_start`` splices the previous call's source tail into a new source (official v1/v2 streaming).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F

# Length of the official v3 noise tensors: 300 s at 24 kHz.
FIXED_NOISE_SAMPLES = 300 * 24000
# Host-side growth step of the lazily drawn v3 noise prefix (30 s at 24 kHz, 26 MB of float32).
_NOISE_GROWTH_SAMPLES = 30 * 24000
# Growth step of a device's copy of that prefix (5 s, 4.3 MB): a short sentence keeps 4 MB on the GPU, not 26 MB
# (which, on the H200, needed a new 21 MB mapping during the first request); growing sends only the new part.
_DEVICE_GROWTH_SAMPLES = 5 * 24000


@dataclass(frozen=True)
class NsfDraws:
    """The random numbers one v1/v2 source pass consumes, in the official layouts.

    initial_phase: v1 ``[B, H, 1]`` uniform in [-pi, pi) (radians); v2 ``[B, H]`` uniform in [0, 1)
        (cycles). Harmonic 0 is always forced to 0 by the source itself, whatever is passed.
    noise: standard normal, v1 ``[B, H, L]``, v2 ``[B, L, H]`` (L = samples).
    """

    initial_phase: torch.Tensor
    noise: torch.Tensor


def _without_fundamental(initial_phase: torch.Tensor, harmonic_dim: int) -> torch.Tensor:
    """Zero harmonic 0's entry (the official code assigns 0 there) without an in-place write."""
    # Built from arange (no scalar setitem): a setitem copies a host scalar, which a CUDA graph cannot capture.
    keep = (torch.arange(initial_phase.shape[harmonic_dim], device=initial_phase.device) != 0).to(initial_phase.dtype)
    shape = [1] * initial_phase.dim()
    shape[harmonic_dim] = -1
    return initial_phase * keep.view(shape)


def _noise_amplitude(uv: torch.Tensor, sine_amp: float, noise_std: float) -> torch.Tensor:
    # Same operation order as the official expression, so float32 rounding agrees.
    return uv * noise_std + (1 - uv) * sine_amp / 3


def sample_rate_harmonics(f0: torch.Tensor, draws: NsfDraws, sampling_rate: int, num_harmonics: int,
                          sine_amp: float, noise_std: float, voiced_threshold: float) -> torch.Tensor:
    """v1 source. f0: per-sample Hz [B, L, 1] -> harmonics [B, L, H] (H = num_harmonics)."""
    f0 = f0.transpose(1, 2).float()  # [B, 1, L]
    multiples = torch.arange(1, num_harmonics + 1, device=f0.device, dtype=torch.float32).view(1, -1, 1)
    cycles_per_sample = f0 * multiples / sampling_rate  # [B, H, L]
    theta = 2 * math.pi * (torch.cumsum(cycles_per_sample, dim=-1) % 1)
    phase0 = _without_fundamental(draws.initial_phase.float(), harmonic_dim=1)
    sines = sine_amp * torch.sin(theta + phase0)
    uv = (f0 > voiced_threshold).float()
    noise = _noise_amplitude(uv, sine_amp, noise_std) * draws.noise.float()
    return (sines * uv + noise).transpose(1, 2)


def frame_rate_harmonics(f0: torch.Tensor, initial_phase: torch.Tensor, noise: torch.Tensor, sampling_rate: int,
                         upsample: int, num_harmonics: int, sine_amp: float, noise_std: float,
                         voiced_threshold: float, phase_upsample_mode: str) -> torch.Tensor:
    """v2/v3 source. f0 [B, L, 1] Hz per sample; initial_phase [B or 1, H] cycles; noise [B or 1, L, H]."""
    per_frame = frame_cycles(f0, initial_phase, sampling_rate, upsample, num_harmonics)
    phase = torch.cumsum(per_frame, dim=2)  # [B, H, frames], float32 on purpose
    return harmonics_from_phase(f0, phase, noise, upsample, sine_amp, noise_std, voiced_threshold,
                                phase_upsample_mode)


def frame_cycles(f0: torch.Tensor, initial_phase: torch.Tensor, sampling_rate: int, upsample: int,
                 num_harmonics: int) -> torch.Tensor:
    """Per-frame phase increment of each harmonic in cycles [B, H, frames] (float32), official SineGen2 order."""
    f0 = f0.float()
    multiples = torch.arange(1, num_harmonics + 1, device=f0.device, dtype=torch.float32).view(1, 1, -1)
    cycles = (f0 * multiples / sampling_rate) % 1  # [B, L, H]
    offset = _without_fundamental(initial_phase.float(), harmonic_dim=1)
    cycles = torch.cat([cycles[:, :1] + offset[:, None, :], cycles[:, 1:]], dim=1)
    return F.interpolate(cycles.transpose(1, 2), scale_factor=1 / upsample, mode="linear")


def carried_phase(per_frame: torch.Tensor, phase_in: torch.Tensor, valid_from: int) -> torch.Tensor:
    """Running phase in cycles [B, H, frames] (float64) of a window that starts inside an utterance.

    ``phase_in`` [B, H] float64 is the running sum of every increment before window frame ``valid_from``
    (increments of frames < valid_from are not trusted, e.g. lacking left context, and are ignored).
    The sum is continued sequentially in float64: on CPU this is exactly how torch accumulates the float32
    cumsum of the whole utterance, so ``.float()`` of the result reproduces that cumsum bit for bit.
    """
    increments = per_frame.double()
    if valid_from > 0:
        increments = F.pad(increments[:, :, valid_from:], (valid_from, 0))
    return torch.cumsum(torch.cat([phase_in.double().unsqueeze(-1), increments], dim=2), dim=2)[:, :, 1:]


def harmonics_from_phase(f0: torch.Tensor, phase: torch.Tensor, noise: torch.Tensor, upsample: int,
                         sine_amp: float, noise_std: float, voiced_threshold: float,
                         phase_upsample_mode: str) -> torch.Tensor:
    """Running phase in cycles [B, H, frames] (float32) -> noisy harmonics [B, L, H]."""
    f0 = f0.float()
    phase = phase.float() * 2 * math.pi
    phase = F.interpolate(phase * float(upsample), scale_factor=upsample, mode=phase_upsample_mode)
    sines = torch.sin(phase).transpose(1, 2) * sine_amp  # [B, L, H]
    uv = (f0 > voiced_threshold).float()
    return sines * uv + _noise_amplitude(uv, sine_amp, noise_std) * noise.float()


def merge_harmonics(harmonics: torch.Tensor, linear: torch.nn.Linear) -> torch.Tensor:
    """tanh(Linear(H -> 1)) in float32 -> source [B, 1, L]."""
    bias = linear.bias.float() if linear.bias is not None else None
    return torch.tanh(F.linear(harmonics, linear.weight.float(), bias)).transpose(1, 2)


# ---------------------------------------------------------------------------------------------------------
# v3: the fixed tensors the official CausalHiFTGenerator draws in its constructor
# ---------------------------------------------------------------------------------------------------------

def _skip_module_init(generator: torch.Generator, *shapes_with_bias: tuple[tuple[int, ...], int]) -> None:
    """Consume exactly the draws of nn.Linear / nn.Conv1d default init (uniform weight, then uniform bias)."""
    for weight_shape, bias_len in shapes_with_bias:
        torch.empty(weight_shape).uniform_(generator=generator)
        if bias_len:
            torch.empty(bias_len).uniform_(generator=generator)


def _generator_after_rand_ini(cond_channels: int) -> tuple[torch.Generator, torch.Tensor]:
    """Replay the official construction-time RNG stream on a private generator up to ``rand_ini``.

    After the CFM constructor's reseed (``manual_seed(0)``) the official v3 build draws: the CFM noise
    randn([1, 80, 15000]); nn.Embedding(6561, 80) (normal init); nn.Linear(192, 80); the f0 predictor's
    nn.Conv1d(80, C, 4), four nn.Conv1d(C, C, 3), nn.Linear(C, 1); then rand_ini = rand(1, 9).
    The caller's global RNG is never touched.
    """
    generator = torch.Generator(device="cpu")
    generator.manual_seed(0)
    torch.randn([1, 80, 15000], generator=generator)
    torch.empty(6561, 80).normal_(generator=generator)
    c = cond_channels
    _skip_module_init(generator, ((80, 192), 80), ((c, 80, 4), c), *[((c, c, 3), c)] * 4, ((1, c), 1))
    rand_ini = torch.rand(1, 9, generator=generator)
    rand_ini[:, 0] = 0
    return generator, rand_ini


def regenerate_v3_noise(cond_channels: int, sine_samples: int, uv_samples: int = 0) -> dict[str, torch.Tensor]:
    """The official v3 construction-time tensors (heads only): rand_ini [1, 9], sine_waves[:, :sine_samples],
    and, if ``uv_samples``, uv[:, :uv_samples] (needs all 64.8 M sine draws to be consumed first: slow-ish)."""
    generator, rand_ini = _generator_after_rand_ini(cond_channels)
    out = {"rand_ini": rand_ini, "sine_waves": torch.rand(1, sine_samples, 9, generator=generator)}
    if uv_samples:
        remaining = FIXED_NOISE_SAMPLES - sine_samples
        while remaining > 0:  # discard the rest of sine_waves in bounded chunks
            step = min(remaining, _NOISE_GROWTH_SAMPLES)
            torch.rand(1, step, 9, generator=generator)
            remaining -= step
        _skip_module_init(generator, ((1, 9), 1))  # the source's l_linear
        out["uv"] = torch.rand(1, uv_samples, 1, generator=generator)
    return out


class FixedSourceNoise:
    """v3's fixed initial phases and additive-noise tensor, regenerated lazily and bit-exactly.

    Memory policy: the official model holds the whole [1, 7 200 000, 9] uniform tensor (259 MB) plus an
    unused [1, 7 200 000, 1] one. We draw only the prefix a call actually needs, on the host, in 30 s
    steps (CPU uniform draws are sequential, so a prefix equals the head of the full tensor - tested
    against the fixtures), and keep one copy per device used. Nothing is part of the state dict and
    ``module.to()/half()`` does not touch it (it is always float32).

    ``replace(rand_ini, sine_waves)`` installs caller-given tensors instead (e.g. slices stored by the
    official fixtures); then no regeneration happens and longer requests are an error.
    For CUDA-graph capture call ``reserve(num_samples, device)`` beforehand so that no growth happens
    inside the captured region.
    """

    def __init__(self, cond_channels: int, harmonics: int = 9, max_samples: int = FIXED_NOISE_SAMPLES):
        self.cond_channels = cond_channels
        self.harmonics = harmonics
        self.max_samples = max_samples
        self._generator: torch.Generator | None = None
        self._rand_ini: torch.Tensor | None = None
        self._host: torch.Tensor | None = None
        self._fixed = False
        self._on_device: dict[torch.device, tuple[torch.Tensor, torch.Tensor]] = {}

    def replace(self, rand_ini: torch.Tensor, sine_waves: torch.Tensor) -> None:
        h = self.harmonics
        if tuple(rand_ini.shape) != (1, h) or sine_waves.dim() != 3 or sine_waves.shape[-1] != h:
            raise ValueError(f"expected rand_ini [1, {self.harmonics}] and sine_waves [1, L, {self.harmonics}]")
        self._rand_ini = rand_ini.detach().float().cpu().clone()
        self._host = sine_waves.detach().float().cpu().clone()
        self._generator = None
        self._fixed = True
        self._on_device.clear()

    def _grow_host(self, num_samples: int) -> None:
        if self._rand_ini is None:
            self._generator, self._rand_ini = _generator_after_rand_ini(self.cond_channels)
            self._host = torch.empty(1, 0, self.harmonics)
        have = self._host.shape[1]
        if num_samples <= have:
            return
        if self._fixed or num_samples > self.max_samples:
            limit = have if self._fixed else self.max_samples
            raise ValueError(f"the v3 vocoder's fixed noise covers {limit} samples, {num_samples} were requested")
        target = min(self.max_samples, -(-num_samples // _NOISE_GROWTH_SAMPLES) * _NOISE_GROWTH_SAMPLES)
        more = torch.rand(1, target - have, self.harmonics, generator=self._generator)
        self._host = torch.cat([self._host, more], dim=1)

    def reserve(self, num_samples: int, device: torch.device | str = "cpu") -> None:
        """Make sure ``num_samples`` of noise are ready on ``device`` (host-side work only)."""
        device = torch.device(device)
        self._grow_host(num_samples)
        cached = self._on_device.get(device)
        if cached is not None and cached[1].shape[1] >= num_samples:
            return
        target = min(self._host.shape[1], -(-num_samples // _DEVICE_GROWTH_SAMPLES) * _DEVICE_GROWTH_SAMPLES)
        if cached is None:
            self._on_device[device] = (self._rand_ini.to(device), self._host[:, :target].to(device))
            return
        rand_ini, noise = cached
        more = self._host[:, noise.shape[1]:target].to(device)
        self._on_device[device] = (rand_ini, torch.cat([noise, more], dim=1))

    @property
    def limit(self) -> int:
        """The most samples a request may use: the installed tensor's length, else ``max_samples``."""
        return self._host.shape[1] if self._fixed else self.max_samples

    def host(self, num_samples: int) -> tuple[torch.Tensor, torch.Tensor]:
        """(rand_ini [1, H], the host noise [1, >= num_samples, H]), float32 on the CPU, grown as needed: for a
        caller that copies windows of it to a device itself. The tensor is never written after it is returned
        (growth builds a new one), so a copy still in flight from it stays valid."""
        self._grow_host(num_samples)
        return self._rand_ini, self._host

    def get(self, num_samples: int, device: torch.device, start: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
        """(rand_ini [1, H], sine_waves[:, start:start + num_samples] [1, num_samples, H]) on ``device``, float32.

        ``start`` > 0 serves a vocoder window that begins inside an utterance (the noise is indexed by
        absolute sample position)."""
        self.reserve(start + num_samples, device)
        rand_ini, noise = self._on_device[torch.device(device)]
        return rand_ini, noise[:, start:start + num_samples]


def with_cached_start(source: torch.Tensor, cache_source: torch.Tensor | None) -> torch.Tensor:
    """``source`` [B, 1, L] with its first N samples replaced by ``cache_source`` [B, 1, N] (N <= L; official
    streaming: the tail of the previous call's source); unchanged for None or an empty cache."""
    if cache_source is None or cache_source.shape[2] == 0:
        return source
    keep = cache_source.shape[2]
    if keep > source.shape[2]:
        raise ValueError(f"cache_source has {keep} samples, longer than the {source.shape[2]} generated")
    return torch.cat([cache_source.to(source.dtype), source[:, :, keep:]], dim=2)
