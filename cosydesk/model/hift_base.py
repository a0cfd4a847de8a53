"""The body both HiFT generators share: sizes from the yaml, the source merge, the source STFT, the fused
upsampling/decoder loop and the iSTFT head. The generators (``hift_generator`` for v1/v2, ``hift_causal`` for v3)
choose their layers through the ``_make_*`` factories and add their own source and inference entry points.

Sub-module attribute names are those of the official ``hift.pt`` keys (see ``cosydesk.model.hift``).
Must not: sync with the host or branch on tensor values (``forward`` is captured in CUDA graphs), or mutate
its own dtype; the STFT and the iSTFT run in float32.
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.utils.parametrizations import weight_norm

from cosydesk.model.hift_istft import overlap_add_istft, periodic_hann
from cosydesk.model.hift_layers import ResBlock

__all__ = ["HiFTBase", "SourceMerge", "hift_kwargs"]


class SourceMerge(nn.Module):
    """Holds the harmonic-merging Linear under the official name ``m_source.l_linear``."""

    def __init__(self, num_harmonics: int):
        super().__init__()
        self.l_linear = nn.Linear(num_harmonics, 1)


def hift_kwargs(node) -> dict:
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



class HiFTBase(nn.Module):
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

        self.m_source = SourceMerge(self.num_harmonics)
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
        self.stft_window = periodic_hann(n_fft)
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
