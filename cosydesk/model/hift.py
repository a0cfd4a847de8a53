"""HiFT vocoders (neural source filter + iSTFT head): mel [B, 80, T] -> waveform [B, L].

- ``HiFTGenerator``: v1 (22.05 kHz, 256 samples per frame) and v2 (24 kHz, 480 per frame); transposed-conv
  upsampling, symmetric convs. Its source takes random draws, which the caller controls (``NsfDraws``:
  zeros, a replay, or fresh torch RNG draws).
- ``CausalHiFTGenerator``: v3; every conv looks only into the past except ``conv_pre`` (4 frames of right
  context) and the f0 predictor's first conv (3 frames); upsampling is nearest-repeat + left-padded conv.
  It takes no random draws at inference: it reads fixed tensors regenerated from the official recipe
  (``hift_source.FixedSourceNoise``).

Data flow (both): f0 = predictor(mel); per-sample f0 -> harmonics -> tanh(Linear) = source s [B, 1, L];
STFT(s) is fused into every upsampling stage; the last conv gives 9 log-magnitudes and 9 phases per
frame; iSTFT (n_fft 16, hop 4, Hann) -> clamp to +-audio_limit.

Public API (parity entry):
    hift = build_hift(read_yaml(path)["hift"])          # or HiFTGenerator/CausalHiFTGenerator.from_config(node)
    v1/v2: hift.inference(mel, zero_noise=False, *, draws=None, generator=None) -> wave [B, L]
           hift.inference_with_source(mel, cache_source=None, zero_noise=False, *, draws=None, generator=None)
               -> (wave [B, L], source [B, 1, L]);  hift.predict_f0(mel) -> [B, T]
           hift.forward(mel, draws, cache_source=None)  (no RNG inside: the capturable core);
           hift.redraw(draws)  (fresh draws in place, for a graph's static buffers)
    v3:    hift.inference(mel, finalize=True) -> wave;  hift.inference_with_source(mel, finalize=True)
           hift.predict_f0(mel, finalize=True) -> float64 [B, T or T-3];  hift.set_fixed_noise(rand_ini, sine_waves)
           hift.fixed_noise.reserve(num_samples, device)  (before capturing a CUDA graph)

Sub-module attribute names are those of the official ``hift.pt`` keys (``conv_pre``, ``ups``,
``source_downs``, ``source_resblocks``, ``resblocks``, ``conv_post``, ``m_source.l_linear``,
``f0_predictor``) so ``checkpoint.load_strict`` works unchanged. Code structure is our own.

Must not: sync with the host or branch on tensor values inside ``forward`` (later captured in CUDA graphs),
touch the global RNG except for the documented fresh draws of v1/v2, or mutate its own dtype. Works in
float32 and float16/bfloat16 weights: the f0 -> source path, the STFT and the iSTFT run in float32
(phase accumulation and exp() need it); v3's f0 predictor runs in float64 like the official one.
"""

from __future__ import annotations

import math

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.utils.parametrizations import weight_norm

from cosydesk.model.hift_f0 import CausalConvF0Predictor, ConvF0Predictor
from cosydesk.model.hift_source import (
    FixedSourceNoise,
    NsfDraws,
    carried_phase,
    frame_cycles,
    frame_rate_harmonics,
    harmonics_from_phase,
    merge_harmonics,
    sample_rate_harmonics,
)

__all__ = ["HiFTGenerator", "CausalHiFTGenerator", "NsfDraws", "build_hift"]


# ---------------------------------------------------------------------------------------------------------
# Building blocks
# ---------------------------------------------------------------------------------------------------------

class Snake(nn.Module):
    """x + sin^2(alpha x) / alpha, per channel (linear-scale alpha, as in the official vocoder)."""

    def __init__(self, channels: int):
        super().__init__()
        self.alpha = nn.Parameter(torch.ones(channels))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        alpha = self.alpha.view(1, -1, 1)
        return x + (1.0 / (alpha + 1e-9)) * torch.sin(x * alpha).pow(2)


class PastPaddedConv1d(nn.Conv1d):
    """Stride-1 conv that sees only the present and the past: (k-1)*dilation zeros on the left."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int, dilation: int = 1):
        super().__init__(in_channels, out_channels, kernel_size, dilation=dilation)
        self.left = (kernel_size - 1) * dilation

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return super().forward(F.pad(x, (self.left, 0)))


class LookAheadConv1d(nn.Conv1d):
    """Stride-1 conv whose window reaches k-1 frames into the future.

    finalize=True: the future past the end is zeros (output length = input length).
    finalize=False: the last k-1 input frames are real future context only (output is k-1 frames shorter).
    """

    def forward(self, x: torch.Tensor, finalize: bool = True) -> torch.Tensor:
        return super().forward(F.pad(x, (0, self.kernel_size[0] - 1)) if finalize else x)


class RepeatUpsampleConv1d(nn.Conv1d):
    """Upsample by repeating each frame ``stride`` times, then a past-only conv (official CausalConv1dUpsample)."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int, stride: int):
        super().__init__(in_channels, out_channels, kernel_size)
        self.factor = stride

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = torch.repeat_interleave(x, self.factor, dim=2)
        return super().forward(F.pad(x, (self.kernel_size[0] - 1, 0)))


class PastPaddedStridedConv1d(nn.Conv1d):
    """Strided downsampling conv with stride-1 zeros on the left (official CausalConv1dDownSample)."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int, stride: int):
        super().__init__(in_channels, out_channels, kernel_size, stride=stride)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return super().forward(F.pad(x, (self.stride[0] - 1, 0)))


class ResBlock(nn.Module):
    """Three (Snake, dilated conv, Snake, conv) residual units; causal or centred padding."""

    def __init__(self, channels: int, kernel_size: int, dilations: list[int], causal: bool):
        super().__init__()

        def conv(dilation: int) -> nn.Conv1d:
            if causal:
                return weight_norm(PastPaddedConv1d(channels, channels, kernel_size, dilation=dilation))
            pad = (kernel_size - 1) * dilation // 2
            return weight_norm(nn.Conv1d(channels, channels, kernel_size, dilation=dilation, padding=pad))

        self.convs1 = nn.ModuleList(conv(d) for d in dilations)
        self.convs2 = nn.ModuleList(conv(1) for _ in dilations)
        self.activations1 = nn.ModuleList(Snake(channels) for _ in dilations)
        self.activations2 = nn.ModuleList(Snake(channels) for _ in dilations)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for act1, conv1, act2, conv2 in zip(self.activations1, self.convs1, self.activations2, self.convs2):
            x = x + conv2(act2(conv1(act1(x))))
        return x


class _SourceMerge(nn.Module):
    """Holds the harmonic-merging Linear under the official name ``m_source.l_linear``."""

    def __init__(self, num_harmonics: int):
        super().__init__()
        self.l_linear = nn.Linear(num_harmonics, 1)


def _periodic_hann(n_fft: int) -> torch.Tensor:
    # Computed in float64 then rounded, like scipy's get_window("hann", n, fftbins=True) used officially.
    return torch.hann_window(n_fft, periodic=True, dtype=torch.float64).float()


def overlap_add_istft(spec: torch.Tensor, n_fft: int, hop: int, window: torch.Tensor,
                      frame_mask: torch.Tensor | None = None) -> torch.Tensor:
    """torch.istft(spec, n_fft, hop, n_fft, window, center=True) for spec [B, n_fft/2 + 1, F] -> [B, (F-1)*hop].

    Written with irfft + fold because torch.istft checks its window envelope with a host sync
    (not capturable in a CUDA graph). The Hann envelope is > 0 everywhere inside the kept span.
    ``frame_mask`` [F] (1 for the first valid frames, 0 after; their spectrum must be zero): the envelope counts
    only valid frames, so the samples of the valid frames are those of an istft of the valid frames alone
    (and the samples past them are 0).
    """
    frames = torch.fft.irfft(spec, n=n_fft, dim=1) * window.view(1, -1, 1)  # [B, n_fft, F]
    num_frames = frames.shape[2]
    full = n_fft + hop * (num_frames - 1)
    fold = dict(output_size=(1, full), kernel_size=(1, n_fft), stride=(1, hop))
    signal = F.fold(frames, **fold).flatten(1)
    weights = (window * window).view(1, -1, 1).expand(1, n_fft, num_frames)
    if frame_mask is not None:
        weights = weights * frame_mask.view(1, 1, -1)
    envelope = F.fold(weights, **fold).flatten(1)
    trim = n_fft // 2
    envelope = envelope[:, trim: full - trim]
    if frame_mask is not None:  # past the valid frames the envelope is 0 (and so is the signal): 0 out, not NaN
        envelope = envelope.clamp_min(1e-12)
    return signal[:, trim: full - trim] / envelope


def with_cached_start(source: torch.Tensor, cache_source: torch.Tensor | None) -> torch.Tensor:
    """``source`` [B, 1, L] with its first N samples replaced by ``cache_source`` [B, 1, N] (N <= L; official
    streaming: the tail of the previous call's source); unchanged for None or an empty cache."""
    if cache_source is None or cache_source.shape[2] == 0:
        return source
    keep = cache_source.shape[2]
    if keep > source.shape[2]:
        raise ValueError(f"cache_source has {keep} samples, longer than the {source.shape[2]} generated")
    return torch.cat([cache_source.to(source.dtype), source[:, :, keep:]], dim=2)


def _hift_kwargs(node) -> dict:
    """Constructor kwargs of either generator from the yaml ``hift`` Node (sizes come only from the yaml)."""
    args = node.args
    istft = args.get("istft_params", {"n_fft": 16, "hop_len": 4})
    return dict(
        in_channels=int(args.get("in_channels", 80)),
        base_channels=int(args.get("base_channels", 512)),
        nb_harmonics=int(args.get("nb_harmonics", 8)),
        sampling_rate=int(args["sampling_rate"]),
        nsf_alpha=float(args.get("nsf_alpha", 0.1)),
        nsf_sigma=float(args.get("nsf_sigma", 0.003)),
        nsf_voiced_threshold=float(args.get("nsf_voiced_threshold", 10)),
        upsample_rates=[int(v) for v in args["upsample_rates"]],
        upsample_kernel_sizes=[int(v) for v in args["upsample_kernel_sizes"]],
        n_fft=int(istft["n_fft"]),
        hop_len=int(istft["hop_len"]),
        resblock_kernel_sizes=[int(v) for v in args.get("resblock_kernel_sizes", [3, 7, 11])],
        resblock_dilation_sizes=[[int(d) for d in ds] for ds in args.get("resblock_dilation_sizes", [[1, 3, 5]] * 3)],
        source_resblock_kernel_sizes=[int(v) for v in args.get("source_resblock_kernel_sizes", [7, 11])],
        source_resblock_dilation_sizes=[
            [int(d) for d in ds] for ds in args.get("source_resblock_dilation_sizes", [[1, 3, 5]] * 2)
        ],
        lrelu_slope=float(args.get("lrelu_slope", 0.1)),
        audio_limit=float(args.get("audio_limit", 0.99)),
    )


# ---------------------------------------------------------------------------------------------------------
# Shared generator body
# ---------------------------------------------------------------------------------------------------------

class _HiFTBase(nn.Module):
    """Everything the two generators share: sizes, the source merge, STFT/iSTFT and the fused decoder loop."""

    causal = False

    def __init__(self, *, in_channels: int, base_channels: int, nb_harmonics: int, sampling_rate: int,
                 nsf_alpha: float, nsf_sigma: float, nsf_voiced_threshold: float, upsample_rates: list[int],
                 upsample_kernel_sizes: list[int], n_fft: int, hop_len: int, resblock_kernel_sizes: list[int],
                 resblock_dilation_sizes: list[list[int]], source_resblock_kernel_sizes: list[int],
                 source_resblock_dilation_sizes: list[list[int]], lrelu_slope: float, audio_limit: float,
                 f0_predictor: nn.Module):
        super().__init__()
        self.sampling_rate = sampling_rate
        self.num_harmonics = nb_harmonics + 1
        self.sine_amp = nsf_alpha
        self.noise_std = nsf_sigma
        self.voiced_threshold = nsf_voiced_threshold
        self.upsample_rates = list(upsample_rates)
        self.n_fft = n_fft
        self.hop_len = hop_len
        self.lrelu_slope = lrelu_slope
        self.audio_limit = audio_limit
        self.frames_to_stft = int(np.prod(upsample_rates))  # STFT frames per mel frame
        self.samples_per_frame = self.frames_to_stft * hop_len
        self.num_kernels = len(resblock_kernel_sizes)

        self.m_source = _SourceMerge(self.num_harmonics)
        self.conv_pre = weight_norm(self._make_conv_pre(in_channels, base_channels))
        self.ups = nn.ModuleList(
            weight_norm(self._make_up(base_channels >> i, base_channels >> (i + 1), k, u))
            for i, (u, k) in enumerate(zip(upsample_rates, upsample_kernel_sizes))
        )
        # Source STFT ([B, n_fft + 2, frames]) is brought to the time resolution of each upsampling stage.
        stft_channels = n_fft + 2
        down_factors = list(np.cumprod([1] + self.upsample_rates[::-1][:-1]))[::-1]
        self.source_downs = nn.ModuleList()
        self.source_resblocks = nn.ModuleList()
        source_blocks = zip(down_factors, source_resblock_kernel_sizes, source_resblock_dilation_sizes)
        for i, (factor, k, dilations) in enumerate(source_blocks):
            channels = base_channels >> (i + 1)
            self.source_downs.append(self._make_source_down(stft_channels, channels, int(factor)))
            self.source_resblocks.append(ResBlock(channels, k, dilations, causal=self.causal))
        self.resblocks = nn.ModuleList(
            ResBlock(base_channels >> (i + 1), k, dilations, causal=self.causal)
            for i in range(len(self.ups))
            for k, dilations in zip(resblock_kernel_sizes, resblock_dilation_sizes)
        )
        self.conv_post = weight_norm(self._make_conv_post(base_channels >> len(self.ups), stft_channels))
        self.f0_predictor = f0_predictor
        # Plain attribute (not a buffer): not in hift.pt; moved to the input's device at use.
        self.stft_window = _periodic_hann(n_fft)
        self._windows: dict[torch.device, torch.Tensor] = {}

    # --- layer factories (differ between the symmetric and the causal generator) ---
    def _make_conv_pre(self, cin: int, cout: int) -> nn.Conv1d:
        raise NotImplementedError

    def _make_up(self, cin: int, cout: int, kernel: int, rate: int) -> nn.Module:
        raise NotImplementedError

    def _make_source_down(self, cin: int, cout: int, factor: int) -> nn.Conv1d:
        raise NotImplementedError

    def _make_conv_post(self, cin: int, cout: int) -> nn.Conv1d:
        raise NotImplementedError

    # --- shared math ---
    def _upsample_f0(self, f0: torch.Tensor) -> torch.Tensor:
        """f0 per frame [B, T] -> per sample [B, T * samples_per_frame, 1] (nearest), float32."""
        return torch.repeat_interleave(f0.float(), self.samples_per_frame, dim=1).unsqueeze(-1)

    def _window(self, device: torch.device) -> torch.Tensor:
        # One copy per device, made on first use: a host-to-device copy inside a captured CUDA graph is illegal.
        cached = self._windows.get(device)
        if cached is None:
            cached = self._windows[device] = self.stft_window.to(device)
        return cached

    def _source_spectrum(self, source: torch.Tensor) -> torch.Tensor:
        """[B, 1, L] -> real and imaginary STFT parts stacked on channels: [B, n_fft + 2, L / hop + 1], float32."""
        spec = torch.stft(source.squeeze(1).float(), self.n_fft, self.hop_len, self.n_fft,
                          window=self._window(source.device), return_complex=True)
        spec = torch.view_as_real(spec)
        return torch.cat([spec[..., 0], spec[..., 1]], dim=1)

    def _spectrum_to_wave(self, head: torch.Tensor, frame_mask: torch.Tensor | None = None) -> torch.Tensor:
        """conv_post output [B, n_fft + 2, F] -> waveform [B, (F - 1) * hop] in float32. ``frame_mask`` [F]: only
        the first valid frames sound (``overlap_add_istft``)."""
        head = head.float()
        bins = self.n_fft // 2 + 1
        magnitude = torch.exp(head[:, :bins]).clamp(max=1e2)
        if frame_mask is not None:
            magnitude = magnitude * frame_mask
        phase = torch.sin(head[:, bins:])  # the official head takes sin() of the phase channels
        spec = torch.complex(magnitude * torch.cos(phase), magnitude * torch.sin(phase))
        return overlap_add_istft(spec, self.n_fft, self.hop_len, self._window(head.device), frame_mask)

    def _fused_upsampling(self, x: torch.Tensor, source_spec: torch.Tensor) -> torch.Tensor:
        """The upsampling stack with the source STFT added at every stage; returns the conv_post output."""
        source_spec = source_spec.to(x.dtype)
        last = len(self.ups) - 1
        for i, up in enumerate(self.ups):
            x = up(F.leaky_relu(x, self.lrelu_slope))
            if i == last:
                x = F.pad(x, (1, 0), mode="reflect")  # one extra frame so lengths match the STFT frames
            x = x + self.source_resblocks[i](self.source_downs[i](source_spec))
            group = self.resblocks[i * self.num_kernels:(i + 1) * self.num_kernels]
            total = group[0](x)
            for block in group[1:]:
                total = total + block(x)
            x = total / self.num_kernels
        return self.conv_post(F.leaky_relu(x))  # default slope 0.01 here, as officially


# ---------------------------------------------------------------------------------------------------------
# v1 / v2
# ---------------------------------------------------------------------------------------------------------

class HiFTGenerator(_HiFTBase):
    """v1 / v2 vocoder (official HiFTGenerator). 22050 Hz selects the sample-rate-phase source (v1)."""

    def __init__(self, f0_predictor: nn.Module | None = None, **kwargs):
        in_channels = kwargs.get("in_channels", 80)
        super().__init__(f0_predictor=f0_predictor or ConvF0Predictor(in_channels=in_channels), **kwargs)
        self.sample_rate_phase = self.sampling_rate == 22050

    def _make_conv_pre(self, cin, cout):
        return nn.Conv1d(cin, cout, 7, padding=3)

    def _make_up(self, cin, cout, kernel, rate):
        return nn.ConvTranspose1d(cin, cout, kernel, rate, padding=(kernel - rate) // 2)

    def _make_source_down(self, cin, cout, factor):
        if factor == 1:
            return nn.Conv1d(cin, cout, 1)
        return nn.Conv1d(cin, cout, factor * 2, factor, padding=factor // 2)

    def _make_conv_post(self, cin, cout):
        return nn.Conv1d(cin, cout, 7, padding=3)

    @classmethod
    def from_config(cls, node) -> "HiFTGenerator":
        predictor = ConvF0Predictor.from_config(node["f0_predictor"])
        return cls(f0_predictor=predictor, **_hift_kwargs(node))

    # --- randomness of the source ---
    def draw_shapes(self, num_frames: int, batch: int = 1) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """Shapes of (initial_phase, noise) for a mel of ``num_frames`` frames (official layouts)."""
        samples, h = num_frames * self.samples_per_frame, self.num_harmonics
        if self.sample_rate_phase:
            return (batch, h, 1), (batch, h, samples)
        return (batch, h), (batch, samples, h)

    def zero_draws(self, mel: torch.Tensor) -> NsfDraws:
        phase_shape, noise_shape = self.draw_shapes(mel.shape[2], mel.shape[0])
        zeros = lambda shape: torch.zeros(shape, device=mel.device)  # noqa: E731
        return NsfDraws(zeros(phase_shape), zeros(noise_shape))

    def random_draws(self, mel: torch.Tensor, generator: torch.Generator | None = None) -> NsfDraws:
        """Fresh draws in the official order and kinds (uniform phases, Gaussian noise, then the Gaussian
        of the discarded noise branch, drawn only so a seeded run consumes the RNG exactly as the official
        code does)."""
        device = generator.device if generator is not None else mel.device
        phase_shape, noise_shape = self.draw_shapes(mel.shape[2], mel.shape[0])
        phase = torch.rand(phase_shape, generator=generator, device=device)
        if self.sample_rate_phase:  # Uniform(-pi, pi): low + u * (high - low) in float32
            low = torch.tensor(-math.pi, dtype=torch.float32)
            phase = low.to(device) + phase * (torch.tensor(math.pi, dtype=torch.float32) - low).to(device)
        if self.sample_rate_phase:
            noise = torch.randn(noise_shape, generator=generator, device=device)
        else:
            # Officially randn_like() of a [B, L, H] view of a [B, H, L] buffer: the draws fill the buffer
            # in memory order (and a non-contiguous fill takes torch's element-wise sampling path).
            b, samples, h = noise_shape
            noise = torch.empty((b, h, samples), device=device).transpose(1, 2).normal_(generator=generator)
        samples = mel.shape[2] * self.samples_per_frame
        torch.randn((mel.shape[0], samples, 1), generator=generator, device=device)
        return NsfDraws(phase.to(mel.device), noise.to(mel.device))

    def redraw(self, draws: NsfDraws, generator: torch.Generator | None = None) -> None:
        """Fresh draws of the same kinds written into ``draws`` in place (for a captured graph's static draws):
        uniform phases (v1 radians in [-pi, pi), v2 cycles in [0, 1)), standard normal noise, from ``generator``
        (default: torch's global RNG). Not the official RNG order, which ``random_draws`` keeps for seeded eager runs."""
        if generator is not None and generator.device != draws.noise.device:  # e.g. a CPU generator, CUDA draws
            fresh = NsfDraws(torch.empty_like(draws.initial_phase, device=generator.device),
                             torch.empty_like(draws.noise, device=generator.device))
            self.redraw(fresh, generator)
            draws.initial_phase.copy_(fresh.initial_phase)
            draws.noise.copy_(fresh.noise)
            return
        if self.sample_rate_phase:
            draws.initial_phase.uniform_(-math.pi, math.pi, generator=generator)
        else:
            draws.initial_phase.uniform_(generator=generator)
        draws.noise.normal_(generator=generator)

    # --- math ---
    def predict_f0(self, mel: torch.Tensor) -> torch.Tensor:
        """f0 in Hz per mel frame [B, T] (float32, or float64 for a float64 mel)."""
        return self.f0_predictor(mel)

    def make_source(self, f0: torch.Tensor, draws: NsfDraws) -> torch.Tensor:
        """f0 [B, T] -> merged excitation [B, 1, T * samples_per_frame] (float32)."""
        per_sample = self._upsample_f0(f0)
        if self.sample_rate_phase:
            harmonics = sample_rate_harmonics(per_sample, draws, self.sampling_rate, self.num_harmonics,
                                              self.sine_amp, self.noise_std, self.voiced_threshold)
        else:
            harmonics = frame_rate_harmonics(per_sample, draws.initial_phase, draws.noise, self.sampling_rate,
                                             self.samples_per_frame, self.num_harmonics, self.sine_amp,
                                             self.noise_std, self.voiced_threshold, phase_upsample_mode="linear")
        return merge_harmonics(harmonics, self.m_source.l_linear)

    def decode(self, mel: torch.Tensor, source: torch.Tensor) -> torch.Tensor:
        """mel [B, 80, T] + source [B, 1, L] -> waveform [B, L] (float32)."""
        x = self.conv_pre(mel)
        head = self._fused_upsampling(x, self._source_spectrum(source))
        return self._spectrum_to_wave(head).clamp(-self.audio_limit, self.audio_limit)

    def forward(self, mel: torch.Tensor, draws: NsfDraws, cache_source: torch.Tensor | None = None
                ) -> tuple[torch.Tensor, torch.Tensor]:
        """(wave [B, L], source [B, 1, L]) in mel's dtype. ``cache_source`` [B, 1, N] (N <= L) replaces the
        first N source samples (official streaming: the tail of the previous call's source)."""
        source = with_cached_start(self.make_source(self.predict_f0(mel), draws), cache_source)
        wave = self.decode(mel, source)
        return wave.to(mel.dtype), source.to(mel.dtype)

    def _draws_for(self, mel, zero_noise, draws, generator) -> NsfDraws:
        if draws is not None:
            return draws
        return self.zero_draws(mel) if zero_noise else self.random_draws(mel, generator)

    @torch.inference_mode()
    def inference_with_source(self, mel: torch.Tensor, cache_source: torch.Tensor | None = None,
                              zero_noise: bool = False, *, draws: NsfDraws | None = None,
                              generator: torch.Generator | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """Vocode with the source returned too (for streaming). Randomness: ``draws`` if given (replay),
        else zeros if ``zero_noise``, else fresh draws from ``generator`` (default: torch's global RNG)."""
        return self(mel, self._draws_for(mel, zero_noise, draws, generator), cache_source)

    @torch.inference_mode()
    def inference(self, mel: torch.Tensor, zero_noise: bool = False, *, draws: NsfDraws | None = None,
                  generator: torch.Generator | None = None) -> torch.Tensor:
        """mel [B, 80, T] -> waveform [B, T * samples_per_frame]."""
        return self.inference_with_source(mel, None, zero_noise, draws=draws, generator=generator)[0]


# ---------------------------------------------------------------------------------------------------------
# v3
# ---------------------------------------------------------------------------------------------------------

class CausalHiFTGenerator(_HiFTBase):
    """v3 vocoder (official CausalHiFTGenerator); deterministic, streaming-friendly.

    With ``finalize=False`` the input's last frames are context only: the f0 predictor uses 3 and conv_pre
    4 of them, so T frames give (T - 7) * samples_per_frame - samples_per_frame samples, which equal the
    first samples of the finalize=True output.
    """

    causal = True

    def __init__(self, f0_predictor: nn.Module | None = None, conv_pre_look_right: int = 4, **kwargs):
        self.conv_pre_look_right = conv_pre_look_right
        in_channels = kwargs.get("in_channels", 80)
        predictor = f0_predictor or CausalConvF0Predictor(in_channels=in_channels)
        super().__init__(f0_predictor=predictor, **kwargs)
        cond_channels = predictor.classifier.in_features
        self.fixed_noise = FixedSourceNoise(cond_channels, self.num_harmonics)

    def _make_conv_pre(self, cin, cout):
        return LookAheadConv1d(cin, cout, self.conv_pre_look_right + 1)

    def _make_up(self, cin, cout, kernel, rate):
        return RepeatUpsampleConv1d(cin, cout, kernel, rate)

    def _make_source_down(self, cin, cout, factor):
        return PastPaddedConv1d(cin, cout, 1) if factor == 1 else PastPaddedStridedConv1d(cin, cout, factor * 2, factor)

    def _make_conv_post(self, cin, cout):
        return PastPaddedConv1d(cin, cout, 7)

    @classmethod
    def from_config(cls, node) -> "CausalHiFTGenerator":
        predictor = CausalConvF0Predictor.from_config(node["f0_predictor"])
        return cls(f0_predictor=predictor, conv_pre_look_right=int(node.args.get("conv_pre_look_right", 4)),
                   **_hift_kwargs(node))

    def set_fixed_noise(self, rand_ini: torch.Tensor, sine_waves: torch.Tensor) -> None:
        """Use these tensors instead of the regenerated ones (official layout [1, 9] and [1, L, 9])."""
        self.fixed_noise.replace(rand_ini, sine_waves)

    def predict_f0(self, mel: torch.Tensor, finalize: bool = True) -> torch.Tensor:
        """f0 [B, T] (finalize) or [B, T - 3], computed and returned in float64 as the official code does."""
        return self.f0_predictor(mel, finalize=finalize, dtype=torch.float64)

    def make_source(self, f0: torch.Tensor) -> torch.Tensor:
        """f0 [B, T] -> merged excitation [B, 1, T * samples_per_frame] (float32)."""
        per_sample = self._upsample_f0(f0)
        rand_ini, noise = self.fixed_noise.get(per_sample.shape[1], per_sample.device)
        harmonics = frame_rate_harmonics(per_sample, rand_ini, noise, self.sampling_rate, self.samples_per_frame,
                                         self.num_harmonics, self.sine_amp, self.noise_std,
                                         self.voiced_threshold, phase_upsample_mode="nearest")
        return merge_harmonics(harmonics, self.m_source.l_linear)

    def decode(self, mel: torch.Tensor, source: torch.Tensor, finalize: bool = True) -> torch.Tensor:
        """mel [B, 80, T] (T includes 4 context frames unless finalize) + source -> waveform (float32)."""
        spectrum = self._source_spectrum(source)
        x = self.conv_pre(mel, finalize=finalize)
        if not finalize:
            spectrum = spectrum[:, :, : spectrum.shape[2] - self.frames_to_stft * self.conv_pre_look_right]
        wave = self._spectrum_to_wave(self._fused_upsampling(x, spectrum))
        if not finalize:
            wave = wave[:, : wave.shape[1] - self.frames_to_stft * self.hop_len]
        return wave.clamp(-self.audio_limit, self.audio_limit)

    def forward(self, mel: torch.Tensor, finalize: bool = True) -> tuple[torch.Tensor, torch.Tensor]:
        """(wave [B, L], source [B, 1, L_source]) in mel's dtype."""
        f0 = self.predict_f0(mel, finalize)
        # The official code rounds f0 to the mel's dtype here; we keep at least float32 for the source.
        f0 = f0.to(mel.dtype if mel.dtype == torch.float64 else torch.float32)
        source = self.make_source(f0)
        if not finalize:
            mel = mel[:, :, : mel.shape[2] - self.f0_predictor.look_ahead]
        wave = self.decode(mel, source, finalize)
        return wave.to(mel.dtype), source.to(mel.dtype)

    # --- windowed evaluation (bounded-work streaming, see hift_stream.CausalHiFTStream) ---
    def window_forward(self, mel: torch.Tensor, finalize: bool, first_frame: int, phase_in: torch.Tensor,
                       phase_valid_from: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Vocode a window of an utterance's mel as if the whole utterance had been vocoded.

        mel: frames [first_frame, first_frame + W) of the utterance (the window ends where the utterance
        currently ends; same ``finalize`` meaning as ``forward``). The harmonic phase is a running sum from
        sample 0 and the noise is read at absolute sample positions, so the caller passes the running phase
        ``phase_in`` [B, H] (float64 cycles) of every frame before window frame ``phase_valid_from``; the
        window's own increments before that frame (which lack left context) are ignored.
        Returns (wave [B, samples] for absolute samples from first_frame * samples_per_frame; only those
        beyond ``stream_left_context_frames()`` after phase_valid_from are exact, and
        running phase [B, H, F] float64 in cycles of window frames [0, F), exact from phase_valid_from on).
        """
        f0 = self.predict_f0(mel, finalize)
        f0 = f0.to(mel.dtype if mel.dtype == torch.float64 else torch.float32)
        per_sample = self._upsample_f0(f0)
        rand_ini, noise = self.fixed_noise.get(per_sample.shape[1], per_sample.device,
                                               start=first_frame * self.samples_per_frame)
        if first_frame > 0:  # the official initial offset sits on absolute sample 0 only
            rand_ini = torch.zeros_like(rand_ini)
        per_frame = frame_cycles(per_sample, rand_ini, self.sampling_rate, self.samples_per_frame,
                                 self.num_harmonics)
        phase = carried_phase(per_frame, phase_in, phase_valid_from)
        harmonics = harmonics_from_phase(per_sample, phase, noise, self.samples_per_frame, self.sine_amp,
                                         self.noise_std, self.voiced_threshold, phase_upsample_mode="nearest")
        source = merge_harmonics(harmonics, self.m_source.l_linear)
        if not finalize:
            mel = mel[:, :, : mel.shape[2] - self.f0_predictor.look_ahead]
        wave = self.decode(mel, source, finalize)
        return wave.to(mel.dtype), phase

    @torch.inference_mode()
    def inference_window(self, mel: torch.Tensor, finalize: bool, first_frame: int, phase_in: torch.Tensor,
                         phase_valid_from: int) -> tuple[torch.Tensor, torch.Tensor]:
        return self.window_forward(mel, finalize, first_frame, phase_in, phase_valid_from)

    def stream_left_context_frames(self) -> int:
        """Upper bound on how many mel frames before an output sample's own frame the decoder can see
        (f0 -> source -> source STFT -> every stage's convs and resblocks -> conv_post -> iSTFT), not
        counting the f0 predictor's own left context (``f0_predictor.left_context``).

        Derived from the layer sizes, so it holds for the tiny and the full-size vocoder alike; paths that
        run in parallel are added as if serial (a safe over-estimate of a few frames).
        """
        def conv_reach(conv: nn.Conv1d) -> int:
            return (conv.kernel_size[0] - 1) * conv.dilation[0]

        def block_reach(block: ResBlock) -> int:
            return sum(conv_reach(c1) + conv_reach(c2) for c1, c2 in zip(block.convs1, block.convs2))

        stft_frames = -(-self.n_fft // self.hop_len) + conv_reach(self.conv_post) + 1  # iSTFT, conv_post, pad
        for i, up in enumerate(self.ups):
            step = int(np.prod(self.upsample_rates[i + 1:]))  # STFT frames per step of stage i
            group = self.resblocks[i * self.num_kernels:(i + 1) * self.num_kernels]
            stage = max(block_reach(b) for b in group) + block_reach(self.source_resblocks[i])
            stage += up.kernel_size[0] + 1
            stft_frames += step * stage + self.source_downs[i].kernel_size[0]
        samples = stft_frames * self.hop_len + self.n_fft  # + the source STFT's own window
        return -(-samples // self.samples_per_frame) + 1

    @torch.inference_mode()
    def inference_with_source(self, mel: torch.Tensor, finalize: bool = True) -> tuple[torch.Tensor, torch.Tensor]:
        return self(mel, finalize)

    @torch.inference_mode()
    def inference(self, mel: torch.Tensor, finalize: bool = True) -> torch.Tensor:
        return self(mel, finalize)[0]


def build_hift(node) -> nn.Module:
    """Build the vocoder the yaml ``hift`` Node describes (class chosen by its class name)."""
    builders = {"HiFTGenerator": HiFTGenerator, "CausalHiFTGenerator": CausalHiFTGenerator}
    if node.class_name not in builders:
        raise ValueError(f"unsupported vocoder class {node.target!r}")
    return builders[node.class_name].from_config(node)
